"""The GPU check's reading of a start and its memory verdict, on a real vLLM log from an H200."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deploy.gpucheck.check import memory
from deploy.gpucheck.metrics import engine_counters, engines_counters
from deploy.gpucheck.record import Check, Sample, Start
from deploy.gpucheck.startlog import parse_start_log
from deploy.runtime.gpu_budget import BIG_CONFIG, GPUS, ServingProfile, budget, load_arch
from deploy.runtime.supervisor import parse_vllm_line

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[2] / "data" / "gpu"


def relayed(path: Path) -> list[tuple[float, str]]:
    """The log as `dgemma run` writes it: each vLLM line a JSON record of the supervisor's relay."""
    lines, level = [], 20
    for i, raw in enumerate(path.read_text().splitlines()):
        if not raw.strip():
            continue
        level, message, extra = parse_vllm_line(raw, level)
        lines.append((float(i), json.dumps({"message": message, "logger": "deploy.engine", **extra})))
    return lines


def test_the_phases_and_kernels_of_a_real_h200_start() -> None:
    got = parse_start_log(relayed(DATA / "vllm-h200-cold-compile.log"))
    assert got["phases"] == {
        "vllm_version": "0.32.0",
        "weights_read_s": 5.65,
        "weights_gib": 14.06,
        "model_load_s": 9.600556,
        "dynamo_s": 20.31,
        "compile_s": 116.81,
        "warmup_s": 41.15,
        "kv_gib": 2.26,
        "kv_tokens": 10454.0,
        "graphs_s": 10.0,
        "graphs_gib": 0.46,
        "init_engine_s": 219.13,
        "max_capture_size": 512.0,
    }
    assert got["kernels"] == {
        "linear": "MacheteLinearKernel",
        "attention": "TRITON_ATTN",
        "moe": "MARLIN",
        "experts": "MarlinExperts",
    }
    moments = got["moments"]
    assert moments["engine core up"] < moments["weights on the GPU"] < moments["compiled"]
    assert moments["compiled"] < moments["graphs captured"] <= moments["engine ready"]


def test_the_engine_argv_comes_from_the_supervisors_own_line() -> None:
    line = json.dumps({"message": "started engine (pid 7)", "argv": ["vllm", "serve", "/w"]})
    assert parse_start_log([(1.0, line)])["engine_argv"] == ["vllm", "serve", "/w"]


def _check(peak_mib: float) -> tuple[Check, int]:
    b = budget(load_arch(BIG_CONFIG), ServingProfile())
    check = Check(host={}, profile="l4", gate_profile="l4")
    check.starts.append(Start("cold", 100.0, {"weights_gib": 14.06}, {}, {}, [], idle_mib=19083))
    check.samples = [Sample(0.0, 500 + 19083, 0.0), Sample(1.0, 500 + peak_mib, 90.0)]
    memory(check, b, baseline=500)
    return check, round(GPUS["l4"] * 1024)


def test_the_peak_is_held_to_the_profiles_gpu() -> None:
    fits, l4 = _check(20733)  # the peak the H200 measured under load
    assert fits.verdict == [] and fits.memory["measured"]["peak_mib"] == 20733 and l4 == 23034
    too_big, _ = _check(23100)
    assert too_big.verdict == [
        "does not fit: the GPU's peak under load was 23,100 MiB, above the l4's 23,034 MiB"
    ]


def test_engine_counters_sum_label_sets_and_skip_created() -> None:
    text = (
        "# TYPE vllm:prefix_cache_hits counter\n"
        'vllm:prefix_cache_hits_total{engine="0"} 30\n'
        'vllm:prefix_cache_hits_total{engine="1"} 12\n'
        'vllm:prefix_cache_hits_created{engine="0"} 1.7e9\n'
        'vllm:num_requests_running{engine="0"} 6\n'
    )
    assert engine_counters(text) == {"prefix_cache_hits": 42.0, "running": 6.0}


def test_the_engines_on_one_gpu_are_read_together() -> None:
    """Two engines' /metrics, served over HTTP: counters and queues add up, the KV's use is the
    fuller engine's (each has its own cache)."""
    from devtools.harness.instant_engine import metrics
    from devtools.harness.loopback import serve

    def engine(questions: int, running: int):  # type: ignore[no-untyped-def]
        body = metrics(questions, running).encode()
        return serve(lambda _seen: (200, {"content-type": "text/plain"}, body))

    with engine(3, 8) as one, engine(5, 16) as two:
        both = engines_counters([one.url, two.url])
        alone = engines_counters([one.url])
    assert both["prompt_tokens"] == (3 + 5) * 64 and both["running"] == 8 + 16
    assert both["kv_usage"] == 16 / 32 and alone == engine_counters(metrics(3, 8))


def test_engine_steps_from_a_real_h200_metrics_page() -> None:
    """vLLM's step histogram (`vllm:iteration_tokens_total`, one observation per engine step) read
    off the /metrics page of the gate's batch@32 phase: counts and sums, not buckets added in."""
    got = engine_counters((DATA / "vllm-h200-metrics-batch32.txt").read_text())
    assert got["steps"] == 1138 and got["step_tokens"] == 254332
    assert got["steps_le_512"] == 885 and got["steps_le_2048"] == 1138  # 253 steps above 512 tokens
    assert got["requests_finished"] == 8734  # summed over finished_reason
    assert got["running"] == 3 and got["waiting"] == 61  # the gauge, not `_by_reason` added in
