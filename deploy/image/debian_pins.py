"""Check the Debian packages build.sh installed against deploy/image/debian-packages.lock.

The lock pins one Debian release (its suites: bookworm, bookworm-updates, bookworm-security).
Debian's archive keeps one version of a package per suite, so a pin taken one week is superseded
the next by a security update or a point release, and the old version can no longer be installed.
The policy:

- the image gets what apt installs: for each package the newest version the pinned release's
  suites serve (an update of that release, which is what its security fixes are);
- a pin that version supersedes is reported, one line each:
  `pin libpam0g 1.5.2-6+deb12u2 superseded by 1.5.2-6+deb12u3 (bookworm-security)`;
- the build stops, one line per cause, on anything that is not an update of the pinned release:
  the lock pinning another release than the build installs (bookworm -> trixie, one line for the
  whole lock), a version older than its pin, another epoch, another source package, a backport or
  a version marked for another release (`~deb13u1` under a `+deb12u3` pin), a package installed
  that the lock does not pin, or a pin no longer installed;
- what was installed is written in the lock's own format, each package with the suites that serve
  its version and its source package: into the image (/usr/share/kubetide/debian-packages.lock),
  next to the build's output, and over the lock with `build.sh --update-pins`.

Within one release Debian only publishes updates of that release (stable updates, point releases,
security updates), so the suite is what says "same release"; the version checks say "an update of
the pinned one". Standard library only: it runs on the build machine's python3.

Usage: python3 deploy/image/debian_pins.py LOCK LISTS_DIR INSTALLED RELEASE RECORD [--update]
  LOCK       deploy/image/debian-packages.lock
  LISTS_DIR  the image's /var/lib/apt/lists as mmdebstrap left it (the suites' Packages indices)
  INSTALLED  `dpkg-query -W -f '${Package}=${Version}\\n'` of the image
  RELEASE    the Debian release build.sh installs (bookworm)
  RECORD     where to write what was installed, in the lock's format
  --update   write RECORD over LOCK instead of checking the pins
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

# Debian's marks of a version built for one release: `+deb12u3`, `~deb12u1` (stable updates) and
# `~bpo12+1` (backports, which are not updates of the release).
_RELEASE_MARK = re.compile(r"deb(\d+)u\d")
_BACKPORT_MARK = re.compile(r"~bpo\d")
_LIST_SUITE = re.compile(r"_dists_([^_]+)_")
_DIGITS = frozenset("0123456789")
_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


@dataclass(frozen=True, slots=True)
class Served:
    """One stanza of a suite's Packages index."""

    package: str
    version: str
    source: str  # the source package the binary was built from
    suite: str  # the suite's codename: bookworm, bookworm-security


@dataclass(frozen=True, slots=True)
class Entry:
    """One line of the lock: a package, its version, the suites serving it, its source package."""

    package: str
    version: str
    suites: tuple[str, ...]
    source: str

    def line(self) -> str:
        return f"{self.package}={self.version} {','.join(self.suites)} {self.source}"


@dataclass(frozen=True, slots=True)
class Outcome:
    entries: list[Entry]  # what was installed, by package name
    superseded: list[str]  # one line per pin a newer update of the release replaced
    refusals: list[str]  # one line per reason the build must stop


# -- Debian versions ------------------------------------------------------------------------------


def _split(version: str) -> tuple[int, str, str]:
    """(epoch, upstream version, Debian revision) as Debian Policy 5.6.12 defines them."""
    epoch, colon, rest = version.partition(":")
    if not colon:
        epoch, rest = "0", version
    upstream, hyphen, revision = rest.rpartition("-")
    if not hyphen:
        upstream, revision = rest, "0"
    return int(epoch or "0"), upstream, revision


def _char_order(char: str) -> int:
    # `~` sorts before anything, even the end of the string; letters before the other characters.
    if char == "~":
        return -1
    if char in _LETTERS:
        return ord(char)
    return ord(char) + 256


def _compare_part(a: str, b: str) -> int:
    """Compare upstream versions or revisions: alternating non-digit and digit runs."""
    i = j = 0
    while i < len(a) or j < len(b):
        # Non-digits, character by character; a digit or the end counts 0 here, which no other
        # character does, so the loop only goes on past characters that are equal.
        while (i < len(a) and a[i] not in _DIGITS) or (j < len(b) and b[j] not in _DIGITS):
            left = _char_order(a[i]) if i < len(a) and a[i] not in _DIGITS else 0
            right = _char_order(b[j]) if j < len(b) and b[j] not in _DIGITS else 0
            if left != right:
                return -1 if left < right else 1
            i, j = i + 1, j + 1
        start_i, start_j = i, j
        while i < len(a) and a[i] in _DIGITS:
            i += 1
        while j < len(b) and b[j] in _DIGITS:
            j += 1
        left_number, right_number = int(a[start_i:i] or "0"), int(b[start_j:j] or "0")
        if left_number != right_number:
            return -1 if left_number < right_number else 1
    return 0


