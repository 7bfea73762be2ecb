"""The eval's domain errors (kept apart so that the CLI maps them without importing httpx)."""

from __future__ import annotations


class EvalDataError(ValueError):
    """The labelled file cannot be used; the message names the line and the field."""


class EvalError(RuntimeError):
    """The service did not answer an item; the message says which and what it said."""
