"""The gateway's settings section (`dgemma serve`): `DGEMMA_*` env vars, one docstring each.

The settings tables of docs/operations.md are generated from the sections (`make docs`); CI fails when stale.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated

from pydantic import AliasChoices, AliasGenerator, Field, SecretStr, field_validator, model_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from app.core.config import KitSettings, comma_list
from app.jev.wire import ReadPolicy

# The read policy's `mode` has always been set by DGEMMA_READ_POLICY; its other fields keep
# their plain names (DGEMMA_REREAD_ENTROPY, ...).
_LEGACY_ENV = {"mode": "DGEMMA_READ_POLICY"}


def _legacy_env(name: str) -> AliasChoices | None:
    """The env var of a field whose name differs from it; None (pydantic: no alias) for the rest."""
    return AliasChoices(_LEGACY_ENV[name]) if name in _LEGACY_ENV else None


class GatewaySettings(KitSettings, ReadPolicy):
    """The gateway process. The read policy's fields (inherited from `ReadPolicy`) are the
    deployment's defaults, which a request's `read_policy` may override."""

    model_config = SettingsConfigDict(
        extra="ignore",
        alias_generator=AliasGenerator(validation_alias=_legacy_env),  # type: ignore[arg-type]
    )

    # -- network and engine ----------------------------------------------------------------------
    host: str = "127.0.0.1"
    """Address the gateway listens on (`0.0.0.0` in the container)."""
    port: int = Field(8080, validation_alias=AliasChoices("PORT", "DGEMMA_PORT"), ge=1, le=65535)
    """Gateway port. Cloud Run's `PORT` wins over `DGEMMA_PORT`."""
    engine_url: str = "http://127.0.0.1:8100"
    """Base URL of the vLLM server the gateway reads through; several, comma-separated, for several
    engines on one GPU (`DGEMMA_ENGINE_REPLICAS`: the supervisor sets this): each call goes to the
    one with the fewest calls in flight."""
    engine_timeout_s: float = Field(120.0, gt=0)
    """How long one engine call may take before the decision fails with 503. On the CPU stack a
    200-question decision takes about a minute (measured); an L4 should be far faster (projection)."""
    engine_max_options: int = Field(26, ge=2, le=26)
    """Options vLLM labels in one read (A-Z); larger choices are read hierarchically in chunks."""
    engine_max_questions: int = Field(64, ge=1, le=64)
    """Reads per call to vLLM's `/v1/systemone` (vLLM 0.32 allows 64)."""

    # -- models ----------------------------------------------------------------------------------
    served_model: str = "dgemma"
    """The model name vLLM serves (`--served-model-name`); answers carry this name."""
    model_aliases: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Extra names accepted in a request's `model`, comma-separated (`jev-latest` and `jev-preview`
    are always accepted)."""
    model_description: str = "DiffusionGemma structured decisions (one-step canvas reads) via vLLM."
    """Description shown by `GET /v1/models`."""
    model_release_date: dt.date = dt.date(2026, 11, 29)
    """Release date shown by `GET /v1/models` (YYYY-MM-DD)."""

    calibration_file: Path | None = None
    """Calibration file written by `dgemma calibrate`: label probabilities are temperature-scaled by
    it before re-read decisions and answers, for requests read under the policy it was fitted under.
    The gateway refuses to start if it was fitted on another model or read policy."""

    # -- auth ------------------------------------------------------------------------------------
    api_keys: Annotated[list[SecretStr], NoDecode] = Field(default_factory=list)
    """Accepted API keys, comma-separated."""
    api_keys_file: Path | None = None
    """File with one accepted API key per line (for a Secret Manager volume mount, which serves the
    secret's latest version on each read); read at start and every `DGEMMA_API_KEYS_RELOAD_S`."""
    api_keys_reload_s: float = Field(60.0, ge=0)
    """Seconds between reads of the keys file, so that an added or revoked key reaches running
    instances (0: read once at start). A file that cannot be read or holds no key keeps the keys in
    force, with a warning in the log."""
    allow_any_key: bool = False
    """With no keys configured, accept any bearer token (Jev clients always send one). Off, the
    gateway refuses to start without keys; on, it logs a warning at start. `dgemma dev` turns it on."""

    cache_isolation: bool = True
    """Salt the engine's prefix cache per API key (vLLM's `cache_salt`), so that one key's requests
    cannot tell from their latency whether another key sent the same state. Off, all keys share
    prefix-cache hits."""

    # -- limits and admission --------------------------------------------------------------------
    max_body_bytes: int = Field(4 * 1024 * 1024, ge=1024)
    """Largest request body, before and after decompression (413 beyond)."""
    max_questions: int = Field(256, ge=1)
    """Most questions per request (400 beyond). Hosted Jev takes at least 200."""
    max_reads_per_decision: int = Field(2048, ge=1)
    """Most engine reads one request may plan, counting every option order its read policy may use,
    chunk and final reads (400 beyond, naming the count). 256 questions under `adaptive` plan 768."""
    max_concurrent_decisions: int = Field(32, ge=1)
    """Admission capacity, in decisions of up to `engine_max_questions` planned reads; a larger decision
    takes one unit per started `engine_max_questions` reads. Later ones wait in the queue."""
    max_queued_decisions: int = Field(256, ge=0)
    """Decisions allowed to wait; beyond that the gateway answers 429 with Retry-After."""
    decision_deadline_s: float | None = Field(9.5, gt=0)
    """How long a client waits for a decision, from its arrival, unless its request says
    (`X-Request-Timeout`, seconds; the kit's Jev client sends its timeout less 0.5 s). A decision
    waits in line only while the time it has left exceeds the longest of the last 16 decisions'
    reads, then gets 429 with Retry-After. One whose client stated its timeout is cut there, its
    reads cancelled, with 503 and Retry-After. The SDK gives up after 10 s by default and states
    nothing: 9.5 leaves its answer time to arrive. Empty: requests that state none wait in line."""
    max_queue_wait_s: float | None = Field(None, gt=0)
    """Longest a decision waits in line for a slot, on top of the deadline; then 429 with
    Retry-After. Empty (the default): the deadline alone bounds the wait."""
    retry_after_s: int = Field(2, ge=1)
    """Seconds clients are told to wait (Retry-After) on 429 and 503."""

    @field_validator("model_aliases", "api_keys", mode="before")
    @classmethod
    def _split_commas(cls, value: object) -> object:
        return comma_list(value)

    @model_validator(mode="after")
    def _check_keys_file(self) -> GatewaySettings:
        if self.api_keys_file is not None and not self.api_keys_file.is_file():
            raise ValueError(f"DGEMMA_API_KEYS_FILE={self.api_keys_file} is not a readable file")
        return self

    @property
    def read_policy(self) -> ReadPolicy:
        """The deployment's default read policy."""
        return ReadPolicy.model_validate(self.model_dump(include=set(ReadPolicy.model_fields)))

    @property
    def model_names(self) -> tuple[str, ...]:
        """Every name a request may use for the served model, the served name first."""
        names = [self.served_model, "jev-latest", "jev-preview", *self.model_aliases]
        return tuple(dict.fromkeys(names))
