"""The grpc expander (issue 28 item 8) against a real gRPC server on loopback, over TLS with a
certificate made for the test: what the request carries, how the answer is used, and CA's
fallbacks (a failed, late or useless answer keeps every option for the next expander; an empty
answer chooses nothing)."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
from _scaleup_helpers import GIB, FakeGroup, node, pod
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.options import AutoscalerOptions, parse_options
from kubetide.autoscaler.scaleup.orchestrator import ScaleUp
from kubetide.clock import WorkTimer
from kubetide.errors import UserError
from kubetide.grpcexpander import expander_pb2 as pb
from kubetide.grpcexpander import expander_service
from kubetide.grpcexpander import k8s_subset_pb2 as k8s
from kubetide.grpcexpander.client import GrpcExpanderClient
from kubetide.grpcexpander.generate import PROTOS, generate, generated_names
from kubetide.model.node import ZONE_LABEL
from kubetide.snapshot import ClusterSnapshot

Answer = Callable[[pb.BestOptionsRequest, grpc.ServicerContext], pb.BestOptionsResponse]


# -- a certificate and an expander server ------------------------------------------------------
def self_signed(common_name: str = "localhost") -> tuple[bytes, bytes]:
    """(certificate PEM, private key PEM) for localhost and 127.0.0.1."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


@dataclass
class ExpanderServer:
    """A BestOptions service whose answer each test sets; it keeps the requests it got."""

    url: str
    cert_path: Path
    answer: Answer | None = None
    requests: list[pb.BestOptionsRequest] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def best_options(self, request, context):
        self.requests.append(request)
        assert self.answer is not None, "the test sets an answer"
        return self.answer(request, context)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> tuple[Path, bytes, bytes]:
    cert, key = self_signed()
    path = tmp_path_factory.mktemp("tls") / "expander.pem"
    path.write_bytes(cert)
    return path, cert, key


@pytest.fixture
def server(certificate) -> Iterator[ExpanderServer]:
    cert_path, cert, key = certificate
    grpc_server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    port = grpc_server.add_secure_port("localhost:0", grpc.ssl_server_credentials([(key, cert)]))
    state = ExpanderServer(f"localhost:{port}", cert_path)
    handler = grpc.unary_unary_rpc_method_handler(
        state.best_options,
        request_deserializer=pb.BestOptionsRequest.FromString,
        response_serializer=pb.BestOptionsResponse.SerializeToString,
    )
    grpc_server.add_generic_rpc_handlers(
        [grpc.method_handlers_generic_handler("grpcplugin.Expander", {"BestOptions": handler})]
    )
    grpc_server.start()
    yield state
    state.release.set()
    grpc_server.stop(grace=None)


# -- a scale-up with three possible groups ---------------------------------------------------------
def group(gid: str, cpu: int) -> FakeGroup:
    labels = {ZONE_LABEL: "a", "kubetide.io/node-group": gid}
    return FakeGroup(gid, node(f"{gid}-template", cpu=cpu, mem=64 * GIB, labels=labels))


GROUPS = [group("small", 2000), group("medium", 4000), group("large", 8000)]
PENDING = [pod(f"web-{i}", cpu=1500, mem=GIB, owner="web") for i in range(4)]


def plan_with(client, chain: str = "grpc"):
    options = AutoscalerOptions().with_values(expander=tuple(chain.split(",")))
    inputs = LoopInputs(1000.0, ClusterSnapshot([node("n1", cpu=10)]), pending=PENDING)
    scale_up = ScaleUp(options, timer=WorkTimer(1e-3), seed=1, expander_service=client)
    return scale_up.plan(inputs, node_groups=GROUPS)


def chosen(result) -> str | None:
    return result.chosen.group_id if result.chosen is not None else None


def answer_with(*group_ids: str) -> Answer:
    def answer(request, context):
        return pb.BestOptionsResponse(options=[pb.Option(nodeGroupId=g) for g in group_ids])

    return answer


