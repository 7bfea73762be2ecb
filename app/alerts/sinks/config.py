"""The sinks' configs (a policy file's `[sinks.NAME]` tables) and their secrets, read from files or env.

Every config lives here, the vendors' included: the `SinkConfig` union needs them all, and the policy
parses sink tables without loading any sink.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import httpx
from pydantic import AfterValidator, BaseModel, Field, TypeAdapter, ValidationError, model_validator

from app.core.config import ConfigError
from app.core.models import Loc, StrictModel, dotted, validation_problems

PAGERDUTY_URL = "https://events.pagerduty.com/v2/enqueue"


class SinkConfigError(ConfigError):
    """A sink's configuration or secret file is unusable; the message names the sink and the file."""


def http_url(value: str) -> str:
    """`value` if it is an absolute http(s) URL with a host (a typo fails at load, not at 3 a.m.)."""
    try:
        url = httpx.URL(value)
    except (httpx.InvalidURL, TypeError) as e:
        raise ValueError(f"not a URL ({e})") from e
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError("must be an absolute http(s) URL with a host")
    return value


HttpUrlStr = Annotated[str, AfterValidator(http_url)]  # kept as written (pydantic's HttpUrl adds a "/")
EnvName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]  # an environment variable's name


class _HttpSinkConfig(StrictModel):
    """Retry knobs every HTTP sink shares."""

    attempts: int = Field(3, ge=1, le=10)
    """Deliveries tried in all (1: no retry)."""
    timeout_s: float = Field(10.0, gt=0, le=120)
    """Deadline of one attempt, connect to last byte."""
    backoff_s: float = Field(0.5, ge=0, le=60)
    """Base of the exponential backoff: the n-th retry waits a random time in [0, backoff_s * 2**(n-1)]."""
    backoff_max_s: float = Field(5.0, ge=0, le=300)
    """Cap of any wait between attempts, a server's `Retry-After` included."""


def _one_source(cfg: BaseModel, secret: str, *, required: bool) -> None:
    """A secret comes from a file (`SECRET_file`) or an environment variable (`SECRET_env`), not both."""
    given = [f"{secret}_{kind}" for kind in ("file", "env") if getattr(cfg, f"{secret}_{kind}") is not None]
    if len(given) > 1:
        raise ValueError(f"set {secret}_file or {secret}_env, not both")
    if required and not given:
        raise ValueError(f"{secret}_file or {secret}_env is required")


class PagerDutyConfig(_HttpSinkConfig):
    type: Literal["pagerduty"]
    routing_key_file: Path | None = None
    """File holding the Events API v2 integration key (mounted from Secret Manager)."""
    routing_key_env: EnvName | None = None
    """Or the environment variable holding it (a Cloud Run secret as an env var)."""
    url: HttpUrlStr = PAGERDUTY_URL
    """The Events API v2 endpoint (overridden in tests, or for the EU service region)."""
    client_name: str = Field("DiffusionGemma alert router", min_length=1)
    """The event's `client`, shown on the incident."""

    @model_validator(mode="after")
    def _secret(self) -> PagerDutyConfig:
        _one_source(self, "routing_key", required=True)
        return self


class SlackConfig(_HttpSinkConfig):
    type: Literal["slack"]
    webhook_url_file: Path | None = None
    """File holding the incoming-webhook URL (the URL is the credential)."""
    webhook_url_env: EnvName | None = None
    """Or the environment variable holding it."""

    @model_validator(mode="after")
    def _secret(self) -> SlackConfig:
        _one_source(self, "webhook_url", required=True)
        return self


class WebhookConfig(_HttpSinkConfig):
    type: Literal["webhook"]
    url: HttpUrlStr
    """Where the JSON document (`page_document` / `resolve_document`) is POSTed."""
    token_file: Path | None = None
    """File holding a token sent as `Authorization: Bearer`; none: no Authorization header."""
    token_env: EnvName | None = None
    """Or the environment variable holding it."""

    @model_validator(mode="after")
    def _secret(self) -> WebhookConfig:
        _one_source(self, "token", required=False)
        return self


class ConsoleConfig(StrictModel):
    type: Literal["console"]


SinkConfig = Annotated[
    PagerDutyConfig | SlackConfig | WebhookConfig | ConsoleConfig, Field(discriminator="type")
]
_SINK_CONFIG: TypeAdapter[SinkConfig] = TypeAdapter(SinkConfig)


def parse_sink_configs(raw: Mapping[str, Any], where: str = "sinks") -> dict[str, SinkConfig]:
    """Sink configs from plain data (a policy file's `[sinks.NAME]` tables). Raises SinkConfigError
    naming `where.NAME.field` for every problem."""
    out: dict[str, SinkConfig] = {}
    problems: list[str] = []
    for name, data in raw.items():
        try:
            out[name] = _SINK_CONFIG.validate_python(data)
        except ValidationError as e:
            tag = data.get("type") if isinstance(data, Mapping) else None
            problems.append(validation_problems(e, path=_field_of(f"{where}.{name}", tag)))
    if problems:
        raise SinkConfigError("; ".join(problems))
    return out


def _field_of(sink: str, tag: object) -> Callable[[Loc], str]:
    """A sink's field as `sink.field`: pydantic puts the union's tag ("pagerduty") first in the
    location, and the reader wrote no such key."""

    def path(loc: Loc) -> str:
        return dotted((sink, *(loc[1:] if loc and str(loc[0]) == tag else loc)))

    return path


def secret_of(sink: str, cfg: SinkConfig, secret: str) -> tuple[str, str] | None:
    """The secret's value and where it came from (for messages that never quote it), or None."""
    kind = cfg.type
    var = getattr(cfg, f"{secret}_env")
    if var is not None:
        value = os.environ.get(var, "").strip()
        if not value:
            raise SinkConfigError(f"sink {sink!r} ({kind}): {secret}_env {var!r} is not set or empty")
        if any(c.isspace() for c in value):
            raise SinkConfigError(f"sink {sink!r} ({kind}): {secret}_env {var!r} holds more than one token")
        return value, f"{secret}_env {var!r}"
    path = getattr(cfg, f"{secret}_file")
    if path is None:
        return None
    return _read_secret(sink, kind, f"{secret}_file", path), f"{secret}_file {str(path)!r}"


def _read_secret(sink: str, kind: str, field: str, path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError as e:
        raise SinkConfigError(f"sink {sink!r} ({kind}): {field} {str(path)!r} does not exist") from e
    except (OSError, UnicodeDecodeError) as e:
        raise SinkConfigError(
            f"sink {sink!r} ({kind}): {field} {str(path)!r} is not readable ({type(e).__name__})"
        ) from e
    if not text:
        raise SinkConfigError(f"sink {sink!r} ({kind}): {field} {str(path)!r} is empty")
    if any(c.isspace() for c in text):
        # Never echo the content: it is a secret.
        raise SinkConfigError(f"sink {sink!r} ({kind}): {field} {str(path)!r} holds more than one token")
    return text
