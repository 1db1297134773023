"""deploy/image/debian_pins.py, offline: which installed Debian versions the image build takes for
the pins of deploy/image/debian-packages.lock, on Packages indices written out here.

The rule under test: a pin superseded by a newer update of the same release (a security update, a
point release, a new upstream version taken into the release) is taken and reported; a release
change, or a version that is not an update of the pin, stops the build with one line.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
LOCK = "deploy/image/debian-packages.lock"

_spec = importlib.util.spec_from_file_location("debian_pins", ROOT / "deploy" / "image" / "debian_pins.py")
assert _spec is not None and _spec.loader is not None
pins_module = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = pins_module  # dataclasses look their module up by name
_spec.loader.exec_module(pins_module)


def packages(*stanzas: tuple[str, str, str | None]) -> str:
    """A Packages index: (package, version, Source field or None)."""
    blocks = []
    for package, version, source in stanzas:
        lines = [f"Package: {package}"]
        if source is not None:
            lines.append(f"Source: {source}")
        lines += [f"Version: {version}", "Architecture: amd64", "Description: test", " a continuation line"]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def served(indices: dict[str, str]) -> list:
    return [stanza for suite, text in indices.items() for stanza in pins_module.parse_packages(text, suite)]


def lock(*lines: str) -> dict:
    return pins_module.parse_lock("# a comment\n" + "\n".join(lines) + "\n", LOCK)


PAM_INDICES = {
    "bookworm": packages(("libpam0g", "1.5.2-6+deb12u2", "pam"), ("zlib1g", "1:1.2.13.dfsg-1", "zlib")),
    "bookworm-security": packages(
        ("libpam0g", "1.5.2-6+deb12u3", "pam"), ("zlib1g", "1:1.2.13.dfsg-1+deb12u1", "zlib")
    ),
}

# (case, Packages indices by suite, lock lines, installed, expected superseded lines, expected refusals)
CASES = [
    (
        "every pin is what the release serves",
        {"bookworm": packages(("dash", "0.5.12-2", None), ("libc6", "2.36-9+deb12u14", "glibc"))},
        ["dash=0.5.12-2 bookworm dash", "libc6=2.36-9+deb12u14 bookworm glibc"],
        {"dash": "0.5.12-2", "libc6": "2.36-9+deb12u14"},
        [],
        [],
    ),
    (
        "security updates supersede the pins still in the point release",
        PAM_INDICES,
        ["libpam0g=1.5.2-6+deb12u2 bookworm pam", "zlib1g=1:1.2.13.dfsg-1 bookworm zlib"],
        {"libpam0g": "1.5.2-6+deb12u3", "zlib1g": "1:1.2.13.dfsg-1+deb12u1"},
        [
            "pin libpam0g 1.5.2-6+deb12u2 superseded by 1.5.2-6+deb12u3 (bookworm-security)",
            "pin zlib1g 1:1.2.13.dfsg-1 superseded by 1:1.2.13.dfsg-1+deb12u1 (bookworm-security)",
        ],
        [],
    ),
    (
        "the pinned version is gone from the archive: its successor is taken",
        {"bookworm-security": packages(("libexpat1", "2.5.0-1+deb12u6", "expat"))},
        ["libexpat1=2.5.0-1+deb12u5 bookworm-security expat"],
        {"libexpat1": "2.5.0-1+deb12u6"},
        ["pin libexpat1 2.5.0-1+deb12u5 superseded by 2.5.0-1+deb12u6 (bookworm-security)"],
        [],
    ),
    (
        "a new upstream version taken into the release, the newest of three suites",
        {
            "bookworm": packages(("openssl", "3.0.20-1~deb12u2", None)),
            "bookworm-updates": packages(("openssl", "3.0.17-1~deb12u2", None)),
            "bookworm-security": packages(("openssl", "3.0.23-1~deb12u1", None)),
        },
        ["openssl=3.0.22-1~deb12u2 bookworm-security openssl"],
        {"openssl": "3.0.23-1~deb12u1"},
        ["pin openssl 3.0.22-1~deb12u2 superseded by 3.0.23-1~deb12u1 (bookworm-security)"],
        [],
    ),
    (
        "a point release of a native package, served by two suites",
        {
            "bookworm": packages(("dpkg", "1.21.24", None)),
            "bookworm-updates": packages(("dpkg", "1.21.24", None)),
        },
        ["dpkg=1.21.23 bookworm dpkg"],
        {"dpkg": "1.21.24"},
        ["pin dpkg 1.21.23 superseded by 1.21.24 (bookworm,bookworm-updates)"],
        [],
    ),
    (
        "another release's suites are not a candidate",
        {
            "bookworm": packages(("bash", "5.2.15-2+b13", None)),
            "trixie": packages(("bash", "5.2.37-2+b5", None)),
        },
        ["bash=5.2.15-2+b13 bookworm bash"],
        {"bash": "5.2.15-2+b13"},
        [],
        [],
    ),
    (
        "a lock of another release: one line for the whole lock",
        {"bookworm": packages(("bash", "5.2.15-2+b13", None), ("dash", "0.5.12-2", None))},
        ["bash=5.2.37-2+b5 trixie bash", "dash=0.5.12-9 trixie dash"],
        {"bash": "5.2.15-2+b13", "dash": "0.5.12-2"},
        [],
        [
            f"{LOCK} pins packages of trixie, this build installs bookworm: a release change; review the"
            " packages, then run deploy/image/build.sh --update-pins and commit the lock"
        ],
    ),
    (
        "older than the pin",
        {"bookworm": packages(("libc6", "2.36-9+deb12u13", "glibc"))},
        ["libc6=2.36-9+deb12u14 bookworm glibc"],
        {"libc6": "2.36-9+deb12u13"},
        [],
        [
            "pin libc6 2.36-9+deb12u14: bookworm serves 2.36-9+deb12u13 (bookworm), which is not an"
            " update of it (older than the pin)"
        ],
    ),
    (
        "another epoch",
        {"bookworm": packages(("libcap2", "2:2.66-4+deb12u4", None))},
        ["libcap2=1:2.66-4+deb12u3+b1 bookworm libcap2"],
        {"libcap2": "2:2.66-4+deb12u4"},
        [],
        [
            "pin libcap2 1:2.66-4+deb12u3+b1: bookworm serves 2:2.66-4+deb12u4 (bookworm), which is not"
            " an update of it (another epoch)"
        ],
    ),
    (
        "another source package",
        {"bookworm-security": packages(("libssl3", "3.5.1-1~deb12u1", "openssl3.5"))},
        ["libssl3=3.0.22-1~deb12u2 bookworm-security openssl"],
        {"libssl3": "3.5.1-1~deb12u1"},
        [],
        [
            "pin libssl3 3.0.22-1~deb12u2: bookworm serves 3.5.1-1~deb12u1 (bookworm-security), which is"
            " not an update of it (built from the source package openssl3.5, the pin from openssl)"
        ],
    ),
    (
        "a backport",
        {"bookworm": packages(("systemd", "254.5-1~bpo12+1", None))},
        ["systemd=252.39-1~deb12u2 bookworm systemd"],
        {"systemd": "254.5-1~bpo12+1"},
        [],
        [
            "pin systemd 252.39-1~deb12u2: bookworm serves 254.5-1~bpo12+1 (bookworm), which is not an"
            " update of it (a backport)"
        ],
    ),
    (
        "a version marked for another Debian release",
        {"bookworm-security": packages(("libxml2", "2.9.14+dfsg-1.3~deb13u1", None))},
        ["libxml2=2.9.14+dfsg-1.3~deb12u2 bookworm-security libxml2"],
        {"libxml2": "2.9.14+dfsg-1.3~deb13u1"},
        [],
        [
            "pin libxml2 2.9.14+dfsg-1.3~deb12u2: bookworm serves 2.9.14+dfsg-1.3~deb13u1"
            " (bookworm-security), which is not an update of it (a version for Debian 13, the pin's is"
            " for Debian 12)"
        ],
    ),
    (
        "a package an update added, and a pin it dropped",
        {"bookworm": packages(("libnew1", "1.0-1", None), ("libold1", "1.0-1", None))},
        ["libold1=1.0-1 bookworm libold1"],
        {"libnew1": "1.0-1"},
        [],
        [
            f"libnew1 1.0-1 (bookworm) is installed but not pinned in {LOCK}",
            "pin libold1 1.0-1: no longer installed",
        ],
    ),
    (
        "installed is not the newest the release serves: the mirror moved during the build",
        PAM_INDICES,
        ["libpam0g=1.5.2-6+deb12u2 bookworm pam", "zlib1g=1:1.2.13.dfsg-1+deb12u1 bookworm-security zlib"],
        {"libpam0g": "1.5.2-6+deb12u2", "zlib1g": "1:1.2.13.dfsg-1+deb12u1"},
        [],
        [
            "libpam0g: 1.5.2-6+deb12u2 installed, but bookworm serves 1.5.2-6+deb12u3 (the mirror changed"
            " during the build: build again)",
            "pin libpam0g 1.5.2-6+deb12u2: no longer installed",
        ],
    ),
]


@pytest.mark.parametrize(
    ("indices", "lock_lines", "installed", "superseded", "refusals"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_resolution(indices, lock_lines, installed, superseded, refusals):
    outcome = pins_module.resolve(lock(*lock_lines), served(indices), installed, "bookworm", LOCK)
    assert outcome.superseded == superseded
    assert outcome.refusals == refusals
    if not refusals:
        # What is recorded is what was installed, each package with the suites serving it.
        assert {e.package: e.version for e in outcome.entries} == installed


def test_the_record_is_a_lock_that_pins_exactly_what_was_installed():
    outcome = pins_module.resolve(
        lock("libpam0g=1.5.2-6+deb12u2 bookworm pam", "zlib1g=1:1.2.13.dfsg-1 bookworm zlib"),
        served(PAM_INDICES),
        {"libpam0g": "1.5.2-6+deb12u3", "zlib1g": "1:1.2.13.dfsg-1+deb12u1"},
        "bookworm",
        LOCK,
    )
    text = pins_module.record(outcome.entries, "bookworm", outcome.superseded)
    assert "# pin libpam0g 1.5.2-6+deb12u2 superseded by 1.5.2-6+deb12u3 (bookworm-security)" in text
    recorded = pins_module.parse_lock(text, "record")
    assert [e.line() for e in recorded.values()] == [
        "libpam0g=1.5.2-6+deb12u3 bookworm-security pam",
        "zlib1g=1:1.2.13.dfsg-1+deb12u1 bookworm-security zlib",
    ]
    # Read back as the pins, it leaves nothing to report.
    again = pins_module.resolve(
        recorded, served(PAM_INDICES), {e.package: e.version for e in recorded.values()}, "bookworm", LOCK
    )
    assert again.superseded == [] and again.refusals == []


def test_the_source_field_gives_the_source_package_name_without_its_version():
    text = textwrap.dedent(
        """\
        Package: libblkid1
        Source: util-linux (2.38.1-5+deb12u3)
        Version: 2.38.1-5+deb12u3

        Package: bash
        Version: 5.2.15-2+b13
        """
    )
    assert [(s.package, s.source) for s in pins_module.parse_packages(text, "bookworm")] == [
        ("libblkid1", "util-linux"),
        ("bash", "bash"),
    ]


@pytest.mark.parametrize(
    "line", ["bash=5.2.15-2+b13", "bash 5.2.15-2+b13 bookworm bash", "=1.0 bookworm x", "bash= bookworm bash"]
)
def test_a_malformed_lock_line_is_one_line_naming_the_file_and_line(line):
    with pytest.raises(SystemExit) as refused:
        lock(line)
    assert str(refused.value) == (
        f"{LOCK}:2: expected 'package=version suite[,suite...] source', got {line!r}"
    )


def test_the_committed_lock_pins_one_release_and_parses():
    pins = pins_module.parse_lock((ROOT / LOCK).read_text(), LOCK)
    assert {"python3", "libc6", "ca-certificates", "libstdc++6"} <= pins.keys()
    assert {pins_module.release_of(s) for p in pins.values() for s in p.suites} == {"bookworm"}


# -- Debian's version order ---------------------------------------------------------------------------

ORDERED = [
    ("1.0~rc1", "1.0"),
    ("1.0", "1.0+deb12u1"),
    ("1.5.2-6+deb12u2", "1.5.2-6+deb12u3"),
    ("2.36-9+deb12u7", "2.36-9+deb12u14"),  # numbers, not strings
    ("3.0.17-1~deb12u2", "3.0.22-1~deb12u2"),
    ("5.2.15-2+b2", "5.2.15-2+b13"),
    ("10.42-1", "10.42-1+deb12u2"),
    ("2.0", "1:1.2"),  # the epoch first
    ("1.0", "1.0a"),
    ("1.0", "1.0-1"),
    ("1.0~~", "1.0~"),
    ("1.0", "1.0."),
    ("20230311+deb12u1", "20250419~deb12u2"),
]


@pytest.mark.parametrize(("older", "newer"), ORDERED)
def test_versions_order_as_dpkg_orders_them(older, newer):
    assert pins_module.compare_versions(older, newer) == -1
    assert pins_module.compare_versions(newer, older) == 1
    assert pins_module.compare_versions(newer, newer) == 0


_PART = st.text(alphabet="0129ab+.~", min_size=1, max_size=6)
VERSIONS = st.builds(
    lambda epoch, upstream, revision: f"{epoch}{upstream}{revision}",
    st.sampled_from(["", "1:", "2:"]),
    st.builds(lambda digit, rest: digit + rest, st.sampled_from("0129"), _PART),
    st.one_of(st.just(""), _PART.map(lambda part: "-" + part)),
)


@pytest.mark.skipif(shutil.which("dpkg") is None, reason="dpkg is not installed")
@settings(max_examples=150)
@given(VERSIONS, VERSIONS)
def test_versions_order_as_dpkg_compare_versions_says(a, b):
    def holds(relation: str) -> bool:
        return (
            subprocess.run(["dpkg", "--compare-versions", a, relation, b], capture_output=True).returncode
            == 0
        )

    expected = -1 if holds("lt") else 0 if holds("eq") else 1
    assert pins_module.compare_versions(a, b) == expected


# -- the command build.sh runs ------------------------------------------------------------------------


def run_command(tmp_path: Path, lock_lines: list[str], *flags: str) -> subprocess.CompletedProcess:
    """debian_pins.py as build.sh runs it, on apt's lists as mmdebstrap leaves them."""
    lists = tmp_path / "lists"
    lists.mkdir(exist_ok=True)
    for suite, text in PAM_INDICES.items():
        (lists / f"deb.debian.org_debian_dists_{suite}_main_binary-amd64_Packages").write_text(text)
    (lists / "deb.debian.org_debian_dists_bookworm_InRelease").write_text("Codename: bookworm\n")
    (tmp_path / "lock").write_text("\n".join(lock_lines) + "\n")
    (tmp_path / "installed").write_text("libpam0g=1.5.2-6+deb12u3\nzlib1g=1:1.2.13.dfsg-1+deb12u1\n")
    script = ROOT / "deploy" / "image" / "debian_pins.py"
    arguments = [tmp_path / "lock", lists, tmp_path / "installed", "bookworm", tmp_path / "record"]
    return subprocess.run(
        [sys.executable, str(script), *map(str, arguments), *flags],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_command_reports_superseded_pins_and_writes_the_record(tmp_path):
    ran = run_command(
        tmp_path, ["libpam0g=1.5.2-6+deb12u2 bookworm pam", "zlib1g=1:1.2.13.dfsg-1 bookworm zlib"]
    )
    assert ran.returncode == 0 and ran.stderr == "", ran.stderr
    assert ran.stdout.splitlines() == [
        "build.sh: pin libpam0g 1.5.2-6+deb12u2 superseded by 1.5.2-6+deb12u3 (bookworm-security)",
        "build.sh: pin zlib1g 1:1.2.13.dfsg-1 superseded by 1:1.2.13.dfsg-1+deb12u1 (bookworm-security)",
    ]
    recorded = pins_module.parse_lock((tmp_path / "record").read_text(), "record")
    assert {p: e.version for p, e in recorded.items()} == {
        "libpam0g": "1.5.2-6+deb12u3",
        "zlib1g": "1:1.2.13.dfsg-1+deb12u1",
    }


def test_the_command_stops_a_release_change_with_one_line_and_writes_nothing(tmp_path):
    ran = run_command(
        tmp_path, ["libpam0g=1.7.0-5 trixie pam", "zlib1g=1:1.3.dfsg+really1.3.1-1+b1 trixie zlib"]
    )
    assert ran.returncode == 2 and ran.stdout == ""
    (line,) = ran.stderr.splitlines()
    assert line.startswith(
        f"build.sh: {tmp_path / 'lock'} pins packages of trixie, this build installs bookworm"
    )
    assert not (tmp_path / "record").exists()


def test_update_pins_writes_a_lock_that_then_checks_clean(tmp_path):
    ran = run_command(tmp_path, ["this line is not read"], "--update")
    assert ran.returncode == 0, ran.stderr
    written = (tmp_path / "record").read_text()
    (tmp_path / "record").unlink()
    ran = run_command(tmp_path, written.splitlines())
    assert ran.returncode == 0 and ran.stdout == "" and ran.stderr == ""
