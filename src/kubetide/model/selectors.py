"""Label selectors and node selector requirements, with Kubernetes matching semantics."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kubetide.model.reader import Reader

LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
NODE_OPERATORS = (*LABEL_OPERATORS, "Gt", "Lt")


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "In":
            return self.key in labels and labels[self.key] in self.values
        if op == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        # Gt / Lt: both sides must parse as integers, otherwise the requirement does not match.
        if self.key not in labels:
            return False
        try:
            have = int(labels[self.key])
            want = int(self.values[0])
        except (ValueError, IndexError):
            return False
        return have > want if op == "Gt" else have < want


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """metav1.LabelSelector. An empty selector matches everything."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        return all(req.matches(labels) for req in self.match_expressions)

    @property
    def empty(self) -> bool:
        return not self.match_labels and not self.match_expressions

    def describe(self) -> str:
        parts = [f"{k}={v}" for k, v in self.match_labels]
        for req in self.match_expressions:
            if req.operator in ("Exists", "DoesNotExist"):
                parts.append(("!" if req.operator == "DoesNotExist" else "") + req.key)
            else:
                parts.append(f"{req.key} {req.operator.lower()} ({','.join(req.values)})")
        return ",".join(parts) or "<all>"


def parse_requirement(reader: Reader, operators: tuple[str, ...]) -> Requirement:
    key = reader.str("key", required=True)
    operator = reader.str("operator", required=True)
    if operator not in operators:
        raise reader.error(
            f'unknown operator "{operator}" (expected one of {", ".join(operators)})', "operator"
        )
    values = tuple(reader.str_list("values"))
    if operator in ("In", "NotIn") and not values:
        raise reader.error(f"operator {operator} needs at least one value", "values")
    if operator in ("Exists", "DoesNotExist") and values:
        raise reader.error(f"operator {operator} takes no values", "values")
    if operator in ("Gt", "Lt"):
        if len(values) != 1:
            raise reader.error(f"operator {operator} needs exactly one value", "values")
        try:
            int(values[0])
        except ValueError:
            raise reader.error(f'operator {operator} needs an integer, got "{values[0]}"', "values") from None
    return Requirement(key, operator, values)


def parse_label_selector(reader: Reader) -> LabelSelector:
    labels = reader.str_map("matchLabels")
    expressions = tuple(parse_requirement(r, LABEL_OPERATORS) for r in reader.items("matchExpressions"))
    return LabelSelector(tuple(sorted(labels.items())), expressions)


def optional_label_selector(reader: Reader, key: str) -> LabelSelector | None:
    """A selector field where absent (null) means "matches nothing", unlike an empty one."""
    if reader.raw(key) is None:
        return None
    return parse_label_selector(reader.child(key))
