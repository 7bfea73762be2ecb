"""What a rule's PromQL says of its firing alert: the threshold and a value on its firing side, the
label values its selectors fix, the labels its `by` clauses keep, whether it aggregates."""

from __future__ import annotations

import math
import random
import re

_NUM = r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_CMP = re.compile(rf"(>=|<=|==|!=|>|<)\s*(?:bool\s+)?\(?\s*({_NUM}(?:\s*[*/]\s*{_NUM})*)")


def threshold(query: str) -> tuple[str, float] | None:
    """The query's comparison against a number (`> 90`, `< 1e+9 * 0.9`): the first one outside
    parentheses, else the first one (`sum(x > 0) by (topic)`)."""
    found = list(_CMP.finditer(query))
    if not found:
        return None
    top = [m for m in found if query[: m.start()].count("(") == query[: m.start()].count(")")]
    m = (top or found)[0]
    parts = re.split(r"\s*([*/])\s*", m.group(2))
    t = float(parts[0])
    for op, num in zip(parts[1::2], parts[2::2], strict=True):
        t = t * float(num) if op == "*" else t / float(num)
    return m.group(1), t


def _counts(query: str) -> bool:
    """The value is a whole number: a count or an increase, not a rate, ratio or quantile."""
    return not re.search(r"\brate\(|histogram_quantile|/|avg|_seconds|_bytes|ratio|predict_linear", query)


def _percent(rule_name: str, query: str) -> bool:
    text = rule_name + " " + query
    return "%" in rule_name or "percent" in text.lower() or bool(re.search(r"\*\s*100\b|\b100\s*\*", query))


def firing_value(rng: random.Random, rule_name: str, query: str) -> float:
    """A value on the firing side of the rule's threshold, or a plausible one."""
    cmp = threshold(query)
    if cmp is None:
        if "absent(" in query or "vector(1)" in query:
            return 1.0
        return float(rng.randint(1, 12)) if _counts(query) else round(rng.uniform(1, 100), 2)
    op, t = cmp
    whole = _counts(query) and t == int(t)
    v: float
    if op == "==":
        return t
    if op == "!=":
        return 0.0 if t != 0 else 1.0
    if op in (">", ">="):
        if 1 <= t < 100 and _percent(rule_name, query):
            v = min(t * rng.uniform(1.1, 3.0), t + (100 - t) * rng.uniform(0.3, 0.9))
        elif whole:
            v = t + rng.randint(0 if op == ">=" else 1, max(1, int(abs(t) * 0.5)) + 3)
        elif t == 0:
            v = rng.uniform(0.02, 3)
        elif 0 < t < 1:
            v = min(t * rng.uniform(1.2, 4), t + (1 - t) * rng.uniform(0.2, 0.8))
        else:
            v = t * rng.uniform(1.05, 1.8) if t > 0 else t * rng.uniform(0.2, 0.95)
    else:  # < or <=
        if t > 0:
            if whole:
                v = float(rng.randint(0, math.ceil(t) - (1 if op == "<" else 0)))
            else:
                v = t * rng.uniform(0.05, 0.9)
        elif t == 0:
            v = 0.0 if op == "<=" else -rng.uniform(0.1, 5)
        else:
            v = t * rng.uniform(1.05, 1.8)
    return _round(v)


def _round(v: float) -> float:
    if v == int(v):
        return float(int(v))
    a = abs(v)
    if a >= 1000:
        return float(round(v))
    if a >= 10:
        return round(v, 2)
    if a >= 0.01:
        return round(v, 3)
    return float(f"{v:.3g}")


def matchers(query: str) -> dict[str, str]:
    """`name="value"` (or the first plain alternative of `name=~"a|b"`) from the query's selectors:
    the value the alert's series has for that label."""
    out: dict[str, str] = {}
    for name, op, value in re.findall(r'(\w+)\s*(=~|=)(?![=~])\s*"([^"]*)"', query):
        first = value.split("|")[0] if op == "=~" else value
        plain = r"[\w:/@-]+" if op == "=~" else r"[\w.:/@-]+"  # a regex's dot is not a value's
        if name not in out and re.fullmatch(plain, first):
            out[name] = first
    return out


AGGREGATION = re.compile(
    r"\b(?:sum|count|avg|min|max|topk|bottomk|quantile|stddev|stdvar|group|count_values|histogram_quantile)"
    r"\s*(?:(?:by|without)\s*\([^)]*\)\s*)?\("
)


def by_labels(query: str) -> list[str]:
    names: list[str] = []
    for group in re.findall(r"\bby\s*\(([^)]*)\)", query):
        for name in (n.strip() for n in group.split(",")):
            if name and name != "le" and name not in names:
                names.append(name)
    return names
