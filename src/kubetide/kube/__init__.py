"""The Kubernetes adapter: the autoscaler's ports (ClusterView, ClusterActions) over a real API
server, with informer-style caches that keep one ClusterSnapshot current from watch events.

Everything here does I/O; decision code never imports it (the import contracts enforce that).
"""
