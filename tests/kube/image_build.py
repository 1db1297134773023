"""The image build of tests/kube/test_image.py, started as soon as the session knows it will run.

Building the image takes two to three minutes, mostly waiting on Debian's mirror and on pip; the
tests that use it run about halfway through the suite. Started in the background when collection
finishes (conftest.py), the build overlaps the tests before it, and the image fixture only waits
for what is left of it. The build is the same command with the same environment either way.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "deploy" / "image" / "build.sh"
# An OCI layout build.sh wrote earlier (its `oci` directory), tested instead of building anew.
LAYOUT_VARIABLE = "KUBETIDE_IMAGE_LAYOUT"
TOOLS = ("mmdebstrap", "umoci", "unshare", "chroot")
BUILD_TIMEOUT = 1800


def missing_prerequisite() -> str | None:
    """Why the image cannot be built and run here, or None."""
    if os.geteuid() != 0:
        return "building and running the image needs root (mmdebstrap, umoci, chroot)"
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        return f"{', '.join(missing)} not installed (apt-get install -y mmdebstrap umoci)"
    return None


@dataclass
class Build:
    """build.sh running into `out`, its output and errors kept in files beside it."""

    out: Path
    process: subprocess.Popen[bytes]
    started: float = field(default_factory=time.monotonic)

    @classmethod
    def start(cls) -> Build:
        out = Path(tempfile.mkdtemp(prefix="kubetide-image-"))
        with open(out / "build.stdout", "wb") as stdout, open(out / "build.stderr", "wb") as stderr:
            process = subprocess.Popen(
                ["bash", str(BUILD), str(out / "image")],
                stdout=stdout,
                stderr=stderr,
                env={**os.environ, "PYTHON": sys.executable},
                start_new_session=True,  # its own process group, stopped whole at the session's end
            )
        return cls(out, process)

    def wait(self) -> tuple[Path, str, float]:
        """The OCI layout, build.sh's stdout and the build's seconds; fails the test on a failed build."""
        try:
            returncode = self.process.wait(max(1.0, BUILD_TIMEOUT - (time.monotonic() - self.started)))
        except subprocess.TimeoutExpired:
            self.stop()
            pytest.fail(f"deploy/image/build.sh did not finish in {BUILD_TIMEOUT} s", pytrace=False)
        seconds = time.monotonic() - self.started
        stderr = (self.out / "build.stderr").read_text(errors="replace")
        assert returncode == 0, stderr[-4000:]
        return self.out / "image" / "oci", (self.out / "build.stdout").read_text(), seconds

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)  # build.sh removes its work directory
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        shutil.rmtree(self.out, ignore_errors=True)


BUILD_KEY = pytest.StashKey[Build]()


def start_if_needed(session: pytest.Session) -> None:
    """Start the build when the session will run an image test and the image can be built here."""
    if session.config.option.collectonly:
        return
    wanted = any(Path(str(item.fspath)).name == "test_image.py" for item in session.items)
    if wanted and os.environ.get(LAYOUT_VARIABLE) is None and missing_prerequisite() is None:
        session.config.stash[BUILD_KEY] = Build.start()


def started_build(config: pytest.Config) -> Build | None:
    return config.stash.get(BUILD_KEY, None)


def stop(config: pytest.Config) -> None:
    build = config.stash.get(BUILD_KEY, None)
    if build is not None:
        build.stop()
