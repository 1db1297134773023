"""A real Kubernetes control plane for tests: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and KWOK on loopback ports, in one temporary directory (envtest-style).

KWOK plays the kubelet for every Node annotated `kwok.x-k8s.io/node: fake`: it heartbeats the
node's Lease, makes bound pods Running and completes their deletion. A pod annotated
`kubetide.io/test-start-delay: <duration>` (e.g. "10s") is made Running and Ready only after that
delay, as a pod behind a slow readiness probe would be (see `write_kwok_stages`).
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import datetime
import fcntl
import hashlib
import ipaddress
import json
import lzma
import os
import re
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path

BINARY_NAMES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
KWOK_STAGES_FILE = "kwok-stages.yaml"
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
START_DELAY_ANNOTATION = "kubetide.io/test-start-delay"
SHARED_K8S_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "k8s"
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
# The first address of the service range: the API server's own Service IP, kept in its certificate.
KUBERNETES_SERVICE_IP = "10.0.0.1"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"

START_TIMEOUT_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 10.0
LOG_TAIL_LINES = 40
NODE_DELETION_TIMEOUT_SECONDS = 30.0
DIRECTORY_PREFIX = "kubetide-controlplane-"
OWNER_FILE = "owner.pid"


class ControlPlaneUnavailable(Exception):
    """The binaries are not on this machine: tests that need the control plane cannot run."""


class ControlPlaneError(RuntimeError):
    """A component failed to start or to become healthy."""


def find_binaries() -> tuple[Path, Path | None]:
    """The directory holding the five uncompressed binaries, and KWOK's stage file if there is one.

    Looks at KUBEBUILDER_ASSETS, then KUBETIDE_K8S_BIN, then unpacks ../shared/k8s into a cache.
    """
    for variable in ("KUBEBUILDER_ASSETS", "KUBETIDE_K8S_BIN"):
        value = os.environ.get(variable)
        if not value:
            continue
        directory = Path(value)
        missing = [name for name in BINARY_NAMES if not os.access(directory / name, os.X_OK)]
        if missing:
            raise ControlPlaneUnavailable(f"{variable}={value} lacks executable {', '.join(missing)}")
        stages = directory / KWOK_STAGES_FILE
        if not stages.is_file():
            stages = SHARED_K8S_DIR / KWOK_STAGES_FILE
        return directory, stages if stages.is_file() else None
    if not (SHARED_K8S_DIR / "SHA256SUMS").is_file():
        raise ControlPlaneUnavailable(
            f"control plane binaries not found: set KUBETIDE_K8S_BIN or provide {SHARED_K8S_DIR}"
        )
    return unpack_shared_binaries(SHARED_K8S_DIR), SHARED_K8S_DIR / KWOK_STAGES_FILE


def unpack_shared_binaries(source: Path) -> Path:
    """Verify the .xz files against SHA256SUMS and decompress them once into a per-user cache.

    The cache directory is named after SHA256SUMS, so new binaries get a new directory. Each binary
    appears by an atomic rename, and a file lock keeps concurrent sessions from unpacking twice.
    """
    sums_text = (source / "SHA256SUMS").read_text()
    expected = {}
    for line in sums_text.splitlines():
        if line.strip():
            digest, name = line.split()
            expected[name.lstrip("*")] = digest
    cache_root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    cache = cache_root / "kubetide" / "k8s" / hashlib.sha256(sums_text.encode()).hexdigest()[:16]
    if all((cache / name).is_file() for name in BINARY_NAMES):
        return cache
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for name in BINARY_NAMES:
            if not (cache / name).is_file():
                unpack_one(source / f"{name}.xz", expected.get(f"{name}.xz"), cache / name)
    return cache


def unpack_one(compressed: Path, expected_sha256: str | None, target: Path) -> None:
    if expected_sha256 is None:
        raise ControlPlaneError(f"{compressed.name} is not listed in SHA256SUMS")
    digest = hashlib.sha256()
    with open(compressed, "rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    if digest.hexdigest() != expected_sha256:
        raise ControlPlaneError(f"{compressed} does not match SHA256SUMS")
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    with lzma.open(compressed) as source, open(partial, "wb") as sink:
        shutil.copyfileobj(source, sink, 1 << 20)
    partial.chmod(0o755)
    os.replace(partial, target)


def remove_abandoned_directories() -> None:
    """Remove the temporary directories of earlier sessions whose process is gone: one killed by
    SIGKILL could not remove its own (its components died with it, see `_launch`)."""
    for directory in Path(tempfile.gettempdir()).glob(f"{DIRECTORY_PREFIX}*"):
        try:
            owner = int((directory / OWNER_FILE).read_text())
        except (OSError, ValueError):
            # Not written yet by a session that is starting, or not ours: leave it.
            continue
        try:
            os.kill(owner, 0)
        except ProcessLookupError:
            shutil.rmtree(directory, ignore_errors=True)
        except PermissionError:
            continue  # alive, and another user's


def free_loopback_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Credentials:
    """A CA and everything signed by it for one control plane, written as PEM files into a directory."""

    def __init__(self, directory: Path):
        # Imported here so that a machine without `cryptography` skips instead of failing collection.
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        self._x509, self._hashes, self._serialization, self._ec = x509, hashes, serialization, ec
        self._eku, self._name_oid = ExtendedKeyUsageOID, NameOID
        self.directory = directory
        # EC keys: generating five RSA keys would add most of a second to every session's start.
        self._ca_key = ec.generate_private_key(ec.SECP256R1())
        self._ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubetide-test-ca")])
        ca_cert = (
            self._builder(self._ca_name, self._ca_key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._ca_key, hashes.SHA256())
        )
        self.ca_cert = self._write_cert("ca.crt", ca_cert)
        self.ca_key = self._write_key("ca.key", self._ca_key)
        self.serving_cert, self.serving_key = self._issue(
            "apiserver",
            common_name="kube-apiserver",
            organization=None,
            usage=ExtendedKeyUsageOID.SERVER_AUTH,
            alternative_names=[
                x509.DNSName("localhost"),
                x509.DNSName("kubernetes"),
                x509.DNSName("kubernetes.default"),
                x509.DNSName("kubernetes.default.svc"),
                x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                x509.IPAddress(ipaddress.ip_address(KUBERNETES_SERVICE_IP)),
            ],
        )
        service_account_key = ec.generate_private_key(ec.SECP256R1())
        self.service_account_key = self._write_key("service-account.key", service_account_key)
        self.service_account_public_key = directory / "service-account.pub"
        self.service_account_public_key.write_bytes(
            service_account_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )

    def client(self, name: str, common_name: str, organization: str | None = None) -> tuple[Path, Path]:
        """A client certificate and key: the API server takes CN as the user and O as a group."""
        return self._issue(
            name,
            common_name=common_name,
            organization=organization,
            usage=self._eku.CLIENT_AUTH,
            alternative_names=[],
        )

    def _builder(self, subject, public_key):
        x509 = self._x509
        now = datetime.datetime.now(datetime.UTC)
        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self._ca_name)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            # Backdated so that a clock a little behind in a component still accepts it.
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=7))
        )

    def _issue(self, name, *, common_name, organization, usage, alternative_names) -> tuple[Path, Path]:
        x509, name_oid = self._x509, self._name_oid
        attributes = [x509.NameAttribute(name_oid.COMMON_NAME, common_name)]
        if organization:
            attributes.insert(0, x509.NameAttribute(name_oid.ORGANIZATION_NAME, organization))
        key = self._ec.generate_private_key(self._ec.SECP256R1())
        builder = self._builder(x509.Name(attributes), key.public_key()).add_extension(
            x509.ExtendedKeyUsage([usage]), critical=False
        )
        if alternative_names:
            builder = builder.add_extension(x509.SubjectAlternativeName(alternative_names), critical=False)
        cert = builder.sign(self._ca_key, self._hashes.SHA256())
        return self._write_cert(f"{name}.crt", cert), self._write_key(f"{name}.key", key)

    def _write_cert(self, filename: str, cert) -> Path:
        path = self.directory / filename
        path.write_bytes(cert.public_bytes(self._serialization.Encoding.PEM))
        return path

    def _write_key(self, filename: str, key) -> Path:
        path = self.directory / filename
        path.write_bytes(
            key.private_bytes(
                self._serialization.Encoding.PEM,
                self._serialization.PrivateFormat.TraditionalOpenSSL,
                self._serialization.NoEncryption(),
            )
        )
        path.chmod(0o600)
        return path


def write_kubeconfig(
    path: Path,
    server: str,
    ca_path: Path,
    *,
    token: str | None = None,
    client_cert: Path | None = None,
    client_key: Path | None = None,
) -> Path:
    """A one-context kubeconfig. JSON is valid YAML, so no YAML writer is needed."""
    user: dict[str, str] = {}
    if token is not None:
        user["token"] = token
    if client_cert is not None and client_key is not None:
        user["client-certificate"] = str(client_cert)
        user["client-key"] = str(client_key)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "test", "cluster": {"server": server, "certificate-authority": str(ca_path)}}],
        "users": [{"name": "test", "user": user}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}],
        "current-context": "test",
    }
    path.write_text(json.dumps(config, indent=2))
    path.chmod(0o600)
    return path


def write_kwok_stages(source: Path, target: Path) -> Path:
    """`source`'s stages with one more: pods annotated START_DELAY_ANNOTATION become Running and
    Ready only after the annotation's duration (KWOK's `delay.durationFrom`), and `pod-ready` leaves
    them to it. Every other pod goes through the stages exactly as `source` has them.
    """
    import yaml

    stages = list(yaml.safe_load_all(source.read_text()))
    ready = next((s for s in stages if s and s["metadata"]["name"] == "pod-ready"), None)
    if ready is None:
        raise ControlPlaneError(f"{source} has no pod-ready stage to derive the slow-start stage from")
    annotation = f'.metadata.annotations["{START_DELAY_ANNOTATION}"]'
    slow = copy.deepcopy(ready)
    slow["metadata"]["name"] = "pod-ready-after-start-delay"
    slow["spec"]["selector"]["matchExpressions"].append({"key": annotation, "operator": "Exists"})
    # KWOK takes the delay from the annotation (measured: 10s asked, Ready 10 s after creation);
    # durationMilliseconds is its fallback should the expression yield nothing.
    slow["spec"]["delay"] = {"durationMilliseconds": 20000, "durationFrom": {"expressionFrom": annotation}}
    ready["spec"]["selector"]["matchExpressions"].append({"key": annotation, "operator": "DoesNotExist"})
    target.write_text(yaml.safe_dump_all([*stages, slow], sort_keys=False))
    return target


class ControlPlane:
    """Starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and KWOK, and stops exactly
    those processes again (each in its own process group) when `stop()` runs or the interpreter exits.
    """

    def __init__(self) -> None:
        self.binaries, self.kwok_stages = find_binaries()
        remove_abandoned_directories()
        self.directory = Path(tempfile.mkdtemp(prefix=DIRECTORY_PREFIX))
        (self.directory / OWNER_FILE).write_text(str(os.getpid()))
        self.logs_directory = self.directory / "logs"
        self.logs_directory.mkdir()
        if self.kwok_stages is not None:
            self.kwok_stages = write_kwok_stages(self.kwok_stages, self.directory / KWOK_STAGES_FILE)
        self._processes: dict[str, subprocess.Popen] = {}
        self._stopped = False
        # Registered before anything starts, so even an interrupted start leaves nothing behind.
        atexit.register(self.stop)
        self._etcd_port = free_loopback_port()
        self._etcd_peer_port = free_loopback_port()
        self._apiserver_port = free_loopback_port()
        self._health_ports = {name: free_loopback_port() for name in BINARY_NAMES[2:]}
        self.server = f"https://127.0.0.1:{self._apiserver_port}"
        self.admin_token = secrets.token_hex(16)
        self._credentials = Credentials(self.directory)
        self.ca_path = self._credentials.ca_cert
        self.kubeconfig_path = self._client_kubeconfig("admin", "kubetide-admin", "system:masters")

    @property
    def pids(self) -> dict[str, int]:
        """The process id of each running component, by binary name."""
        return {name: process.pid for name, process in self._processes.items() if process.poll() is None}

    def start(self) -> ControlPlane:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        component_kubeconfigs = {
            "kube-controller-manager": self._client_kubeconfig(
                "kube-controller-manager", "system:kube-controller-manager"
            ),
            "kube-scheduler": self._client_kubeconfig("kube-scheduler", "system:kube-scheduler"),
            "kwok": self._client_kubeconfig("kwok", "kwok", "system:masters"),
        }
        token_file = self.directory / "tokens.csv"
        token_file.write_text(
            f"{self.admin_token},kubetide-admin-token,kubetide-admin-token,system:masters\n"
        )
        token_file.chmod(0o600)
        self._apiserver_command = self._apiserver_arguments(token_file)

        self._launch("etcd", self._etcd_arguments())
        self._wait_for("etcd", f"http://127.0.0.1:{self._etcd_port}/health")
        self.start_apiserver()
        for name, arguments in self._client_component_arguments(component_kubeconfigs).items():
            self._launch(name, arguments)
        # The controller-manager and scheduler serve HTTPS with self-signed certificates of their own.
        unverified = ssl._create_unverified_context()
        self._wait_for("kwok", f"http://127.0.0.1:{self._health_ports['kwok']}/healthz")
        self._wait_for(
            "kube-scheduler", f"https://127.0.0.1:{self._health_ports['kube-scheduler']}/readyz", unverified
        )
        port = self._health_ports["kube-controller-manager"]
        self._wait_for("kube-controller-manager", f"https://127.0.0.1:{port}/healthz", unverified)
        # Its /healthz answers before the controllers run: the `default` ServiceAccount of the
        # `default` namespace shows that they do (and tests' pods need such accounts).
        self._wait_for(
            "kube-controller-manager", f"{self.server}/api/v1/namespaces/default/serviceaccounts/default"
        )

    def _client_kubeconfig(self, name: str, common_name: str, organization: str | None = None) -> Path:
        cert, key = self._credentials.client(name, common_name, organization)
        return write_kubeconfig(
            self.directory / f"{name}.kubeconfig",
            self.server,
            self.ca_path,
            client_cert=cert,
            client_key=key,
        )

    def write_token_kubeconfig(self, token: str, name: str = "token") -> Path:
        """A kubeconfig that authenticates with a bearer token, e.g. a ServiceAccount's."""
        return write_kubeconfig(self.directory / f"{name}.kubeconfig", self.server, self.ca_path, token=token)

    def _etcd_arguments(self) -> list[str]:
        client_url = f"http://127.0.0.1:{self._etcd_port}"
        peer_url = f"http://127.0.0.1:{self._etcd_peer_port}"
        return [
            str(self.binaries / "etcd"),
            "--name=default",
            f"--data-dir={self.directory / 'etcd'}",
            f"--listen-client-urls={client_url}",
            f"--advertise-client-urls={client_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=default={peer_url}",
            "--initial-cluster-state=new",
            # Test data need not survive a power cut; fsync is most of etcd's write latency.
            "--unsafe-no-fsync",
            "--log-level=warn",
        ]

    def _apiserver_arguments(self, token_file: Path) -> list[str]:
        credentials = self._credentials
        return [
            str(self.binaries / "kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{self._etcd_port}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self._apiserver_port}",
            f"--cert-dir={self.directory / 'apiserver-certs'}",
            f"--tls-cert-file={credentials.serving_cert}",
            f"--tls-private-key-file={credentials.serving_key}",
            f"--client-ca-file={credentials.ca_cert}",
            f"--token-auth-file={token_file}",
            f"--service-account-key-file={credentials.service_account_public_key}",
            f"--service-account-signing-key-file={credentials.service_account_key}",
            f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            # Nothing on loopback routes to the `kubernetes` Service, so its Endpoints and their
            # lease are only writes that no one reads.
            "--endpoint-reconciler-type=none",
            "--authorization-mode=RBAC,Node",
            # Node agents in tests' DaemonSets may ask for privileged containers, as real ones do.
            "--allow-privileged=true",
            "--profiling=false",
            # Without it, SIGTERM waits for open watches to end on their own (a minute): this ends
            # them after a second, so restart_apiserver() is quick and still graceful.
            "--shutdown-watch-termination-grace-period=1s",
        ]

    def _client_component_arguments(self, kubeconfigs: dict[str, Path]) -> dict[str, list[str]]:
        credentials = self._credentials

        def delegated(name: str) -> list[str]:
            # Delegated authentication and authorization through the component's own kubeconfig;
            # /healthz and /readyz stay open to anonymous probes (the default always-allow paths).
            return [
                f"--kubeconfig={kubeconfigs[name]}",
                f"--authentication-kubeconfig={kubeconfigs[name]}",
                f"--authorization-kubeconfig={kubeconfigs[name]}",
                "--bind-address=127.0.0.1",
                f"--secure-port={self._health_ports[name]}",
                f"--cert-dir={self.directory / (name + '-certs')}",
                "--leader-elect=false",
            ]

        return {
            "kube-controller-manager": [
                str(self.binaries / "kube-controller-manager"),
                *delegated("kube-controller-manager"),
                # Each controller acts as its own ServiceAccount, so RBAC sees what a real cluster sees.
                "--use-service-account-credentials=true",
                f"--service-account-private-key-file={credentials.service_account_key}",
                f"--root-ca-file={credentials.ca_cert}",
                f"--cluster-signing-cert-file={credentials.ca_cert}",
                f"--cluster-signing-key-file={credentials.ca_key}",
                # The node-lifecycle controller stays on (KWOK heartbeats the Leases) with its default
                # grace period: a shorter one makes KWOK's nodes flap NotReady on a loaded machine.
                "--controllers=*",
                # A new HorizontalPodAutoscaler is first read one sync period after it is created
                # (the controller's rate limiter): 5 s instead of the default 15 s per HPA test.
                "--horizontal-pod-autoscaler-sync-period=5s",
            ],
            "kube-scheduler": [str(self.binaries / "kube-scheduler"), *delegated("kube-scheduler")],
            "kwok": [
                str(self.binaries / "kwok"),
                f"--kubeconfig={kubeconfigs['kwok']}",
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake",
                "--node-lease-duration-seconds=40",
                f"--server-address=127.0.0.1:{self._health_ports['kwok']}",
                *([f"--config={self.kwok_stages}"] if self.kwok_stages else []),
            ],
        }

    def start_apiserver(self) -> None:
        self._launch("kube-apiserver", self._apiserver_command)
        self._wait_for("kube-apiserver", f"{self.server}/readyz")

    def restart_apiserver(self) -> None:
        """Stop kube-apiserver (SIGTERM, as a rolling restart does) and start it again on the same port
        and etcd data; returns once /readyz is ok. Clients see their connections and watches end.

        Call it from a thread that outlives the control plane (the test's own): the kernel ends a
        component when the thread that started it exits (see `_launch`)."""
        self._terminate("kube-apiserver")
        self.start_apiserver()

    def _launch(self, name: str, arguments: list[str]) -> None:
        # setpriv makes the kernel kill the component when pytest dies without running atexit (SIGKILL,
        # SIGTERM). Linux ties this to the thread that forked, not the process: hence restart_apiserver's
        # advice.
        guard = ["setpriv", "--pdeathsig", "SIGKILL", "--"] if shutil.which("setpriv") else []
        with open(self.logs_directory / f"{name}.log", "ab") as log:
            self._processes[name] = subprocess.Popen(
                [*guard, *arguments],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.directory,
                start_new_session=True,
            )

    def _wait_for(self, name: str, url: str, context: ssl.SSLContext | None = None) -> None:
        """Poll `url` until it answers 200, failing early if component `name` exits meanwhile. URLs of
        the API server are asked with the admin token and its CA."""
        headers = {}
        if url.startswith(self.server):
            headers = {"Authorization": f"Bearer {self.admin_token}"}
            context = ssl.create_default_context(cafile=str(self.ca_path))
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        last_answer = "no answer"
        while time.monotonic() < deadline:
            process = self._processes[name]
            if process.poll() is not None:
                raise ControlPlaneError(
                    f"{name} exited with status {process.returncode} while starting\n{self.log_tail(name)}"
                )
            try:
                request = urllib.request.Request(url, headers=headers)
                with urllib.request.urlopen(request, timeout=2, context=context) as response:
                    if response.status == 200:
                        return
            except urllib.error.HTTPError as error:
                last_answer = f"HTTP {error.code}: {error.read(500).decode(errors='replace')}"
            except OSError as error:
                last_answer = str(error)
            time.sleep(0.1)
        raise ControlPlaneError(
            f"{name} not ready within {START_TIMEOUT_SECONDS:.0f}s at {url} ({last_answer})\n{self.log_tail(name)}"
        )

    def log_tail(self, name: str, lines: int = LOG_TAIL_LINES) -> str:
        path = self.logs_directory / f"{name}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        tail = "\n".join(text.splitlines()[-lines:])
        # The temporary directory goes with stop(), so the lines themselves go into the message.
        return f"--- last {lines} lines of {name}'s log ---\n{tail}"

    def _terminate(self, name: str) -> None:
        process = self._processes.pop(name, None)
        # An exited and reaped component's pid may already belong to someone else: leave it alone.
        if process is None or process.poll() is not None:
            return
        signal_group(process, signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            signal_group(process, signal.SIGKILL)
            process.wait()

    def stop(self) -> None:
        """Stop every component this instance started, clients of the API server first, and remove the
        temporary directory. Safe to call more than once."""
        if self._stopped:
            return
        self._stopped = True
        atexit.unregister(self.stop)
        for name in reversed(BINARY_NAMES):
            self._terminate(name)
        shutil.rmtree(self.directory, ignore_errors=True)


class KubeTestContext:
    """One test's view of the shared control plane: an admin client, a fresh namespace, cleanup."""

    def __init__(self, control_plane: ControlPlane, test_name: str):
        import kubernetes

        self.control_plane = control_plane
        self.api_client = kubernetes.config.new_client_from_config(
            config_file=str(control_plane.kubeconfig_path)
        )
        self.core = kubernetes.client.CoreV1Api(self.api_client)
        self._api_exception = kubernetes.client.ApiException
        readable = re.sub(r"[^a-z0-9]+", "-", test_name.lower())[:40].strip("-")
        self.namespace = f"{readable}-{uuid.uuid4().hex[:6]}"
        self._nodes_before = self.node_names()
        self._cleanups: list[Callable[[], object]] = []
        self.core.create_namespace({"metadata": {"name": self.namespace}})
        # Pods are refused until the ServiceAccount controller has made the namespace's `default` account.
        wait_until(
            lambda: (
                self.core.list_namespaced_service_account(
                    self.namespace, field_selector="metadata.name=default"
                ).items
            ),
            timeout=30,
            what=f"ServiceAccount {self.namespace}/default",
        )

    def node_names(self) -> set[str]:
        return {node.metadata.name for node in self.core.list_node().items}

    def add_cleanup(self, action: Callable[[], object]) -> None:
        """Run `action` at teardown, before the namespace and Nodes go (last added runs first): for
        cluster-scoped objects other than Nodes, such as ClusterRoleBindings or PriorityClasses."""
        self._cleanups.append(action)

    def create_fake_node(
        self,
        name: str,
        *,
        cpu: str = "4",
        memory: str = "8Gi",
        pods: str = "110",
        labels: dict[str, str] | None = None,
        taints: list[dict] | None = None,
    ):
        """Create a Node that KWOK manages (heartbeats, runs its pods); returns the API's V1Node."""
        resources = {"cpu": cpu, "memory": memory, "pods": pods}
        return self.core.create_node(
            {
                "metadata": {
                    "name": name,
                    "labels": {"kubernetes.io/hostname": name, **(labels or {})},
                    "annotations": {KWOK_NODE_ANNOTATION: "fake"},
                },
                "spec": {"taints": taints or []},
                "status": {"allocatable": resources, "capacity": resources},
            }
        )

    def wait_node_ready(self, name: str, timeout: float = 30.0):
        def ready():
            node = self.core.read_node(name)
            conditions = {condition.type: condition.status for condition in node.status.conditions or []}
            return node if conditions.get("Ready") == "True" else None

        return wait_until(ready, timeout=timeout, what=f"Node {name} Ready")

    def cleanup_nodes(self) -> None:
        """Delete every Node that did not exist when the test began, and wait until they are gone."""
        created = self.node_names() - self._nodes_before
        for name in created:
            try:
                self.core.delete_node(name)
            except self._api_exception as error:
                if error.status != 404:
                    raise
        wait_until(
            lambda: not (self.node_names() & created),
            timeout=NODE_DELETION_TIMEOUT_SECONDS,
            what=f"Nodes {sorted(created)} deleted",
        )

    def teardown(self) -> None:
        """Every step runs even if an earlier one fails, so one broken test leaves the least behind
        for the next; the first failure is raised at the end."""
        steps = [
            *reversed(self._cleanups),
            # The namespace goes first, so its controllers stop making pods; then its pods are removed
            # at once rather than waiting for KWOK to finish graceful deletions.
            lambda: self.core.delete_namespace(self.namespace),
            lambda: self.core.delete_collection_namespaced_pod(self.namespace, grace_period_seconds=0),
            self.cleanup_nodes,
        ]
        first_failure = None
        for step in steps:
            try:
                step()
            except Exception as failure:
                first_failure = first_failure or failure
        self.api_client.close()
        if first_failure is not None:
            raise first_failure


def signal_group(process: subprocess.Popen, signum: int) -> None:
    # The group id is the component's pid (start_new_session), so this reaches nothing else.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signum)


def wait_until(condition: Callable[[], object], timeout: float = 30.0, interval: float = 0.1, what: str = ""):
    """Poll `condition` until it returns something truthy, and return that; fail after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what or condition}")
        time.sleep(interval)


@contextlib.contextmanager
def installed_crds(control_plane: ControlPlane, path: Path):
    """The CustomResourceDefinitions in `path` created and Established for the block, and deleted
    after it (ones that already existed are left alone)."""
    import kubernetes
    import yaml

    documents = list(yaml.safe_load_all(path.read_text()))
    api_client = kubernetes.config.new_client_from_config(config_file=str(control_plane.kubeconfig_path))
    extensions = kubernetes.client.ApiextensionsV1Api(api_client)
    created = []
    try:
        for doc in documents:
            try:
                extensions.create_custom_resource_definition(doc)
                created.append(doc["metadata"]["name"])
            except kubernetes.client.ApiException as error:
                if error.status != 409:
                    raise

        def established() -> bool:
            for doc in documents:
                crd = extensions.read_custom_resource_definition(doc["metadata"]["name"])
                conditions = {c.type: c.status for c in crd.status.conditions or []}
                if conditions.get("Established") != "True":
                    return False
            return True

        wait_until(established, timeout=30, what=f"the CRDs of {path.name} established")
        yield
    finally:
        for name in created:
            extensions.delete_custom_resource_definition(name)
        api_client.close()
