"""`dgemma gpu-check` end to end on a scripted GPU host (`devtools.harness.fake_gpu`: a `vllm` that prints a
real H200 start's log lines and serves the instant stand-in, and an `nvidia-smi`): the supervisor's
own GPU path through `dgemma run`, cold then warm, the gate through the gateway, the report. The
plumbing only: every GPU figure in the report here is the script's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from deploy.runtime.gpu_budget import BIG_CONFIG
from deploy.runtime.weights import seal

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def gpu_host(tmp_path: Path) -> dict[str, str]:
    """PATH with the scripted `vllm` and `nvidia-smi`; an H200 with nothing on it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("vllm", "nvidia-smi"):
        shim = bin_dir / tool
        # A python script whose #! names its interpreter, as the image's `vllm` is: the supervisor's
        # compile cache asks that interpreter for the engine's versions.
        shim.write_text(
            f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(ROOT)!r})\n"
            f"from devtools.harness import fake_gpu\nsys.argv[1:1] = [{tool!r}]\nsys.exit(fake_gpu.main())\n"
        )
        shim.chmod(0o755)
    state = tmp_path / "gpu"
    state.mkdir()
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_GPU_DIR": str(state)}


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    """The 26B-A4B's config as `dgemma model random` writes it, sealed (no weights: a scripted engine)."""
    model = tmp_path / "model"
    model.mkdir()
    config = json.loads(BIG_CONFIG.read_text())
    config["quantization_config"] = {"config_groups": {"group_0": {"weights": {"group_size": 64}}}}
    (model / "config.json").write_text(json.dumps(config))
    seal(model)
    return model


def test_the_check_starts_the_kit_twice_gates_it_and_reports(
    gpu_host: dict[str, str], checkpoint: Path, tmp_path: Path
) -> None:
    out, cache = tmp_path / "report", tmp_path / "compile"
    cache.mkdir()
    (cache / "stale").write_text("a previous run's cache")
    done = subprocess.run(
        [sys.executable, "-m", "deploy.cli", "gpu-check", str(checkpoint), "--out", str(out),
         "--cache-dir", str(cache), "--latency-seconds", "3", "--throughput-seconds", "3"],
        cwd=ROOT, env=gpu_host, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    assert not (cache / "stale").exists()  # the first start was cold
    assert [s["cache"] for s in report["starts"]] == ["cold", "warm"]
    for start in report["starts"]:
        assert start["exit_code"] == 0 and start["stop_s"] < 10  # SIGTERM within Cloud Run's grace
        assert start["phases"]["compile_s"] == 116.81 and start["kernels"]["moe"] == "MARLIN"
        assert start["idle_mib"] == 19083
        argv = start["engine_argv"]
        assert argv[:2] == ["vllm", "serve"] and "--moe-backend" in argv
        # The supervisor's larger-GPU path: the L4's flags, vLLM asked for the L4's share of the H200.
        utilization = float(argv[argv.index("--gpu-memory-utilization") + 1])
        assert utilization * 143771 == pytest.approx(0.92 * 23034, rel=1e-3)
        assert start["moments"]["engine started"] < start["moments"]["gateway started"] < start["ready_s"]
    assert report["host"]["serves_profile_of"].startswith("l4 (on a larger GPU")
    assert report["memory"]["measured"]["peak_mib"] == 19083 and report["verdict"] == []
    gate = report["gate"]
    assert gate["measured"]["failure_ratio"] == 0 and gate["measured"]["throughput_rps"] > 0
    assert 0 <= gate["gateway_share"] < 1
    assert report["engine"]["prefix_cache_hit_rate"] == pytest.approx(0.5)  # the stand-in's half
    assert report["samples"] and report["queue"]
    md = (out / "report.md").read_text()
    assert "PASS" in md and "Time to ready" in md and "fits" in md
    assert (out / "gpu-check.png").stat().st_size > 10_000 and (out / "gate" / "summary.md").exists()


def test_with_a_compile_cache_store_the_check_reports_the_steady_start(
    gpu_host: dict[str, str], checkpoint: Path, tmp_path: Path
) -> None:
    """With the supervisor's compile-cache store: cold (saves), restored (restores, saves the second
    generation), steady (restores that): three starts, each with its phases, the gate on the first."""
    out, store = tmp_path / "report", tmp_path / "store"
    done = subprocess.run(
        [sys.executable, "-m", "deploy.cli", "gpu-check", str(checkpoint), "--out", str(out),
         "--cache-dir", str(tmp_path / "compile"), "--compile-cache-store", str(store),
         "--latency-seconds", "3", "--throughput-seconds", "5"],
        cwd=ROOT, env=gpu_host, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    starts = report["starts"]
    assert [s["cache"] for s in starts] == ["cold", "restored", "steady"]
    assert all(s["exit_code"] == 0 and s["ready_s"] > 0 and s["phases"] for s in starts)
    assert "cache_restore_s" in starts[2]["phases"], "the steady start restored from the store"
    md = (out / "report.md").read_text()
    assert "PASS" in md and "| | cold | restored | steady |" in md and "The gate ran on the cold start" in md


def test_the_h200_profile_is_checked_with_its_two_engines(
    gpu_host: dict[str, str], checkpoint: Path, tmp_path: Path
) -> None:
    """`--gpu h200` starts the profile's two engines on consecutive ports; the gate runs through the
    gateway in front of both, and the check reads both engines."""
    out = tmp_path / "report"
    done = subprocess.run(
        [sys.executable, "-m", "deploy.cli", "gpu-check", str(checkpoint), "--gpu", "h200", "--out",
         str(out), "--cache-dir", str(tmp_path / "compile"), "--latency-seconds", "3",
         "--throughput-seconds", "3"],
        cwd=ROOT, env=gpu_host, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    argv = report["starts"][0]["engine_argv"]
    assert argv[argv.index("--gpu-memory-utilization") + 1] == "0.46"  # each engine its half
    log = (out / "run-cold.log").read_text()
    started = [line for line in log.splitlines() if "started engine-" in line]
    ports = [int(line.split('"--port","')[1].split('"')[0]) for line in started]
    assert len(ports) == 2 and ports[1] == ports[0] + 1
    assert report["gate"]["measured"]["failure_ratio"] == 0 and report["engine"]["prompt_tokens"] > 0


def test_a_start_that_dies_is_reported_with_the_engines_words(
    gpu_host: dict[str, str], checkpoint: Path, tmp_path: Path
) -> None:
    """The H200's crash, scripted: an engine that dies at start fails the check, saying why."""
    env = {**gpu_host, "DGEMMA_ENGINE_ATTENTION_BACKEND": "TRITON_ATTN", "VLLM_USE_FLASHINFER_SAMPLER": "1"}
    out = tmp_path / "report"
    done = subprocess.run(
        [sys.executable, "-m", "deploy.cli", "gpu-check", str(checkpoint), "--out", str(out),
         "--cache-dir", str(tmp_path / "compile")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1
    assert "gpu check: `dgemma run` exited with 2" in done.stderr
    assert "FlashInfer's sampler" in done.stderr  # the supervisor refused before the engine started
    assert "FAIL" in (out / "report.md").read_text()
