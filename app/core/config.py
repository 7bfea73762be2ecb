"""What every settings section shares: the `DGEMMA_` prefix, logging knobs, loading with clear
errors, env-var names (for the generated settings tables and child processes) and a redacted view for logs.

Each process owns one section (`app.gateway.settings.GatewaySettings`,
`deploy.runtime.settings.SupervisorSettings`, ...); a section is read once, at its entry point.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, Literal, TypeVar

from pydantic import AliasChoices, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.core.errors import KitError
from app.core.models import Loc, validation_problems

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]
PREFIX = "DGEMMA_"


class ConfigError(KitError, ValueError):
    """A setting or flag is invalid; the message names the env var or flag and what is wrong."""

    exit_code = 2
    label = "invalid configuration"


class KitSettings(BaseSettings):
    """Base of every section: `DGEMMA_*` env vars, frozen, documented by attribute docstrings."""

    model_config = SettingsConfigDict(
        env_prefix=PREFIX,
        env_ignore_empty=True,
        extra="ignore",
        use_attribute_docstrings=True,
        frozen=True,
        populate_by_name=True,
    )

    log_level: LogLevel = "INFO"
    """Log level of every process (JSON lines on stderr, with Cloud Logging's `severity`)."""
    gcp_project: str | None = Field(
        None, validation_alias=AliasChoices("DGEMMA_GCP_PROJECT", "GOOGLE_CLOUD_PROJECT")
    )
    """Google Cloud project id. Request logs then carry `logging.googleapis.com/trace` as
    `projects/ID/traces/TRACE` from `X-Cloud-Trace-Context`, which joins them to Cloud Run's
    request log; unset, only the trace id is logged."""


S = TypeVar("S", bound=KitSettings)


def load(section: type[S], defaults: Mapping[str, Any] | None = None, **overrides: Any) -> S:
    """A section from the environment. `overrides` (command-line flags; None means not given) beat
    the environment; `defaults` apply only where neither set a value. Raises ConfigError."""
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        settings = section(**given)
        missing = {k: v for k, v in (defaults or {}).items() if k not in settings.model_fields_set}
        return section(**given, **missing) if missing else settings
    except ValidationError as e:
        names = env_names(section)

        def setting(loc: Loc) -> str:  # a field's env var names; the section, for a model-wide check
            field = str(loc[0]) if loc else ""
            return " / ".join(names.get(field, (field or section.__name__,)))

        raise ConfigError("invalid setting " + validation_problems(e, path=setting)) from e


def env_names(section: type[KitSettings]) -> dict[str, tuple[str, ...]]:
    """Every field's env var name(s), the preferred one first."""
    prefix = section.model_config.get("env_prefix", "")
    out: dict[str, tuple[str, ...]] = {}
    for name, f in section.model_fields.items():
        alias = f.validation_alias
        if isinstance(alias, AliasChoices):
            out[name] = tuple(str(a) for a in alias.choices)
        elif isinstance(alias, str):
            out[name] = (alias,)
        else:
            out[name] = (f"{prefix}{name.upper()}",)
    return out


def comma_list(value: object) -> object:
    """A list setting's env value, comma-separated (as `to_env` writes it), into its items."""
    return [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else value


def _env_value(value: Any) -> str:
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(_env_value(v) for v in value)
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)  # numbers, paths, strings


def to_env(settings: KitSettings) -> dict[str, str]:
    """The section as env vars, so a child process reads exactly these settings back."""
    names = env_names(type(settings))
    values = {name: getattr(settings, name) for name in type(settings).model_fields}
    return {names[k][0]: _env_value(v) for k, v in values.items() if v is not None}


def redacted(settings: KitSettings) -> dict[str, Any]:
    """The resolved settings for a start-up log line; secrets show as `**********`."""
    data: dict[str, Any] = settings.model_dump(mode="json")
    return data
