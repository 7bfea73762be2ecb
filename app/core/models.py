"""The one strict base of the kit's pydantic models (unknown fields are refused, and a parsed value
does not change afterwards), and the one rendering of pydantic's errors as a line of text."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

Loc = tuple[str | int, ...]
"""Where in the input an error is, as pydantic gives it: `("rules", 0, "name")`."""


class StrictModel(BaseModel):
    """Unknown fields are an error (a typo is refused, not ignored); instances are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def dotted(loc: Loc) -> str:
    """`("rules", 0, "name")` -> `rules.0.name`."""
    return ".".join(str(part) for part in loc)


def _message(error: Mapping[str, Any]) -> str:
    """pydantic's message, without the "Value error, " it puts before a validator's own words."""
    return str(error["msg"]).removeprefix("Value error, ")


def validation_problems(
    error: ValidationError,
    *,
    path: Callable[[Loc], str] = dotted,
    problem: Callable[[Mapping[str, Any]], str] = _message,
    most: int | None = None,
) -> str:
    """A ValidationError as one line: `where: what` for each error, joined by "; " (a problem that
    `path` places nowhere, alone). With `most`, the first `most` of them, then how many more."""
    errors = error.errors(include_url=False)
    shown = errors if most is None else errors[:most]
    parts = []
    for e in shown:
        where, what = path(tuple(e["loc"])), problem(e)
        parts.append(f"{where}: {what}" if where else what)
    if len(errors) > len(shown):
        parts.append(f"and {len(errors) - len(shown)} more")
    return "; ".join(parts)
