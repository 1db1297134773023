"""The grpc expander's client: Cluster Autoscaler's BestOptions call over a TLS channel.

What CA's client (expander/grpcplugin/grpc_client.go) does, and so what this does: the request
carries every option (node group id, node count, a debug line, the pods as protobuf bytes) and
each option's template node keyed by node group id; the call has a 5 s deadline and accepts
answers up to 128 MiB; the answer names the options the service prefers. Failures are reported
as ExpanderServiceError, and the expander chain then keeps every option (expanders.py: grpc).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import grpc

from kubetide.autoscaler.scaleup.expanders import ExpanderServiceError, ExpansionOption
from kubetide.errors import UserError
from kubetide.grpcexpander import expander_pb2 as pb
from kubetide.grpcexpander.encode import node_bytes, pod_bytes

BEST_OPTIONS = "/grpcplugin.Expander/BestOptions"
TIMEOUT_SECONDS = 5.0  # CA's gRPCTimeout
MAX_RECEIVE_BYTES = 128 << 20  # CA's gRPCMaxRecvMsgSize


def best_options_request(options: Sequence[ExpansionOption]) -> pb.BestOptionsRequest:
    return pb.BestOptionsRequest(
        options=[
            pb.Option(
                nodeGroupId=o.group_id,
                nodeCount=o.node_count,
                debug=f"{o.group_id}: {o.node_count} node(s) for {len(o.pods)} pod(s)",
                podBytes=[pod_bytes(p) for p in o.pods],
            )
            for o in options
        ],
        nodeBytesMap={o.group_id: node_bytes(o.template) for o in options},
    )


class GrpcExpanderClient:
    """The ExpanderService port (autoscaler/scaleup/expanders.py) over gRPC."""

    def __init__(self, url: str, root_certificates: bytes, *, timeout: float = TIMEOUT_SECONDS):
        self.url = url
        self.timeout = timeout
        credentials = grpc.ssl_channel_credentials(root_certificates=root_certificates)
        self._channel = grpc.secure_channel(
            url, credentials, options=[("grpc.max_receive_message_length", MAX_RECEIVE_BYTES)]
        )
        self._best_options = self._channel.unary_unary(
            BEST_OPTIONS,
            request_serializer=pb.BestOptionsRequest.SerializeToString,
            response_deserializer=pb.BestOptionsResponse.FromString,
        )

    @classmethod
    def from_files(cls, url: str, cert_path: str) -> GrpcExpanderClient:
        """A client trusting the PEM certificate(s) in `cert_path` (--grpc-expander-cert)."""
        try:
            pem = Path(cert_path).read_bytes()
        except OSError as exc:
            raise UserError(f"--grpc-expander-cert {cert_path}: {exc.strerror or exc}") from None
        if b"-----BEGIN CERTIFICATE-----" not in pem:
            raise UserError(f"--grpc-expander-cert {cert_path}: not a PEM certificate")
        return cls(url, pem)

    def best_options(self, options: Sequence[ExpansionOption]) -> list[str]:
        try:
            response = self._best_options(best_options_request(options), timeout=self.timeout)
        except grpc.RpcError as exc:
            # grpc's call errors are also grpc.Call objects, with the status and its details.
            code = exc.code() if isinstance(exc, grpc.Call) else None
            details = exc.details() if isinstance(exc, grpc.Call) else str(exc)
            name = code.name if code is not None else "error"
            raise ExpanderServiceError(f"BestOptions on {self.url}: {name}: {details}") from None
        return [option.nodeGroupId for option in response.options]

    def close(self) -> None:
        self._channel.close()