def compare_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as `dpkg --compare-versions` orders a and b."""
    epoch_a, upstream_a, revision_a = _split(a)
    epoch_b, upstream_b, revision_b = _split(b)
    if epoch_a != epoch_b:
        return -1 if epoch_a < epoch_b else 1
    return _compare_part(upstream_a, upstream_b) or _compare_part(revision_a, revision_b)


# -- inputs -----------------------------------------------------------------------------------------


def parse_packages(text: str, suite: str) -> list[Served]:
    """The stanzas of a Packages index (deb822: fields, blank lines between stanzas)."""
    served: list[Served] = []
    fields: dict[str, str] = {}
    for line in [*text.splitlines(), ""]:
        if not line.strip():
            if "Package" in fields and "Version" in fields:
                package = fields["Package"]
                # `Source: util-linux (2.38.1-5+deb12u3)`: the name, without a differing version;
                # no Source field means the source package has the binary's name.
                source = fields.get("Source", package).split(" ", 1)[0] or package
                served.append(Served(package, fields["Version"], source, suite))
            fields = {}
        elif not line[0].isspace():
            name, _, value = line.partition(":")
            fields[name] = value.strip()
    return served


def parse_lock(text: str, path: str) -> dict[str, Entry]:
    """The lock's pins by package; a malformed line is one line naming the file and line."""
    pins: dict[str, Entry] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        package, equals, version = fields[0].partition("=")
        if len(fields) != 3 or not equals or not package or not version:
            raise SystemExit(
                f"{path}:{number}: expected 'package=version suite[,suite...] source', got {line!r}"
            )
        pins[package] = Entry(package, version, tuple(fields[1].split(",")), fields[2])
    return pins


def parse_installed(text: str) -> dict[str, str]:
    installed = {}
    for line in text.splitlines():
        package, _, version = line.strip().partition("=")
        if package:
            installed[package] = version
    return installed


def release_of(suite: str) -> str:
    """bookworm-security -> bookworm."""
    return suite.split("-", 1)[0]


# -- the policy -------------------------------------------------------------------------------------


def installed_entries(
    installed: Mapping[str, str], served: Iterable[Served], release: str
) -> tuple[list[Entry], list[str]]:
    """The installed packages as lock entries, and a refusal for each that is not the newest
    version the release serves (apt's choice, so a mirror that changed during the build)."""
    newest: dict[str, list[Served]] = {}
    for stanza in served:
        if release_of(stanza.suite) != release:
            continue
        known = newest.get(stanza.package)
        order = 1 if known is None else compare_versions(stanza.version, known[0].version)
        if order > 0:
            newest[stanza.package] = [stanza]
        elif order == 0 and known is not None:
            known.append(stanza)
    entries, refusals = [], []
    for package in sorted(installed):
        version = installed[package]
        candidates = newest.get(package)
        if candidates is None:
            refusals.append(f"{package} {version} is installed but no suite of {release} serves it")
            continue
        if candidates[0].version != version:
            refusals.append(
                f"{package}: {version} installed, but {release} serves {candidates[0].version}"
                " (the mirror changed during the build: build again)"
            )
            continue
        # The release's own suite first, then -updates, then -security.
        suites = tuple(sorted({c.suite for c in candidates}, key=lambda suite: (len(suite), suite)))
        entries.append(Entry(package, version, suites, candidates[0].source))
    return entries, refusals


def _not_an_update(pin: Entry, entry: Entry) -> str | None:
    """Why `entry` is not an update of `pin` within one release, or None if it is one."""
    if compare_versions(entry.version, pin.version) < 0:
        return "older than the pin"
    if _split(entry.version)[0] != _split(pin.version)[0]:
        return "another epoch"
    if entry.source != pin.source:
        return f"built from the source package {entry.source}, the pin from {pin.source}"
    if _BACKPORT_MARK.search(entry.version):
        return "a backport"
    marks, pinned_marks = set(_RELEASE_MARK.findall(entry.version)), set(_RELEASE_MARK.findall(pin.version))
    if marks and pinned_marks and marks != pinned_marks:
        return f"a version for Debian {'/'.join(sorted(marks))}, the pin's is for Debian {'/'.join(sorted(pinned_marks))}"
    return None


