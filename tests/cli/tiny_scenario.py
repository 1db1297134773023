"""The small scenario the `simulate` command tests run (and edit): one node group of 2-cpu nodes
starting at two, a Deployment of 500m pods scaled from 3 to 12 at 5m, which needs one node more."""

TINY_SCENARIO = """\
apiVersion: kubetide.io/v1alpha1
kind: Scenario
metadata: {name: tiny}
spec:
  duration: 20m
  seed: 4
  autoscaler: {scan-interval: 10s}
  nodeGroups:
    - name: general
      maxSize: 5
      initialSize: 2
      price: 0.5
      template: {status: {allocatable: {cpu: "2", memory: 8Gi}}}
  objects:
    - apiVersion: apps/v1
      kind: Deployment
      metadata: {name: web}
      spec:
        replicas: 3
        selector: {matchLabels: {app: web}}
        template:
          metadata: {labels: {app: web}}
          spec: {containers: [{name: c, resources: {requests: {cpu: 500m}}}]}
  events:
    - at: 5m
      scale: {kind: Deployment, name: web, replicas: 12}
"""
