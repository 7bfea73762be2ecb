"""Go's `fmt` printing of a float and of a label map, as Prometheus templates show `{{ $value }}`
and `{{ $labels }}` (standard library only: the toy's training writes such templates too)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal


def go_value(v: float) -> str:
    """A float64 as Go's `fmt` prints it for `{{ $value }}` (%v: shortest digits, %e from 1e+06)."""
    if v == 0:
        return "0"
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    sign = "-" if v < 0 else ""
    digits, exp10 = _shortest(abs(v))
    nd, dp = len(digits), exp10
    exp = dp - 1
    if exp < -4 or exp >= 6:
        mant = digits[0] + ("." + digits[1:] if nd > 1 else "")
        return f"{sign}{mant}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if dp <= 0:
        return f"{sign}0.{'0' * -dp}{digits}"
    if dp >= nd:
        return f"{sign}{digits}{'0' * (dp - nd)}"
    return f"{sign}{digits[:dp]}.{digits[dp:]}"


def _shortest(v: float) -> tuple[str, int]:
    """The shortest round-trip decimal digits of v > 0 (Python's repr, as Go's) and the decimal
    point's place: v = 0.<digits> x 10**place."""
    d = Decimal(repr(v)).as_tuple()
    digits = "".join(map(str, d.digits))
    stripped = digits.lstrip("0")
    return stripped.rstrip("0"), len(stripped) + int(d.exponent)


def go_labels(labels: Mapping[str, str]) -> str:
    """`{{ $labels }}`: a Go map[string]string as fmt prints it, keys sorted."""
    return "map[" + " ".join(f"{k}:{labels[k]}" for k in sorted(labels)) + "]"