def check_pins(pins: Mapping[str, Entry], entries: Iterable[Entry], release: str, lock: str) -> Outcome:
    entries = list(entries)
    pinned_releases = sorted({release_of(suite) for pin in pins.values() for suite in pin.suites})
    if pinned_releases != [release]:
        return Outcome(
            entries,
            [],
            [
                f"{lock} pins packages of {', '.join(pinned_releases) or 'no release'}, this build installs"
                f" {release}: a release change; review the packages, then run"
                " deploy/image/build.sh --update-pins and commit the lock"
            ],
        )
    superseded, refusals = [], []
    by_package = {entry.package: entry for entry in entries}
    for package in sorted(pins.keys() | by_package.keys()):
        pin, entry = pins.get(package), by_package.get(package)
        if entry is None:
            assert pin is not None
            refusals.append(f"pin {package} {pin.version}: no longer installed")
        elif pin is None:
            refusals.append(
                f"{package} {entry.version} ({','.join(entry.suites)}) is installed but not pinned in {lock}"
            )
        elif entry.version != pin.version:
            why = _not_an_update(pin, entry)
            if why is None:
                superseded.append(
                    f"pin {package} {pin.version} superseded by {entry.version} ({','.join(entry.suites)})"
                )
            else:
                refusals.append(
                    f"pin {package} {pin.version}: {release} serves {entry.version}"
                    f" ({','.join(entry.suites)}), which is not an update of it ({why})"
                )
    return Outcome(entries, superseded, refusals)


def resolve(
    pins: Mapping[str, Entry], served: Iterable[Served], installed: Mapping[str, str], release: str, lock: str
) -> Outcome:
    entries, refusals = installed_entries(installed, served, release)
    outcome = check_pins(pins, entries, release, lock)
    return Outcome(outcome.entries, outcome.superseded, refusals + outcome.refusals)


def record(entries: Iterable[Entry], release: str, superseded: Iterable[str]) -> str:
    """The lock's text: the pins, or what an image holds (with the pins it found superseded)."""
    lines = [
        f"# The Debian packages of kubetide's image (deploy/image/build.sh), one release: {release}.",
        "# package=version, the suites that served that version, its source package.",
        f"# A pin a newer update of {release} supersedes (a security update, a point release) is installed",
        "# at the newer version and reported; anything else that differs stops the build",
        "# (deploy/image/debian_pins.py). Rewrite with deploy/image/build.sh --update-pins.",
        *(f"# {line}" for line in superseded),
        *(entry.line() for entry in entries),
    ]
    return "\n".join(lines) + "\n"


# -- the command ------------------------------------------------------------------------------------


def read_lists(lists: Path) -> list[Served]:
    """Every Packages index apt fetched, with the suite its file name gives."""
    served: list[Served] = []
    for index in sorted(lists.glob("*_Packages")):
        match = _LIST_SUITE.search(index.name)
        if match is None:
            raise SystemExit(f"{index}: no suite in the index's name")
        served += parse_packages(index.read_text(encoding="utf-8"), match.group(1))
    if not served:
        raise SystemExit(f"{lists}: no Packages index (was mmdebstrap run with --skip=cleanup/apt/lists?)")
    return served


def main(argv: list[str]) -> int:
    update = "--update" in argv
    args = [arg for arg in argv[1:] if arg != "--update"]
    if len(args) != 5:
        print(__doc__.split("Usage: ", 1)[1].splitlines()[0], file=sys.stderr)
        return 2
    lock, lists, installed, release, record_path = args
    served = read_lists(Path(lists))
    installed_versions = parse_installed(Path(installed).read_text(encoding="utf-8"))
    if update:
        entries, refusals = installed_entries(installed_versions, served, release)
        outcome = Outcome(entries, [], refusals)
    else:
        pins = parse_lock(Path(lock).read_text(encoding="utf-8"), lock)
        outcome = resolve(pins, served, installed_versions, release, lock)
    for line in outcome.refusals:
        print(f"build.sh: {line}", file=sys.stderr)
    if outcome.refusals:
        return 2
    for line in outcome.superseded:
        print(f"build.sh: {line}")
    Path(record_path).write_text(record(outcome.entries, release, outcome.superseded), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