# -- tests -------------------------------------------------------------------------------------------
def test_the_request_carries_the_options_their_pods_and_template_nodes(server):
    server.answer = answer_with("medium")
    client = GrpcExpanderClient.from_files(server.url, str(server.cert_path))
    result = plan_with(client)
    client.close()
    assert chosen(result) == "medium" and [(i.group_id, i.delta) for i in result.increases] == [("medium", 2)]

    (request,) = server.requests
    by_id = {o.nodeGroupId: o for o in request.options}
    # One node of 2 cores holds one 1.5-core pod; 4 cores hold two; 8 cores hold four.
    assert {g: o.nodeCount for g, o in by_id.items()} == {"small": 4, "medium": 2, "large": 1}
    assert set(request.nodeBytesMap) == {"small", "medium", "large"}
    assert not request.nodeMap and not any(o.pod for o in request.options)  # CA 1.35+: bytes only

    template = k8s.Node.FromString(request.nodeBytesMap["large"])
    assert template.metadata.name.startswith("template-node-for-large")  # as CA names templates
    assert template.metadata.labels["kubetide.io/node-group"] == "large"
    assert template.status.allocatable["cpu"].string == "8"
    assert template.status.allocatable["memory"].string == "64Gi"
    pods = [k8s.Pod.FromString(raw) for raw in by_id["small"].podBytes]
    assert sorted(p.metadata.name for p in pods) == [f"web-{i}" for i in range(4)]
    assert all(p.metadata.namespace == "default" and p.status.phase == "Pending" for p in pods)


def refuse(request, context):
    context.abort(grpc.StatusCode.UNAVAILABLE, "expander overloaded")


def malformed(request, context):
    raise RuntimeError("bug in the expander")


@pytest.mark.parametrize(
    ("answer", "chain", "expected", "trace"),
    [
        # The service's choice wins; unknown ids in the answer are ignored.
        (answer_with("large"), "grpc", "large", None),
        (answer_with("gpu-pool", "small"), "grpc", "small", "not among the options: gpu-pool"),
        # Several named: the next expander chooses among them.
        (answer_with("small", "large"), "grpc,least-nodes", "large", None),
        # CA's fallbacks: every option goes on to the next expander.
        (refuse, "grpc,least-nodes", "large", "UNAVAILABLE: expander overloaded"),
        (malformed, "grpc,least-nodes", "large", "UNKNOWN"),
        (answer_with("gpu-pool"), "grpc,least-nodes", "large", "no known node group"),
        # An empty answer: the service chose none, so nothing is scaled up (as in CA).
        (answer_with(), "grpc,least-nodes", None, "chose no option"),
    ],
    ids=["one", "unknown-ignored", "then-least-nodes", "error", "server-bug", "only-unknown", "empty"],
)
def test_the_answer_and_cas_fallbacks(server, answer, chain, expected, trace):
    server.answer = answer
    client = GrpcExpanderClient.from_files(server.url, str(server.cert_path))
    result = plan_with(client, chain)
    client.close()
    assert len(server.requests) == 1
    assert chosen(result) == expected
    assert (result.increases == []) == (expected is None)
    if trace is not None:
        assert any(trace in line for line in result.trace), result.trace


def test_a_late_answer_times_out_and_falls_back(server):
    def stall(request, context):
        server.release.wait(30)  # released when the test's server stops
        return pb.BestOptionsResponse()

    server.answer = stall
    client = GrpcExpanderClient(server.url, server.cert_path.read_bytes(), timeout=0.2)
    result = plan_with(client, "grpc,least-nodes")
    client.close()
    assert chosen(result) == "large"
    assert any("DEADLINE_EXCEEDED" in line for line in result.trace), result.trace


def test_a_server_that_is_not_there_falls_back(certificate):
    cert_path, _, _ = certificate
    with socket.socket() as probe:  # a port nobody listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = GrpcExpanderClient.from_files(f"127.0.0.1:{port}", str(cert_path))
    result = plan_with(client, "grpc,least-nodes")
    client.close()
    assert chosen(result) == "large"
    assert any("UNAVAILABLE" in line for line in result.trace), result.trace


def test_tls_checks_the_server_against_the_given_certificate(server, tmp_path):
    server.answer = answer_with("small")
    other, _ = self_signed("someone-else")
    (tmp_path / "other.pem").write_bytes(other)
    untrusting = GrpcExpanderClient.from_files(server.url, str(tmp_path / "other.pem"))
    result = plan_with(untrusting, "grpc,least-nodes")
    untrusting.close()
    assert server.requests == [] and chosen(result) == "large"  # the handshake failed: fallback
    trusting = GrpcExpanderClient.from_files(server.url, str(server.cert_path))
    assert chosen(plan_with(trusting, "grpc,least-nodes")) == "small"
    trusting.close()


