"""Go's and Prometheus's template printing, as a rule's `description` renders on the firing alert:
`{{ $value }}`, `{{ $labels.x }}`, printf and the humanize functions, and Liquid's alert name."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping

from evals.alerts.gofmt import go_labels, go_value


def _g4(v: float) -> str:
    return f"{v:.4g}"  # Go's %.4g and Python's agree (no '#' flag, same exponent rule)


def humanize(v: float) -> str:
    if v == 0 or math.isnan(v) or math.isinf(v):
        return _g4(v)
    prefix = ""
    if abs(v) >= 1:
        for p in ("k", "M", "G", "T", "P", "E", "Z", "Y"):
            if abs(v) < 1000:
                break
            prefix, v = p, v / 1000
        return _g4(v) + prefix
    for p in ("m", "u", "n", "p", "f", "a", "z", "y"):
        if abs(v) >= 1:
            break
        prefix, v = p, v * 1000
    return _g4(v) + prefix


def humanize1024(v: float) -> str:
    if abs(v) <= 1 or math.isnan(v) or math.isinf(v):
        return _g4(v)
    prefix = ""
    for p in ("ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"):
        if abs(v) < 1024:
            break
        prefix, v = p, v / 1024
    return _g4(v) + prefix


def humanize_duration(v: float) -> str:
    if math.isnan(v) or math.isinf(v):
        return _g4(v)
    if v == 0:
        return _g4(v) + "s"
    if abs(v) >= 1:
        sign = "-" if v < 0 else ""
        v = abs(v)
        d = int(v)
        s, m, h, days = d % 60, (d // 60) % 60, (d // 3600) % 24, d // 86400
        if days:
            return f"{sign}{days}d {h}h {m}m {s}s"
        if h:
            return f"{sign}{h}h {m}m {s}s"
        if m:
            return f"{sign}{m}m {s}s"
        return f"{sign}{_g4(v)}s"
    prefix = ""
    for p in ("m", "u", "n", "p", "f", "a", "z", "y"):
        if abs(v) >= 1:
            break
        prefix, v = p, v * 1000
    return f"{_g4(v)}{prefix}s"


_PRINTF = re.compile(r'^(?:printf\s+"%\.(\d)f"\s+\$value|\$value\s*\|\s*printf\s+"%\.(\d)f")$')
_PIPE = re.compile(r"^(?:\$value\s*\|\s*(\w+)|(\w+)\s+\$value)$")
_FUNCS: dict[str, Callable[[float], str]] = {
    "humanize": humanize,
    "humanize1024": humanize1024,
    "humanizeDuration": humanize_duration,
    "humanizePercentage": lambda v: "%.4g%%" % (v * 100),
}
_ACTION = re.compile(r"\{\{\s*(.*?)\s*\}\}")


def render(template: str, labels: Mapping[str, str], value: float) -> str:
    """The rule's Go template with `$labels` (the alert's labels without the rule's) and `$value`."""

    def one(m: re.Match[str]) -> str:
        expr = m.group(1)
        if expr == "$value":
            return go_value(value)
        if expr == "$labels":
            return go_labels(labels)
        if expr.startswith("$labels."):
            return labels[expr.removeprefix("$labels.")]
        if p := _PRINTF.match(expr):
            return f"{value:.{int(p.group(1) or p.group(2))}f}"
        if (f := _PIPE.match(expr)) and (f.group(1) or f.group(2)) in _FUNCS:
            return _FUNCS[f.group(1) or f.group(2)](value)
        raise ValueError(f"template action not understood: {m.group(0)}")

    return _ACTION.sub(one, template)


def liquid_alertname(name: str) -> str:
    """The alert name of `dist/template.yml`: Liquid `split: ' '`, `capitalize` each word (Ruby's:
    first letter up, the rest down), joined."""
    return "".join(w[:1].upper() + w[1:].lower() for w in name.split())
