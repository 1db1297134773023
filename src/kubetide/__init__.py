"""kubetide: a Kubernetes cluster autoscaler and disruption manager with an embedded simulator."""

__version__ = "0.1.0"
# The apiVersion of kubetide's own documents: Scenario and every `--json` output.
API_VERSION = "kubetide.io/v1alpha1"