# -- configuration ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"expander": "grpc"}, "needs --grpc-expander-url"),
        ({"expander": "grpc", "grpc-expander-url": "localhost:1"}, "insecure connections are not allowed"),
        (
            {
                "expander": "grpc",
                "grpc-expander-url": "localhost:1",
                "grpc-expander-cert": "/nonexistent.pem",
            },
            "--grpc-expander-cert /nonexistent.pem: No such file or directory",
        ),
        (
            {"expander": "priority,grpc", "grpc-expander-url": "localhost:1", "grpc-expander-cert": "NOTPEM"},
            "not a PEM",
        ),
    ],
    ids=["no-url", "no-cert", "missing-cert-file", "not-pem"],
)
def test_bad_configuration_is_one_clear_error(flags, message, tmp_path):
    if flags.get("grpc-expander-cert") == "NOTPEM":
        (tmp_path / "key.txt").write_text("not a certificate\n")
        flags = {**flags, "grpc-expander-cert": str(tmp_path / "key.txt")}
    with pytest.raises(UserError) as error:
        expander_service(parse_options(flags, "s.yaml"))
    assert message in str(error.value) and "\n" not in str(error.value)


def test_no_client_unless_the_chain_names_grpc():
    assert expander_service(parse_options({"grpc-expander-url": "localhost:1"}, "s.yaml")) is None


def test_the_flags_keep_cas_names_and_empty_defaults():
    options = AutoscalerOptions()
    assert (options.grpc_expander_url, options.grpc_expander_cert) == ("", "")
    parsed = parse_options(
        {"grpc-expander-url": "dns:///expander:7000", "grpc-expander-cert": "/etc/ca.pem"}, "s"
    )
    assert (parsed.grpc_expander_url, parsed.grpc_expander_cert) == ("dns:///expander:7000", "/etc/ca.pem")


# -- the generated modules ---------------------------------------------------------------------------
def test_the_committed_protobuf_modules_are_what_the_protos_generate():
    package = Path(generate.__code__.co_filename).parent
    with tempfile.TemporaryDirectory() as out:
        generate(Path(out))
        for proto in PROTOS:
            for name in generated_names(proto):
                fresh = (Path(out) / name).read_bytes()
                assert fresh == (package / name).read_bytes(), (
                    f"{name} differs from what {proto} generates: run python -m kubetide.grpcexpander.generate"
                )


def test_the_protocol_has_cas_names_and_numbers():
    service = pb.DESCRIPTOR.services_by_name["Expander"]
    assert pb.DESCRIPTOR.package == "grpcplugin" and service.full_name == "grpcplugin.Expander"
    method = service.methods_by_name["BestOptions"]
    assert (method.input_type.full_name, method.output_type.full_name) == (
        "grpcplugin.BestOptionsRequest",
        "grpcplugin.BestOptionsResponse",
    )

    def numbers(message):
        return {f.name: f.number for f in message.fields}

    assert numbers(pb.BestOptionsRequest.DESCRIPTOR) == {"options": 1, "nodeMap": 2, "nodeBytesMap": 3}
    assert numbers(pb.BestOptionsResponse.DESCRIPTOR) == {"options": 1}
    assert numbers(pb.Option.DESCRIPTOR) == {
        "nodeGroupId": 1,
        "nodeCount": 2,
        "debug": 3,
        "pod": 4,
        "podBytes": 5,
    }


# -- the simulator asks the service too ---------------------------------------------------------------
def test_a_simulation_with_the_grpc_expander_grows_the_group_the_service_names(server):
    """examples/unready/uc3-never-ready.yaml's price expander would grow "cheap"; a service that
    always names "stable" makes the simulated autoscaler grow only stable."""
    import dataclasses

    from kubetide.sim import Simulation, load_scenario

    server.answer = answer_with("stable")
    scenario = load_scenario(Path(__file__).resolve().parents[3] / "examples/unready/uc3-never-ready.yaml")
    options = scenario.options.with_values(
        expander=("grpc",), grpc_expander_url=server.url, grpc_expander_cert=str(server.cert_path)
    )
    result = Simulation(dataclasses.replace(scenario, options=options).with_duration(15 * 60)).run()
    grown = {e["object"] for e in result.events if e["reason"] == "IncreaseSize"}
    assert grown == {"NodeGroup/stable"}
    assert server.requests and all(
        {o.nodeGroupId for o in r.options} == {"cheap", "stable"} for r in server.requests
    )
