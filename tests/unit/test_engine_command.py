"""The engine command the supervisor builds for the GPU image (flags from the fit profile)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.settings import Settings
from deploy.fit import FitError
from deploy.supervisor import engine_command

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def int4_model(tmp_path: Path) -> Path:
    config = json.loads((ROOT / "deploy/models/diffusiongemma-26b-a4b.config.json").read_text())
    config["quantization_config"] = {"quant_method": "compressed-tensors"}
    (tmp_path / "config.json").write_text(json.dumps(config))
    return tmp_path


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_gpu_command_from_the_l4_profile(int4_model: Path) -> None:
    settings = Settings(engine_mode="gpu", model_dir=int4_model, served_model="dgemma-26b-w4a16")
    argv, env = engine_command(settings)
    assert argv[:3] == ["vllm", "serve", str(int4_model)]
    assert argv[argv.index("--served-model-name") + 1 : argv.index("--host")] == [
        "dgemma-26b-w4a16",
        "jev-latest",
        "jev-preview",
    ]
    assert _flag(argv, "--logprobs-mode") == "raw_logprobs"  # /v1/systemone needs it
    assert _flag(argv, "--attention-backend") == "TRITON_ATTN"
    assert _flag(argv, "--max-num-seqs") == "32"
    assert json.loads(_flag(argv, "--diffusion-config")) == {"canvas_length": 32}
    assert int(_flag(argv, "--kv-cache-memory-bytes")) > 2**30
    assert "--enable-prefix-caching" in argv and "--language-model-only" in argv
    assert _flag(argv, "--host") == "127.0.0.1"  # the engine is internal; only the gateway is exposed
    assert not any("flashinfer" in a.lower() for a in argv)
    assert env["VLLM_NO_USAGE_STATS"] == "1"


def test_gpu_command_refuses_a_canvas_that_does_not_fit(int4_model: Path) -> None:
    with pytest.raises(FitError, match="sampler fp32 buffer"):
        engine_command(Settings(engine_mode="gpu", model_dir=int4_model, engine_canvas=256))


def test_flashinfer_env_is_refused(int4_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_ATTENTION_BACKEND", "FLASHINFER")
    with pytest.raises(ValueError, match="FlashInfer is excluded"):
        engine_command(Settings(engine_mode="gpu", model_dir=int4_model))
    with pytest.raises(ValueError, match="FlashInfer is excluded"):
        Settings(engine_attention_backend="flashinfer")
