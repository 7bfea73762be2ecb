"""The corpus's tables (data/*.toml: terms, subjects, technologies, phrasings, senders, weights,
kinds, state kinds, states), read with tomllib, and a mix's entries laid over a table."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"


def table(name: str) -> dict[str, Any]:
    """One data file, as tomllib reads it."""
    with (DATA / f"{name}.toml").open("rb") as f:
        return tomllib.load(f)


def frozen(value: Any) -> Any:
    """Arrays as tuples, at every depth: the tables the code reads as tuples."""
    if isinstance(value, dict):
        return {k: frozen(v) for k, v in value.items()}
    if isinstance(value, list):
        return tuple(frozen(v) for v in value)
    return value


def with_mix(base: dict[str, Any], mix: dict[str, Any], where: str = "mix") -> dict[str, Any]:
    """`base` with `mix`'s entries in place of its own, a table's entries one by one (the key order
    of `base` kept). A mix names only entries `base` has, a number for a number and a table for a
    table: a typo is an error (ValueError, one line), not an entry nothing reads."""
    out = dict(base)
    for key, value in mix.items():
        name = f"{where}.{key}"
        if key not in base:
            raise ValueError(f"{name}: no such entry (known: {', '.join(base)})")
        if isinstance(base[key], dict):
            if not isinstance(value, dict):
                raise ValueError(f"{name}: a table is needed, got {value!r}")
            out[key] = with_mix(base[key], value, name)
        elif isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{name}: a number is needed, got {value!r}")
        else:
            out[key] = float(value) if isinstance(base[key], float) else value
    return out
