"""Print the part of requirements/ci.lock the image needs, hashes and markers kept.

The lock (`uv pip compile --universal --extra test`) holds the test tools too. The image gets
kubetide's own dependencies and the `aws` and `grpc` extras (one image for every overlay in
deploy/ and every expander), and everything those pull in, found from the lock's `# via`
comments: an entry belongs when one of the packages it is there for belongs, or when kubetide
asks for it directly. Nothing is resolved again, so every version and hash is the lock's.

Usage: python3 deploy/image/runtime_requirements.py requirements/ci.lock pyproject.toml > runtime.lock
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

IMAGE_EXTRAS = ("aws", "grpc")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    match = _NAME.match(requirement.strip())
    if match is None:
        raise SystemExit(f"pyproject.toml: cannot read a package name from {requirement!r}")
    return canonical(match.group(0))


def direct_dependencies(pyproject: Path) -> set[str]:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    names = {requirement_name(r) for r in project["dependencies"]}
    for extra in IMAGE_EXTRAS:
        names |= {requirement_name(r) for r in project["optional-dependencies"][extra]}
    return names


def lock_entries(lock: Path) -> list[tuple[str, list[str], set[str]]]:
    """(name, the entry's lines without its comments, the packages it is there for)."""
    entries: list[tuple[str, list[str], set[str]]] = []
    in_via = False
    for line in lock.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if not line[0].isspace():
            entries.append((requirement_name(line), [line], set()))
            in_via = False
            continue
        stripped = line.strip()
        if stripped.startswith("# via"):
            rest = stripped.removeprefix("# via").strip()
            if rest:
                entries[-1][2].add(requirement_name(rest))
            in_via = not rest
        elif stripped.startswith("#") and in_via:
            entries[-1][2].add(requirement_name(stripped.lstrip("#").strip()))
        elif not stripped.startswith("#"):
            entries[-1][1].append(line)
    return entries


def runtime_entries(lock: Path, pyproject: Path) -> list[tuple[str, list[str], set[str]]]:
    direct = direct_dependencies(pyproject)
    entries = lock_entries(lock)
    chosen: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, _, parents in entries:
            if name in chosen:
                continue
            if (name in direct and "kubetide" in parents) or parents & chosen:
                chosen.add(name)
                changed = True
    missing = direct - {name for name, _, _ in entries}
    if missing:
        raise SystemExit(f"{lock}: no entry for {', '.join(sorted(missing))}: re-lock with `bash .ci/lock`")
    return [entry for entry in entries if entry[0] in chosen]


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    for _, lines, _ in runtime_entries(Path(argv[1]), Path(argv[2])):
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
