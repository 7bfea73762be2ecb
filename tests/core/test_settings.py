"""Settings by process: sections, unchanged env var names, loading, child-process round trip."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from app.core.config import ConfigError, KitSettings, env_names, load, redacted, to_env
from app.gateway.settings import GatewaySettings
from deploy.runtime.settings import EngineSettings, SupervisorSettings
from loadtest.settings import LoadtestSettings
from scripts.gen_docs import SECTIONS, declared

pytestmark = pytest.mark.unit

# Every env var of the flat Settings before the split (README of 2026-11-30), with a valid
# non-default value, and where it must land now: no name was renamed.
BEFORE_THE_SPLIT: list[tuple[str, str, type[KitSettings], str, Any]] = [
    ("DGEMMA_HOST", "0.0.0.0", GatewaySettings, "host", "0.0.0.0"),
    ("DGEMMA_PORT", "9001", GatewaySettings, "port", 9001),
    ("DGEMMA_ENGINE_URL", "http://e:1", GatewaySettings, "engine_url", "http://e:1"),
    ("DGEMMA_ENGINE_TIMEOUT_S", "7", GatewaySettings, "engine_timeout_s", 7.0),
    ("DGEMMA_SERVED_MODEL", "m", GatewaySettings, "served_model", "m"),
    ("DGEMMA_MODEL_ALIASES", "a, b", GatewaySettings, "model_aliases", ["a", "b"]),
    ("DGEMMA_MODEL_DESCRIPTION", "d", GatewaySettings, "model_description", "d"),
    ("DGEMMA_MODEL_RELEASE_DATE", "2026-01-02", GatewaySettings, "model_release_date", dt.date(2026, 1, 2)),
    ("DGEMMA_API_KEYS", "k1,k2", GatewaySettings, "api_keys", ["k1", "k2"]),
    ("DGEMMA_MAX_BODY_BYTES", "2048", GatewaySettings, "max_body_bytes", 2048),
    ("DGEMMA_MAX_QUESTIONS", "9", GatewaySettings, "max_questions", 9),
    ("DGEMMA_MAX_CONCURRENT_DECISIONS", "3", GatewaySettings, "max_concurrent_decisions", 3),
    ("DGEMMA_MAX_QUEUED_DECISIONS", "4", GatewaySettings, "max_queued_decisions", 4),
    ("DGEMMA_RETRY_AFTER_S", "5", GatewaySettings, "retry_after_s", 5),
    ("DGEMMA_READ_POLICY", "debias", GatewaySettings, "mode", "debias"),
    ("DGEMMA_REREAD_ENTROPY", "0.5", GatewaySettings, "reread_entropy", 0.5),
    ("DGEMMA_EXTRA_READS", "4", GatewaySettings, "extra_reads", 4),
    ("DGEMMA_DEBIAS_READS", "5", GatewaySettings, "debias_reads", 5),
    ("DGEMMA_ENGINE_MAX_OPTIONS", "10", GatewaySettings, "engine_max_options", 10),
    ("DGEMMA_ENGINE_MAX_QUESTIONS", "16", GatewaySettings, "engine_max_questions", 16),
    ("DGEMMA_LOG_LEVEL", "DEBUG", GatewaySettings, "log_level", "DEBUG"),
    ("DGEMMA_ENGINE_MODE", "gpu", EngineSettings, "engine_mode", "gpu"),
    (
        "DGEMMA_ENGINE_ATTENTION_BACKEND",
        "FLEX_ATTENTION",
        EngineSettings,
        "engine_attention_backend",
        "FLEX_ATTENTION",
    ),
    ("DGEMMA_ENGINE_GPU", "a100-40gb", EngineSettings, "engine_gpu", "a100-40gb"),
    ("DGEMMA_ENGINE_MAX_NUM_SEQS", "8", EngineSettings, "engine_max_num_seqs", 8),
    ("DGEMMA_ENGINE_CANVAS", "48", EngineSettings, "engine_canvas", 48),
    ("DGEMMA_ENGINE_PROMPT_TOKENS", "200", EngineSettings, "engine_prompt_tokens", 200),
    ("DGEMMA_ENGINE_GPU_MEMORY_UTILIZATION", "0.5", EngineSettings, "engine_gpu_memory_utilization", 0.5),
    ("DGEMMA_ENGINE_PORT", "8200", EngineSettings, "engine_port", 8200),
    ("DGEMMA_ENGINE_PYTHON", "/x/python", EngineSettings, "engine_python", Path("/x/python")),
    ("DGEMMA_MODEL_DIR", "/w", EngineSettings, "model_dir", Path("/w")),
    ("DGEMMA_ENGINE_MAX_MODEL_LEN", "512", EngineSettings, "engine_max_model_len", 512),
    ("DGEMMA_ENGINE_DTYPE", "float16", EngineSettings, "engine_dtype", "float16"),
    ("DGEMMA_WEIGHTS_URL", "gs://b/p", SupervisorSettings, "weights_url", "gs://b/p"),
    ("DGEMMA_ENGINE_STARTUP_TIMEOUT_S", "60", SupervisorSettings, "engine_startup_timeout_s", 60.0),
    ("DGEMMA_SHUTDOWN_GRACE_S", "8", SupervisorSettings, "shutdown_grace_s", 8.0),
]


@pytest.mark.parametrize(("env", "raw", "section", "field", "expected"), BEFORE_THE_SPLIT)
def test_every_env_var_keeps_its_name(
    monkeypatch: pytest.MonkeyPatch, env: str, raw: str, section: type[KitSettings], field: str, expected: Any
) -> None:
    default = getattr(section(), field)
    monkeypatch.setenv(env, raw)
    value = getattr(section(), field)
    if field == "api_keys":
        value = [k.get_secret_value() for k in value]
    assert value == expected != default
    assert env in env_names(section)[field]


def test_every_section_is_documented_and_names_are_not_shared() -> None:
    seen: dict[str, str] = {}
    for heading, section, _, _ in SECTIONS:
        for name in declared(section):
            f = section.model_fields[name]
            assert f.description, f"{section.__name__}.{name} has no docstring"
            for env in env_names(section)[name]:
                assert env.startswith("DGEMMA_") or env in ("PORT", "GOOGLE_CLOUD_PROJECT"), env
                # Cloud Run's PORT is each service's own: the gateway's and the router's.
                assert env == "PORT" or env not in seen, f"{env} is declared by {seen[env]} and {heading}"
                seen[env] = heading
    assert "DGEMMA_READ_POLICY" in seen and "DGEMMA_LOADTEST_API_KEY" in seen
    assert "DGEMMA_ALERTS_DECISION_BUDGET_S" in seen


def test_the_gateway_does_not_validate_engine_or_gpu_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DGEMMA_ENGINE_ATTENTION_BACKEND", "FLASHINFER")
    monkeypatch.setenv("DGEMMA_ENGINE_CANVAS", "1")
    assert GatewaySettings().port == 8080
    with pytest.raises(ConfigError, match="FlashInfer is excluded"):
        load(EngineSettings)


def test_port_aliases(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DGEMMA_PORT", "9000")
    assert GatewaySettings().port == 9000
    monkeypatch.setenv("PORT", "9100")  # Cloud Run's PORT wins
    assert GatewaySettings().port == 9100


def test_load_flags_beat_env_and_defaults_only_fill_gaps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DGEMMA_SERVED_MODEL", "from-env")
    defaults = {"served_model": "dev-default", "model_description": "dev description"}
    s = load(GatewaySettings, defaults, port=9200, host=None)
    assert (s.served_model, s.model_description, s.port, s.host) == (
        "from-env",
        "dev description",
        9200,
        "127.0.0.1",
    )


def test_load_names_the_env_var_of_a_bad_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DGEMMA_READ_POLICY", "sometimes")
    monkeypatch.setenv("PORT", "0")
    with pytest.raises(ConfigError) as e:
        load(GatewaySettings)
    assert "DGEMMA_READ_POLICY: Input should be" in str(e.value) and "PORT: Input should be" in str(e.value)
    monkeypatch.delenv("DGEMMA_READ_POLICY")
    monkeypatch.delenv("PORT")
    with pytest.raises(ConfigError, match="not a readable file"):
        load(GatewaySettings, api_keys_file="/nonexistent/keys")


def test_a_child_process_reads_back_exactly_the_same_settings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    keys = tmp_path / "keys"
    keys.write_text("file-key\n")
    original = GatewaySettings(
        api_keys="k1,k2",
        api_keys_file=keys,
        model_aliases="a,b",
        mode="debias",
        debias_reads=5,
        port=9300,
        allow_any_key=True,
        gcp_project="proj",
    )
    for name, value in to_env(original).items():
        monkeypatch.setenv(name, value)
    again = GatewaySettings()
    reveal = {"api_keys": [k.get_secret_value() for k in again.api_keys]}
    assert again.model_dump() | reveal == original.model_dump() | {"api_keys": ["k1", "k2"]}
    assert again.read_policy == original.read_policy


def test_redacted_configuration_hides_secrets() -> None:
    s = GatewaySettings(api_keys="top-secret", allow_any_key=False)
    text = json.dumps(redacted(s))
    assert "top-secret" not in text and "**********" in text
    assert "top-secret" not in repr(s)
    gate = LoadtestSettings(loadtest_api_key="gate-secret")
    assert "gate-secret" not in json.dumps(redacted(gate))
    assert gate.headers() == {"Authorization": "Bearer gate-secret"}
