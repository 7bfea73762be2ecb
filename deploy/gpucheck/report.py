"""The GPU check's report: `report.json` (everything measured), `report.md` (tables) and
`gpu-check.png` (time to ready by phase, the GPU's memory and vLLM's queue under the gate)."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import shlex
from dataclasses import asdict
from pathlib import Path
from typing import Any

from deploy.gpucheck.record import Check, Start

# (key in Start.phases, label, unit) in the order vLLM goes through them.
PHASE_ROWS = (
    ("cache_restore_s", "compile caches restored (the supervisor)", "s"),
    ("weights_read_s", "weights read", "s"),
    ("model_load_s", "model loaded (weights on the GPU)", "s"),
    ("dynamo_s", "Dynamo bytecode transform", "s"),
    ("compile_s", "torch.compile in total", "s"),
    ("warmup_s", "profiling / warm-up run", "s"),
    ("graphs_s", "CUDA graph capture", "s"),
    ("init_engine_s", "init engine (vLLM's own total)", "s"),
    ("warmup_decision_s", "warm-up decision (the supervisor, before the gateway)", "s"),
    ("cache_save_s", "compile caches saved (background, after ready)", "s"),
    ("cache_mb", "compile-cache archive", "MB"),
)
MOMENTS = (
    "weights verified", "caches restored", "engine started", "engine core up", "weights on the GPU",
    "compiled", "KV cache", "graphs captured", "engine ready", "warm-up decision", "gateway started",
)  # fmt: skip


def write(check: Check, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(asdict(check), indent=2, default=str) + "\n")
    (out / "report.md").write_text(markdown(check))
    if check.starts:
        plot(check, out / "gpu-check.png")


def _f(value: Any, digits: int = 1, unit: str = "") -> str:
    if value is None:
        return "—"
    if isinstance(value, float | int):
        return f"{value:,.{digits}f}{unit}"
    return str(value)


def markdown(check: Check) -> str:
    h = check.host
    caches = [s.cache for s in check.starts]
    complete = caches in (["cold", "warm"], ["cold", "restored", "steady"])
    verdict = "PASS" if not check.verdict and complete and check.gate else "FAIL"
    lines = [
        f"# GPU check on an {h['gpu']}: {verdict}",
        "",
        f"`dgemma gpu-check`, {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC. {h['gpu']} "
        f"({h['gpu_mib']:,.0f} MiB, driver {h['driver']}), {h['cpus']} CPUs, Python {h['python']}"
        + (f", vLLM {check.starts[0].phases.get('vllm_version')}" if check.starts else "")
        + f". Serving profile: {h['serves_profile_of']}; gate profile: `{check.gate_profile}`.",
        "",
        "The kit started as the image starts it (`dgemma run`: the supervisor's GPU path, its fit and "
        "flags, the gateway in front), first with empty compile caches (cold), then "
        + (
            "with the caches restored from the compile-cache store the first start saved to (restored: "
            "it recompiles the diffusion sampler and saves the caches' second generation), then from "
            "that second generation (steady: the start every later instance of a revision sees)"
            if "restored" in caches
            else "with the caches the first start left (warm)"
        )
        + ". The gate ran on the cold start's engine, once it was ready. **Random weights** in the "
        "layout `dgemma quantize` writes: figures of memory and speed, never of answers.",
        "",
    ]
    if check.verdict:
        lines += ["**Not met:**", "", *[f"- {v}" for v in check.verdict], ""]
    if check.starts:
        lines += _starts(check.starts)
    if check.memory:
        lines += _memory(check.memory)
    if check.gate:
        lines += _gate(check.gate, check.engine)
    if check.starts and check.starts[0].engine_argv:
        s = check.starts[0]
        lines += [
            "## What ran",
            "",
            "Kernels vLLM chose: " + ", ".join(f"{k} `{v}`" for k, v in s.kernels.items()) + ".",
            "",
            "The engine's argv, as the supervisor started it:",
            "",
            "```",
            shlex.join(s.engine_argv),
            "```",
            "",
        ]
    return "\n".join(lines) + "\n"


def _starts(starts: list[Start]) -> list[str]:
    head = "| | " + " | ".join(s.cache for s in starts) + " |"
    lines = [
        "## Time to ready",
        "",
        "From the spawn of `dgemma run` to the supervisor's ready line (the gateway answers `/readyz`), "
        "weights read from a local disk; the phases are vLLM's own log lines.",
        "",
        head,
        "| --- |" + " ---: |" * len(starts),
        "| **ready after** | " + " | ".join(f"**{s.ready_s:,.0f} s**" for s in starts) + " |",
    ]
    for key, label, unit in PHASE_ROWS:
        if any(key in s.phases for s in starts):
            lines.append(
                f"| {label} | " + " | ".join(_f(s.phases.get(key), 1, f" {unit}") for s in starts) + " |"
            )
    lines += [
        "| GPU memory at idle (whole GPU) | " + " | ".join(f"{s.idle_mib:,.0f} MiB" for s in starts) + " |",
        "| SIGTERM to exit | " + " | ".join(f"{s.stop_s:.1f} s (exit {s.exit_code})" for s in starts) + " |",
        "",
        "Moments (seconds from the spawn): "
        + "; ".join(
            f"{name}: " + " / ".join(_f(s.moments.get(name), 0) for s in starts)
            for name in MOMENTS
            if any(name in s.moments for s in starts)
        )
        + ".",
        "",
    ]
    return lines


def _memory(m: dict[str, Any]) -> list[str]:
    got = m["measured"]
    gpu, cap, peak = m["profile_gpu"], m["profile_gpu_mib"], got["peak_mib"]
    weights = sum(r["gib"] for r in m["fit_rows"] if r["item"].startswith("weights"))
    measured = {"KV cache": got.get("kv_gib")}
    lines = [
        "## Memory: the fit's computed rows against the measurement",
        "",
        "| item | computed (GiB) | measured (GiB) |",
        "| --- | ---: | ---: |",
        f"| weights (the four weight rows) | {weights:.2f} | {_f(got.get('weights_gib'), 2)} |",
    ]
    for r in m["fit_rows"]:
        if not r["item"].startswith("weights"):
            lines.append(f"| {r['item']} | {r['gib']:.2f} | {_f(measured.get(r['item']), 2)} |")
    spare = f"{cap - peak:,} MiB to spare" if peak <= cap else f"{peak - cap:,} MiB too many"
    lines += [
        f"| CUDA graphs | (no row) | {_f(got.get('graphs_gib'), 2)} |",
        f"| **total** | **{m['fit_total_gib']:.2f}** of {m['fit_available_gib']:.2f} available | |",
        "",
        f"Whole GPU (nvidia-smi, less the {m['baseline_mib']:,.0f} MiB in use before the start): "
        f"**{got['idle_mib']:,} MiB at idle, {peak:,} MiB at the peak under the gate**, against the "
        f"{gpu}'s {cap:,} MiB: {'fits' if peak <= cap else 'does not fit'}, {spare}.",
        "",
    ]
    return lines


def _gate(g: dict[str, Any], engine: dict[str, Any]) -> list[str]:
    lines = [
        f"## The load-test gate through the gateway (profile `{g['profile']}`)",
        "",
        "| target | measured | limit |",
        "| --- | ---: | ---: |",
    ]
    for name, target in g["targets"].items():
        limit = f"<= {target['max']}" if "max" in target else f">= {target['min']}"
        lines.append(f"| {name} | {g['measured'][name]:,.4g} | {limit} |")
    o = g.get("overhead")
    if o:
        lines += [
            "",
            "Gateway against the raw engine (the same 3-question decisions, interleaved): "
            f"p50 x{o['p50_ratio']:.3f}, p95 x{o['p95_ratio']:.3f}, {o['p50_added_ms']:+.1f} ms at the "
            f"median: the gateway's share of a decision's median time is {g['gateway_share'] * 100:.1f} %.",
        ]
    rate = engine.get("prefix_cache_hit_rate")
    hits, queries = engine.get("prefix_cache_hits", 0), engine.get("prefix_cache_queries", 0)
    lines += [
        "",
        f"vLLM under the gate: prefix-cache hit rate {_f(rate * 100 if rate is not None else None, 1, ' %')} "
        f"({hits:,.0f} of {queries:,.0f} prompt tokens); "
        f"during batch@32, requests running median {_f(engine.get('running_median'), 0)} (max "
        f"{_f(engine.get('running_max'), 0)}), waiting max {_f(engine.get('waiting_max'), 0)}, "
        "KV cache use max "
        f"{_f((engine.get('kv_usage_max') or 0) * 100, 1, ' %')}.",
        "",
    ]
    return lines


def plot(check: Check, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(10, 11), gridspec_kw={"height_ratios": [1.1, 1.4, 1.2]})
    ax = axes[0]
    # One colour per phase, named by the moment that ends it, the same in every start.
    names = [*MOMENTS, "ready"]
    colors = dict(zip(names, [plt.get_cmap("tab20")(i) for i in range(len(names))], strict=True))
    shown: set[str] = set()
    for i, s in enumerate(check.starts):
        edges = [(0.0, "spawn"), *sorted((t, n) for n, t in s.moments.items()), (s.ready_s, "ready")]
        for (a, _), (b, name) in itertools.pairwise(edges):
            label = None if name in shown else f"until {name}"
            shown.add(name)
            ax.barh(i, b - a, left=a, color=colors.get(name, "grey"), edgecolor="white", label=label)
        ax.text(s.ready_s, i, f" {s.ready_s:.0f} s", va="center")
    ax.set_yticks(range(len(check.starts)), [f"{s.cache} cache" for s in check.starts])
    ax.set_xlabel("seconds from the spawn of `dgemma run` to ready (phases by vLLM's log lines)")
    ax.set_title(f"Time to ready on the {check.host['gpu']}")
    handles, labels = ax.get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda k: names.index(labels[k].removeprefix("until ")))
    ax.legend([handles[k] for k in order], [labels[k] for k in order], fontsize=7, ncol=5,
              loc="upper center", bbox_to_anchor=(0.5, -0.35))  # fmt: skip
    ax.invert_yaxis()

    ax = axes[1]
    if check.samples:
        base = check.memory.get("baseline_mib", 0.0) if check.memory else 0.0
        ax.plot(
            [s.t for s in check.samples],
            [s.used_mib - base for s in check.samples],
            label="whole GPU (nvidia-smi)",
        )
        if check.memory:
            m = check.memory
            ax.axhline(
                m["profile_gpu_mib"],
                color="red",
                ls="--",
                label=f"{m['profile_gpu']}: {m['profile_gpu_mib']:,} MiB",
            )
            ax.axhline(
                m["fit_total_gib"] * 1024,
                color="grey",
                ls=":",
                label=f"fit, computed: {m['fit_total_gib']:.2f} GiB",
            )
        _marks(ax, check.phase_marks)
        ax.set_ylim(
            0,
            max(
                check.memory.get("profile_gpu_mib", 0) if check.memory else 0,
                max(s.used_mib for s in check.samples),
            )
            * 1.1,
        )
    ax.set_ylabel("GPU memory used (MiB)")
    ax.set_title("GPU memory under the gate")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)

    ax = axes[2]
    if check.queue:
        ts = [q["t"] for q in check.queue]
        ax.plot(ts, [q.get("running", 0) for q in check.queue], label="vLLM requests running")
        ax.plot(ts, [q.get("waiting", 0) for q in check.queue], label="vLLM requests waiting")
    if check.samples:
        twin = ax.twinx()
        twin.plot(
            [s.t for s in check.samples], [s.util for s in check.samples], color="grey", alpha=0.4, lw=0.8
        )
        twin.set_ylabel("GPU utilization % (grey)")
        twin.set_ylim(0, 105)
    _marks(ax, check.phase_marks)
    ax.set_xlabel("seconds into the gate")
    ax.set_ylabel("requests")
    ax.set_title("vLLM's queue under the gate")
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3)
    fig.suptitle("dgemma gpu-check (random weights: memory and speed only)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _marks(ax: Any, marks: dict[str, float]) -> None:
    for name, t in marks.items():
        if name == "done":
            continue
        ax.axvline(t, color="black", alpha=0.25, lw=0.8)
        ax.text(t, ax.get_ylim()[1] * 0.97, f" {name}", fontsize=7, va="top")
