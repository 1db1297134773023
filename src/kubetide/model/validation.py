"""The API server's own validation rules for the fields kubetide reads, so that a dump the API
server could never have produced is refused (one ManifestError naming file, object and field)
rather than simulated.

The rules and limits are Kubernetes' (apimachinery's validation package and the core, apps and
policy validation): object names are RFC 1123 subdomains (namespaces and container names RFC 1123
labels), label keys are qualified names and label values at most 63 characters of a fixed
alphabet, at most one owner reference is the controller, int32 fields hold an int32. Each check
returns the problem in words, or None, so that the Reader path can raise it with the field's path
and the wire-schema path (model/pod_typed.py) can hand the object to the Reader path instead.
The checks on strings that recur in every object of a dump (label keys and values) are cached.
"""

from __future__ import annotations

import functools
import re

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
LABEL_VALUE_MAX = 63
QUALIFIED_NAME_MAX = 63

_DNS1123_LABEL = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME = re.compile(r"(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(?:(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")

# Kinds whose names are RFC 1123 labels rather than subdomains (the rest of those kubetide reads
# are subdomains: Node, Pod, PodDisruptionBudget, PriorityClass, ConfigMap and the workloads).
LABEL_NAMED_KINDS = frozenset({"Namespace"})


@functools.lru_cache(maxsize=4096)
def namespace_problem(namespace: str) -> str | None:
    """metadata.namespace: an RFC 1123 label (a dump's few namespaces recur in every object)."""
    return dns1123_label_problem(namespace)


def dns1123_label_problem(value: str) -> str | None:
    if len(value) > DNS1123_LABEL_MAX:
        return f"must be no more than {DNS1123_LABEL_MAX} characters, got {len(value)}"
    if _DNS1123_LABEL.fullmatch(value) is None:
        return (
            f"{value!r:.80} is not a lowercase RFC 1123 label: lower case alphanumeric characters or "
            "'-', starting and ending with an alphanumeric character"
        )
    return None


def dns1123_subdomain_problem(value: str) -> str | None:
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        return f"must be no more than {DNS1123_SUBDOMAIN_MAX} characters, got {len(value)}"
    if _DNS1123_SUBDOMAIN.fullmatch(value) is None:
        return (
            f"{value!r:.80} is not a lowercase RFC 1123 subdomain: lower case alphanumeric characters, "
            "'-' or '.', starting and ending with an alphanumeric character"
        )
    return None


# A CronJob's Jobs are named `<cronjob>-<scheduled minute>` (11 more characters) and their pods
# carry the Job's name as a label value (63 at most): the API server caps CronJob names at 52.
NAME_MAX = {"CronJob": 52}


def object_name_problem(kind: str, name: str) -> str | None:
    """metadata.name of an object of `kind` (never empty: the caller checks that first)."""
    limit = NAME_MAX.get(kind)
    if limit is not None and len(name) > limit:
        return f"must be no more than {limit} characters, got {len(name)}"
    if kind in LABEL_NAMED_KINDS:
        return dns1123_label_problem(name)
    return dns1123_subdomain_problem(name)


def path_segment_problem(name: str) -> str | None:
    """A name that goes into a URL path (an HPA's scaleTargetRef): not empty, `.` or `..`, no
    `/` or `%`, as the API server's ValidatePathSegmentName has it."""
    if not name:
        return "must not be empty"
    if name in (".", ".."):
        return f"may not be {name!r}"
    for bad in ("/", "%"):
        if bad in name:
            return f"may not contain {bad!r}"
    return None


@functools.lru_cache(maxsize=16384)
def label_key_problem(key: str) -> str | None:
    """A label key: a qualified name, `[prefix/]name` (prefix an RFC 1123 subdomain)."""
    prefix, slash, name = key.rpartition("/")
    if slash and not prefix:
        return f"label key {key!r:.80}: the prefix before '/' must not be empty"
    if slash:
        problem = dns1123_subdomain_problem(prefix)
        if problem is not None:
            return f"label key {key!r:.80}: prefix {problem}"
    if not name:
        return f"label key {key!r:.80}: the name part must not be empty"
    if len(name) > QUALIFIED_NAME_MAX:
        return f"label key {key!r:.80}: the name part must be no more than {QUALIFIED_NAME_MAX} characters"
    if _QUALIFIED_NAME.fullmatch(name) is None:
        return (
            f"label key {key!r:.80}: the name part must consist of alphanumeric characters, '-', '_' or "
            "'.', and must start and end with an alphanumeric character"
        )
    return None


@functools.lru_cache(maxsize=16384)
def label_value_problem(value: str) -> str | None:
    if len(value) > LABEL_VALUE_MAX:
        return f"label value must be no more than {LABEL_VALUE_MAX} characters, got {len(value)}"
    if _LABEL_VALUE.fullmatch(value) is None:
        return (
            f"label value {value!r:.80} must be empty or consist of alphanumeric characters, '-', '_' "
            "or '.', and must start and end with an alphanumeric character"
        )
    return None


# Label keys and values already found valid (a key's validity does not depend on its value). A
# dump's objects repeat a few thousand distinct ones, so nearly every object's labels are all
# known, which two C-speed scans over the dict's views tell without building a tuple per label:
# this runs on every object of a dump, and per-label calls cost a tenth of a large `plan`.
_VALID_KEYS: set[str] = set()
_VALID_VALUES: set[str] = set()
_KEPT = 100_000


def labels_problem(labels: dict[str, str]) -> tuple[str, str] | None:
    """(the offending key, the problem) for the first bad label, or None."""
    if labels.keys() <= _VALID_KEYS and all(map(_VALID_VALUES.__contains__, labels.values())):
        return None
    for key, value in labels.items():
        problem = label_key_problem(key) or label_value_problem(value)
        if problem is not None:
            return key, problem
        if len(_VALID_KEYS) < _KEPT and len(_VALID_VALUES) < _KEPT:
            _VALID_KEYS.add(key)
            _VALID_VALUES.add(value)
    return None


def int32_problem(value: int) -> str | None:
    if INT32_MIN <= value <= INT32_MAX:
        return None
    return f"{value} is out of range for an int32 field ({INT32_MIN} to {INT32_MAX})"


def percent_problem(value: int | str) -> str | None:
    """An IntOrString count or percentage of pods (a PDB's minAvailable, maxUnavailable)."""
    if isinstance(value, str):
        if int(value[:-1]) > 100:
            return f"must not be greater than 100%, got {value}"
        return None
    return int32_problem(value)


def duplicate_name(names: list[str]) -> str | None:
    """The first name given twice, or None."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None
