"""kubetide: a Kubernetes cluster autoscaler and disruption manager with an embedded simulator."""

__version__ = "0.1.0"
