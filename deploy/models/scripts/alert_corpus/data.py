"""The corpus's tables (data/*.toml: terms, subjects, technologies, phrasings, senders, weights,
kinds, state kinds, states), read with tomllib."""

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
