"""The evals' domain errors (kept apart so that the CLI maps them without importing httpx)."""

from __future__ import annotations

from app.core.config import ConfigError
from app.core.errors import KitError


class EvalDataError(KitError, ValueError):
    """The labelled file cannot be used; the message names the line and the field."""

    exit_code = 2
    label = "eval data"


class EvalError(KitError, RuntimeError):
    """The service did not answer an item; the message says which and what it said."""

    exit_code = 1
    label = "eval"


class LabelledFileError(ConfigError):
    """`alerts eval`'s labelled file is not usable; the message names the file and the line."""


class AlertEvalError(KitError, RuntimeError):
    """The decision service did not answer an alert; the message names its line and what it said."""

    exit_code = 1
    label = "alerts eval"
