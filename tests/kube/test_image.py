"""The image deploy/image/build.sh builds, run as the cluster runs it: its root filesystem,
read-only, as UID 65532, with the entrypoint, user and environment of its own OCI config.

The image is built once (two to three minutes: Debian packages from the mirror, wheels from
requirements/ci.lock), in the background from the moment collection ends (image_build.py), unpacked
with umoci, and each command runs in a mount namespace of its
own (`unshare --mount`) where the root filesystem is bind-mounted read-only, /tmp is a tmpfs (the
Deployment's emptyDir), and the directories a test hands in (the control plane's kubeconfig and
certificates, the node groups) are bind-mounted read-only at their own paths; then `chroot` to it
as the image's user. Needs root, mmdebstrap and umoci (.ci/run installs them), and the network.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
from pathlib import Path

import image_build
import pytest
from controlplane import KubeTestContext
from kubetide_process import create_deployment, group_nodes, wait_running, write_groups
from test_image_pins import pins_module
from test_run_e2e import base_args

import kubetide

pytestmark = pytest.mark.controlplane

ROOT = Path(__file__).resolve().parents[2]
PINS = ROOT / "deploy" / "image" / "debian-packages.lock"
RECORD = "usr/share/kubetide/debian-packages.lock"  # in the image
REQUIRE_VARIABLE = "KUBETIDE_REQUIRE_IMAGE"  # .ci/run sets it: the image test must run, not skip
IMAGE_USER = 65532


def unavailable(reason: str):
    if os.environ.get(REQUIRE_VARIABLE) == "1":
        pytest.fail(f"{reason} ({REQUIRE_VARIABLE}=1)", pytrace=False)
    pytest.skip(reason)


class Image:
    """An unpacked image: its root filesystem and its OCI runtime config (umoci's config.json)."""

    def __init__(self, bundle: Path, build_output: str | None):
        self.rootfs = bundle / "rootfs"
        self.config = json.loads((bundle / "config.json").read_text())
        self.build_output = build_output  # build.sh's stdout; None for a layout built earlier

    @property
    def user(self) -> tuple[int, int]:
        user = self.config["process"]["user"]
        return user["uid"], user["gid"]

    def command(self, args: list[str] | None = None, *, mounts: tuple[Path, ...] = ()) -> list[str]:
        """The command line running the image's entrypoint (with `args` for its cmd) as the image
        says, in a mount namespace where its root is read-only. One process throughout (each step
        execs the next), so a signal sent to it reaches kubetide."""
        rootfs = shlex.quote(str(self.rootfs))
        process = self.config["process"]
        entrypoint = process["args"] if args is None else [process["args"][0], *args]
        uid, gid = self.user
        steps = [
            "set -eu",
            f"R={rootfs}",
            'mount --bind "$R" "$R"',
            'mount -o remount,bind,ro "$R"',
            'mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$R/tmp"',
            'mount -t proc -o nosuid,nodev,noexec proc "$R/proc"',
        ]
        for directory in mounts:
            inside = shlex.quote(f"{self.rootfs}{directory}")
            steps += [f"mkdir -p {inside}", f"mount --bind -o ro {shlex.quote(str(directory))} {inside}"]
        environment = ["env", "-i", *process["env"]]
        steps.append(
            "exec "
            + shlex.join(["chroot", f"--userspec={uid}:{gid}", str(self.rootfs), *environment, *entrypoint])
        )
        return ["unshare", "--mount", "--", "sh", "-c", "\n".join(steps)]


def unpack(layout: str, bundle: Path) -> None:
    unpacked = subprocess.run(
        ["umoci", "unpack", "--image", f"{layout}:{kubetide.__version__}", str(bundle)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert unpacked.returncode == 0, unpacked.stderr


@pytest.fixture(scope="module")
def image(request: pytest.FixtureRequest, tmp_path_factory) -> Image:
    reason = image_build.missing_prerequisite()
    if reason is not None:
        unavailable(reason)
    bundle = tmp_path_factory.mktemp("image") / "bundle"
    layout = os.environ.get(image_build.LAYOUT_VARIABLE)
    if layout is not None:
        unpack(layout, bundle)
        return Image(bundle, None)
    build = image_build.started_build(request.config)  # since collection ended (conftest.py)
    assert build is not None
    try:
        oci, output, seconds = build.wait()
        unpack(str(oci), bundle)
    finally:
        build.stop()
    print(f"image built in {seconds:.0f} s")
    return Image(bundle, output)


def test_the_image_is_configured_as_the_deployment_expects(image):
    process = image.config["process"]
    assert image.user == (IMAGE_USER, IMAGE_USER)
    assert process["args"] == ["/usr/local/bin/kubetide", "run"]
    assert "PYTHONDONTWRITEBYTECODE=1" in process["env"]
    # Nothing of the build is left: no pip, no compiler, no package manager's lists.
    site = image.rootfs / "usr/local/lib/python3.11/dist-packages"
    assert (site / "kubetide").is_dir() and not (site / "pip").exists()
    assert not (image.rootfs / "usr/bin/pip3").exists() and not (image.rootfs / "usr/bin/gcc").exists()
    # Every dependency the lock pins is there at its version (pip's records of what it installed).
    installed = {p.name.split("-")[0].lower().replace("_", "-") for p in site.glob("*.dist-info")}
    assert {"kubernetes", "pyyaml", "numpy", "pydantic", "boto3", "yaml-rs"} <= installed


def dpkg_installed(rootfs: Path) -> dict[str, str]:
    """package -> version of every package dpkg's own database says is installed."""
    installed = {}
    for stanza in (rootfs / "var/lib/dpkg/status").read_text().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and line[0] != " ")
        if fields.get("Status") == "install ok installed":
            installed[fields["Package"]] = fields["Version"]
    return installed


def test_the_image_records_its_debian_packages_and_the_pins_that_moved(image):
    recorded = pins_module.parse_lock((image.rootfs / RECORD).read_text(), RECORD)
    assert {p: e.version for p, e in recorded.items()} == dpkg_installed(image.rootfs)
    pins = pins_module.parse_lock(PINS.read_text(), str(PINS))
    assert recorded.keys() == pins.keys()  # a package added or gone stops the build
    assert {pins_module.release_of(s) for e in recorded.values() for s in e.suites} == {"bookworm"}
    moved = sorted(p for p in pins if pins[p].version != recorded[p].version)
    for package in moved:
        assert pins_module.compare_versions(recorded[package].version, pins[package].version) == 1
    labels = image.config["annotations"]
    assert labels["io.kubetide.debian.release"] == "bookworm"
    assert labels["io.kubetide.debian.packages"] == f"/{RECORD}"
    assert labels["io.kubetide.debian.superseded-pins"] == (
        ",".join(f"{p}={recorded[p].version}" for p in moved) or "none"
    )
    reports = [
        f"pin {p} {pins[p].version} superseded by {recorded[p].version} ({','.join(recorded[p].suites)})"
        for p in moved
    ]
    # The record says which pins moved, and so did the build, one line each.
    assert [
        line[2:] for line in (image.rootfs / RECORD).read_text().splitlines() if " superseded by " in line
    ] == (reports)
    if image.build_output is not None:
        assert [line for line in image.build_output.splitlines() if " superseded by " in line] == [
            f"build.sh: {report}" for report in reports
        ]
    if moved:
        print(f"{len(moved)} pins superseded: {', '.join(moved)}")


def test_kubetide_version_runs_read_only_as_uid_65532(image):
    ran = subprocess.run(image.command(["--version"]), capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == f"kubetide {kubetide.__version__}"
    # The same sandbox: the root really is read-only, and the user really is 65532.
    probe = [
        "/usr/bin/python3",
        "-c",
        "import os; print(os.getuid(), os.getgid(), bool(os.statvfs('/').f_flag & os.ST_RDONLY))",
    ]
    command = image.command()
    command[-1] = command[-1].replace("/usr/local/bin/kubetide run", shlex.join(probe))
    ran = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == [str(IMAGE_USER), str(IMAGE_USER), "True"]


def test_every_compiled_dependency_loads_in_the_image(image):
    # Wheels with C or Rust extensions need the image's shared libraries (libstdc++ for numpy).
    modules = "numpy, yaml, _yaml, yaml_rs, pydantic_core, kubernetes, prometheus_client, boto3, aiohttp"
    probe = ["/usr/bin/python3", "-c", f"import {modules}; print('ok')"]
    command = image.command()
    command[-1] = command[-1].replace("/usr/local/bin/kubetide run", shlex.join(probe))
    ran = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "ok"


def inputs_for(image: Image, kube: KubeTestContext, directory: Path) -> tuple[Path, Path]:
    """(kubeconfig, node groups) in `directory`, readable by the image's user and by it alone, as
    a Secret and a ConfigMap mounted into the pod would be: the control plane's kubeconfig names
    root's 0600 files, which UID 65532 may not read."""
    directory.mkdir(mode=0o700)
    config = json.loads(kube.control_plane.kubeconfig_path.read_text())
    for entry, fields in (
        ("clusters", ("certificate-authority",)),
        ("users", ("client-certificate", "client-key")),
    ):
        section = config[entry][0][entry[:-1]]
        for field in fields:
            if field in section:
                copied = directory / Path(section[field]).name
                shutil.copyfile(section[field], copied)
                section[field] = str(copied)
    kubeconfig = directory / "kubeconfig"
    kubeconfig.write_text(json.dumps(config))
    groups = write_groups(directory)
    uid, gid = image.user
    for path in (directory, *directory.iterdir()):
        os.chown(path, uid, gid)
    return kubeconfig, groups


def test_kubetide_run_from_the_image_scales_up_a_real_cluster(image, kube: KubeTestContext, tmp_path):
    kubeconfig, groups = inputs_for(image, kube, tmp_path / "inputs")
    create_deployment(kube, "from-image", 6, "500m", node_selector={"size": "small"})
    args = [f"--kubeconfig={kubeconfig}", *base_args(kube, groups, "image")[1:], "--leader-elect=false"]
    assert args[1] == "--cloud-provider=kwok"
    log_path = tmp_path / "kubetide.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            image.command(["run", *args], mounts=(kubeconfig.parent,)),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            try:
                placed = wait_running(kube, "from-image", 6, timeout=120)
            except AssertionError as timed_out:
                raise AssertionError(f"{timed_out}\n{log_path.read_text(errors='replace')[-6000:]}") from None
            assert {p.spec.node_name for p in placed} <= {n.metadata.name for n in group_nodes(kube, "small")}
            assert len(group_nodes(kube, "small")) == 2  # 4 pods of 500m per 2-cpu node
            process.send_signal(signal.SIGTERM)
            assert process.wait(60) == 0, log_path.read_text(errors="replace")
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    text = log_path.read_text(errors="replace")
    assert "Traceback" not in text, text
