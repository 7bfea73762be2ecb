"""Does it start, fit and meet its targets on this GPU? `dgemma gpu-check`, on a GPU host with vLLM.

It starts the kit as the image does (`dgemma run`: the supervisor's own GPU path, its fit and its
flags, the gateway in front): with empty compile caches (cold), then with the caches the first start
left (warm); or, with a compile-cache store, restored from what the cold start saved (restored: it
recompiles the sampler and saves a second generation), then from that (steady: what every later
Cloud Run instance sees). Each start is timed from the process's spawn to the supervisor's ready
line, and vLLM's own log lines place the phases in between. The load-test gate runs through the
gateway on the cold start's engine (latency@1, batch@32, the overhead against the raw engine) while
nvidia-smi samples the whole GPU's memory and vLLM's /metrics its queue; the prefix cache's hit rate
is read off vLLM's counters.
One report: `report.md`, `report.json`, `gpu-check.png`, beside the gate's own.

On a larger GPU than the profile's (an H200 for the `l4` profile) the supervisor serves the profile
as it would on its GPU (DGEMMA_ENGINE_ON_LARGER_GPU), and the profile's GPU memory is the budget the
measured peak is held to: the L4 fit is then measured, not computed.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from app.core.config import ConfigError
from app.core.net import free_port, free_ports
from deploy.gpucheck.child import await_save, run_env, start, stop
from deploy.gpucheck.metrics import engines_counters
from deploy.gpucheck.record import Check
from deploy.gpucheck.report import write
from deploy.gpucheck.sampling import Samples, sampling
from deploy.runtime import nvidia_smi
from deploy.runtime.gpu_budget import GPUS, Arch, Budget, budget, load_config, profile_for
from deploy.runtime.settings import EngineSettings


@dataclass
class Options:
    model: Path
    out: Path
    profile_gpu: str = "l4"  # the serving profile's GPU (DGEMMA_ENGINE_GPU)
    gate_profile: str = "l4"
    cache_dir: Path = Path(".cache/gpu-check/compile")
    startup_timeout_s: float = 1700.0
    latency_seconds: int | None = None
    throughput_seconds: int | None = None
    # The supervisor's compile-cache store (a directory the check owns, emptied first): the second
    # start then restores what the first saved, as a revision's second Cloud Run instance would.
    cache_store: Path | None = None


def host_facts() -> dict[str, Any]:
    """The GPU (name, memory, driver) and the host the check runs on."""
    name, total, driver = nvidia_smi.query("name,memory.total,driver_version")
    return {
        "gpu": name,
        "gpu_mib": float(total),
        "driver": driver,
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
    }


def fit_budget(model: Path, profile_gpu: str) -> Budget:
    """The supervisor's own budget for this checkpoint and profile (the computed rows)."""
    config = load_config(model)
    settings = EngineSettings(engine_mode="gpu", model_dir=model, engine_gpu=profile_gpu)
    return budget(Arch.from_config(config), profile_for(settings, config))


def gate(check: Check, opts: Options, url: str, engine_urls: list[str], key: str) -> None:
    from loadtest.gate import GateProfile
    from loadtest.gate import run as run_gate

    profile = GateProfile.load(opts.gate_profile).overridden(
        [], opts.latency_seconds, opts.throughput_seconds
    )
    before = engines_counters(engine_urls)
    t0 = time.monotonic()
    marks: dict[str, float] = {}
    # The check's own lists: what was sampled stays in the report when the gate fails.
    with sampling(Samples(check.samples, check.queue), engine_urls, t0):

        def mark(name: str) -> None:
            marks[name] = round(time.monotonic() - t0, 1)

        auth = {"Authorization": f"Bearer {key}"}
        # The gateway's share: against the first engine alone (one client: one engine serves it).
        result = run_gate(
            url, profile, opts.out / "gate", headers=auth, engine_url=engine_urls[0], on_phase=mark
        )
    after = engines_counters(engine_urls)
    check.phase_marks = marks
    delta = {
        k: after.get(k, 0.0) - before.get(k, 0.0)
        for k in ("prefix_cache_queries", "prefix_cache_hits", "prompt_tokens")
    }
    throughput = [q for q in check.queue if marks.get("throughput", 0) <= q["t"] < marks.get("overhead", 1e9)]
    check.engine = {
        "prefix_cache_hit_rate": delta["prefix_cache_hits"] / delta["prefix_cache_queries"]
        if delta["prefix_cache_queries"]
        else None,
        **delta,
        "running_max": max((q.get("running", 0) for q in throughput), default=None),
        "running_median": _median([q.get("running", 0) for q in throughput]),
        "waiting_max": max((q.get("waiting", 0) for q in throughput), default=None),
        "kv_usage_max": max((q.get("kv_usage", 0) for q in throughput), default=None),
    }
    overhead = result.overhead
    check.gate = {
        "profile": result.profile,
        "measured": result.measured,
        "targets": profile.targets,
        "missed": result.missed,
        "overhead": asdict(overhead) if overhead else None,
        "gateway_share": overhead.gateway_share if overhead else None,
    }


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def memory(check: Check, b: Budget, baseline: float) -> None:
    budget_mib = GPUS[b.profile.gpu] * 1024
    peak = max((s.used_mib for s in check.samples), default=0.0) - baseline
    loaded = check.starts[0]  # the start the gate ran on
    check.memory = {
        "fit_rows": [{"item": item, "gib": round(gib, 3), "how": how} for item, gib, how in b.rows],
        "fit_total_gib": round(b.total_gib, 3),
        "fit_available_gib": round(b.available_gib, 3),
        "profile_gpu": b.profile.gpu,
        "profile_gpu_mib": round(budget_mib),
        "measured": {
            "weights_gib": loaded.phases.get("weights_gib"),
            "kv_gib": loaded.phases.get("kv_gib"),
            "graphs_gib": loaded.phases.get("graphs_gib"),
            "idle_mib": round(loaded.idle_mib),
            "peak_mib": round(peak),
        },
        "baseline_mib": baseline,
    }
    if peak > budget_mib:
        check.verdict.append(
            f"does not fit: the GPU's peak under load was {peak:,.0f} MiB, above the {b.profile.gpu}'s "
            f"{budget_mib:,.0f} MiB"
        )


