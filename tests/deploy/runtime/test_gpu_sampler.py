"""The crash the first GPU run found: vLLM 0.32's GPU sampler imports FlashInfer, which the image
removes. vLLM's own selection code, run in the engine's environment with only the platform check
patched (`tests/engine_scripts/sampler_selection.py`), under the environment the supervisor gives
the GPU engine."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from app.gateway.settings import GatewaySettings
from deploy.runtime.gpu_budget import BIG_CONFIG
from deploy.runtime.settings import EngineSettings
from deploy.runtime.supervisor import engine_command
from tests.helpers.deploy import fake_nvidia_smi

ROOT = Path(__file__).resolve().parents[3]
ENGINE_PY = str(ROOT / ".venv-engine/bin/python")
SCRIPT = str(ROOT / "tests/engine_scripts/sampler_selection.py")

pytestmark = [pytest.mark.integration, pytest.mark.engine]


def _select(env: dict[str, str], *gpus: str) -> dict[str, dict[str, object]]:
    """vLLM's choice for each `CAPABILITY:SMS`, in one engine process: {gpu: result}."""
    done = subprocess.run([ENGINE_PY, SCRIPT, *gpus], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert all(r["sampler_asks"] for r in results), "vLLM's V2 sampler no longer decides so"
    return {str(r["gpu"]): r for r in results}


@pytest.fixture
def gpu_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The engine's environment as the supervisor builds it for the GPU (an L4 stands in)."""
    fake_nvidia_smi(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    model = tmp_path / "model"
    model.mkdir()
    config = json.loads(BIG_CONFIG.read_text()) | {
        "quantization_config": {"quant_method": "compressed-tensors"}
    }
    (model / "config.json").write_text(json.dumps(config))
    _, extra = engine_command(GatewaySettings(), EngineSettings(engine_mode="gpu", model_dir=model))
    return {**os.environ, **extra}


L4, H200 = "8.9:58", "9.0:132"


def test_the_supervisors_gpu_engine_never_imports_flashinfer(gpu_env: dict[str, str]) -> None:
    for gpu, result in _select(gpu_env, L4, H200).items():
        assert result["attempts"] == [] and result["error"] is None, (gpu, result)
        assert result["use_flashinfer"] is False


def test_without_the_setting_the_engine_dies_as_it_did_on_the_h200(gpu_env: dict[str, str]) -> None:
    """The same code without the supervisor's setting: FlashInfer is imported, and fails."""
    env = {k: v for k, v in gpu_env.items() if k != "VLLM_USE_FLASHINFER_SAMPLER"}
    result = _select(env, H200)[H200]
    assert "flashinfer" in result["attempts"]  # type: ignore[operator]
    assert result["error"] == "ModuleNotFoundError: No module named 'flashinfer'"
