"""Cluster Autoscaler's gRPC expander (`--expander=grpc`): the adapter that asks an external
service which expansion option to take.

- `expander.proto`: CA's protocol (package grpcplugin, service Expander, rpc BestOptions), and
  `k8s_subset.proto`: the Node and Pod fields sent, in Kubernetes' own protobuf encoding. Their
  Python modules are generated and committed (`generate.py` says why and how).
- `encode.py`: model Node / Pod -> those bytes.
- `client.py`: `GrpcExpanderClient`, the scale-up's ExpanderService port over a TLS channel.

`expander_service(options)` builds the client the flags ask for, or None. grpc is imported only
then, so the rest of kubetide runs without the `grpc` extra installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubetide.errors import UserError

if TYPE_CHECKING:
    from kubetide.autoscaler.options import AutoscalerOptions
    from kubetide.autoscaler.scaleup.expanders import ExpanderService


def expander_service(options: AutoscalerOptions) -> ExpanderService | None:
    """The grpc expander's client when the expander chain names grpc, else None. Raises
    UserError (one line, exit 2) for a missing URL or certificate, an unreadable or non-PEM
    certificate, or a missing grpc extra."""
    if "grpc" not in options.expander:
        return None
    if not options.grpc_expander_url:
        raise UserError("--expander=grpc needs --grpc-expander-url (the expander service's host:port)")
    if not options.grpc_expander_cert:
        # As in CA, which refuses to start: "insecure connections not allowed".
        raise UserError(
            "--expander=grpc needs --grpc-expander-cert (the PEM certificate the service's TLS "
            "certificate is checked against): insecure connections are not allowed"
        )
    try:
        from kubetide.grpcexpander.client import GrpcExpanderClient
    except ImportError as exc:
        raise UserError(
            f"--expander=grpc needs the grpc extra: pip install 'kubetide[grpc]' ({exc})"
        ) from None
    return GrpcExpanderClient.from_files(options.grpc_expander_url, options.grpc_expander_cert)
