"""Why scale-up passes a whole node group over: a typed reason (the Cluster Autoscaler's wording
where it has one), and the skip the plan records per group."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class SkipReason(enum.StrEnum):
    """Why a whole group is passed over (the Cluster Autoscaler's wording where it has one). A
    str, so that pods refused for the same reason carry the same words."""

    BACKED_OFF = "in backoff after failed scale-up"
    NOT_READY = "not ready for scale-up"
    # kubetide's own: the registry design's UC3 ("do not expand this node pool"); the detail
    # names the nodes.
    NEVER_READY = "holding nodes that never became Ready"
    MAX_SIZE = "max node group size reached"
    MAX_TOTAL_NODES = "max total nodes in cluster reached"
    MAX_CPU = "max cluster cpu limit reached"
    MAX_MEMORY = "max cluster memory limit reached"
    MAX_PER_SCALEUP = "max nodes per scale-up reached"
    BINPACKING_TIME = "max binpacking time reached before this group was estimated"
    # The provider's answers (ports.NodeGroup): no template, or a typed ProviderError.
    NO_TEMPLATE = "no template node"
    TEMPLATE_ERROR = "template node unavailable"
    PRICE_ERROR = "node price unavailable"


# The name the status document and the Event give each provider answer that passes a group over
# (kubetide's own: the Cluster Autoscaler only logs these and goes on).
PROVIDER_SKIP_NAMES = {
    SkipReason.NO_TEMPLATE: "NoTemplateNode",
    SkipReason.TEMPLATE_ERROR: "FailedToGetTemplateNode",
    SkipReason.PRICE_ERROR: "FailedToGetNodePrice",
}


@dataclass(frozen=True, slots=True)
class GroupSkip:
    reason: SkipReason
    detail: str = ""  # e.g. the provider's error message, or the never-Ready nodes
    error_code: str = ""  # a provider error's code (ports.ProviderErrorCode), CA's error type

    def __str__(self) -> str:
        return f"{self.reason}: {self.detail}" if self.detail else str(self.reason)

    @property
    def provider_name(self) -> str | None:
        """The status's and the Event's name for a skip the provider's answer caused, else None."""
        return PROVIDER_SKIP_NAMES.get(self.reason)
