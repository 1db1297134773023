"""Regenerate the committed protobuf modules from the .proto files beside them.

    python -m kubetide.grpcexpander.generate

The generated modules are committed rather than built at install time: installing kubetide then
needs only the protobuf runtime, not grpcio-tools and its compiler, and a reader sees the code
that runs. tests/autoscaler/scaleup/test_grpc_expander.py regenerates them into a temporary
directory and checks that the bytes are the committed ones, so the two cannot drift apart.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROTOS = ("expander.proto", "k8s_subset.proto")


def generated_names(proto: str) -> tuple[str, str]:
    stem = proto.removesuffix(".proto")
    return f"{stem}_pb2.py", f"{stem}_pb2.pyi"


def generate(out: Path) -> None:
    """Write each proto's `_pb2.py` (messages) and `_pb2.pyi` (their types) into `out`."""
    from grpc_tools import protoc  # type: ignore[import-untyped]  # grpcio-tools ships no types

    for proto in PROTOS:
        args = ["protoc", f"-I{HERE}", f"--python_out={out}", f"--pyi_out={out}", str(HERE / proto)]
        if protoc.main(args) != 0:
            raise RuntimeError(f"protoc failed on {proto}")


def main() -> int:
    generate(HERE)
    for proto in PROTOS:
        print(" ".join(generated_names(proto)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