def run(opts: Options) -> Check:
    """The whole check; the report is written to `opts.out` even when a step fails after the first start."""
    from loadtest.gate import GateError

    if shutil.which("vllm") is None:
        raise ConfigError(
            "no `vllm` on PATH: run where vLLM's CUDA build is installed (the image, or its wheel)"
        )
    found = nvidia_smi.detect_gpu()
    if found is None:
        raise ConfigError("nvidia-smi reports no GPU")
    host = host_facts()
    on_larger = not (found[1] <= GPUS[opts.profile_gpu] * 1.05)
    host["serves_profile_of"] = opts.profile_gpu + (
        " (on a larger GPU, held to its budget)" if on_larger else ""
    )
    opts.out.mkdir(parents=True, exist_ok=True)
    for owned in (opts.cache_dir, opts.cache_store):
        if owned is not None and owned.exists():
            shutil.rmtree(owned)  # cold means cold: vLLM's, Inductor's, Triton's and CUDA's caches
    opts.cache_dir.mkdir(parents=True)
    check = Check(host=host, profile=opts.profile_gpu, gate_profile=opts.gate_profile)
    b = fit_budget(opts.model, opts.profile_gpu)
    key = secrets.token_urlsafe(24)
    port, engine_port = free_port(), free_ports(b.profile.replicas)
    url = f"http://127.0.0.1:{port}"
    engine_urls = [f"http://127.0.0.1:{engine_port + i}" for i in range(b.profile.replicas)]
    env = run_env(
        opts.model, opts.profile_gpu, opts.cache_dir, key=key, port=port, engine_port=engine_port,
        on_larger=on_larger, startup_timeout_s=opts.startup_timeout_s, cache_store=opts.cache_store,
    )  # fmt: skip
    baseline = nvidia_smi.used_mib()
    try:
        cold_run, cold = start(env, opts.out, "cold", opts.startup_timeout_s)
        check.starts.append(cold)
        try:
            gate(check, opts, url, engine_urls, key)
        except GateError as e:  # the second start is still measured; the report says why
            check.verdict.append(f"gate: {e}")
        finally:
            if opts.cache_store is not None:
                await_save(cold_run, cold)
            stop(cold_run, cold)
        again = "restored" if opts.cache_store else "warm"
        warm_run, warm = start(env, opts.out, again, opts.startup_timeout_s)
        check.starts.append(warm)
        if opts.cache_store is not None:
            # The first restored start recompiles the sampler and saves the caches' second generation;
            # every instance after it restores that one: the steady start, which most instances see.
            await_save(warm_run, warm)
            stop(warm_run, warm)
            steady_run, steady = start(env, opts.out, "steady", opts.startup_timeout_s)
            check.starts.append(steady)
            stop(steady_run, steady)
        else:
            stop(warm_run, warm)
        memory(check, b, baseline)
        if check.gate.get("missed"):
            check.verdict += [f"gate: {m}" for m in check.gate["missed"]]
        for s in check.starts:
            if s.exit_code != 0:
                check.verdict.append(
                    f"the {s.cache} start did not stop cleanly on SIGTERM (exit {s.exit_code})"
                )
    finally:
        write(check, opts.out)
    return check
