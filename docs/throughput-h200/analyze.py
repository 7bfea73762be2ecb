"""The tables of README.md from the raw profiles: `python3 analyze.py PROF_DIR` (profiles.tar.gz, untarred).

py-spy's speedscope files (one profile per thread, idle samples left out), vLLM's /metrics at the
profile's start, middle and end, and the per-second queue of metrics.tsv.
"""

from __future__ import annotations

import collections
import json
import re
import sys
from pathlib import Path
from typing import Any

# What each step of the engine core's loop spends its time in, by the first frame that matches (in order).
STEP = (
    ("scheduler.schedule", "core.py:725)"),
    ("forward, eager: no CUDA graph (batch > 512 tokens)", "model_runner.py:2044)"),
    ("forward, piecewise CUDA graphs", "run_pw_graph"),
    ("forward, full CUDA graph", "run_fullgraph"),
    ("execute_model: add_requests (new requests' state)", "model_runner.py:1735)"),
    ("execute_model: prepare_inputs (diffusion self-conditioning)", "model_runner.py:1966)"),
    ("execute_model: other", "Worker.execute_model"),
    ("sample_tokens (DiffusionSampler)", "Worker.sample_tokens"),
    ("update_from_output", "core.py:783)"),
    ("engine loop, other", "run_busy_loop"),
)
FORWARD = (
    ("MoE (Marlin custom op)", "_moe_forward"),
    ("attention (Triton, a splitting op)", "unified_attention_with_output"),
    ("KV-cache write", "unified_kv_cache_update"),
    ("CUDA graph replay", "CUDAGraph.replay"),
    ("Inductor-compiled code", "CompiledFxGraph.__call__"),
)


def label(frame: dict[str, Any]) -> str:
    short = "/".join((frame.get("file") or "").split("/")[-2:])
    return f"{frame['name']} ({short}:{frame.get('line', '')})"


def thread(path: Path, name: str) -> tuple[list[list[str]], int]:
    data = json.loads(path.read_text())
    frames = data["shared"]["frames"]
    profile = next(p for p in data["profiles"] if name in p["name"])
    stacks = [[label(frames[i]) for i in s] for s in profile["samples"]]
    return stacks, len(stacks)


def first(stack: list[str], rules: tuple[tuple[str, str], ...]) -> str:
    for name, needle in rules:
        if any(needle in f for f in stack):
            return name
    return "other"


def breakdown(path: Path) -> None:
    stacks, n = thread(path, "MainThread")
    print(f"\n## {path.name}, engine core main thread: {n} samples with a stack")
    steps: collections.Counter[str] = collections.Counter()
    inside: collections.Counter[tuple[str, str]] = collections.Counter()
    for s in stacks:
        step = first(s, STEP) if s else "(empty stack)"
        steps[step] += 1
        if step.startswith("forward"):
            inside[(step, first(s, FORWARD))] += 1
    for k, c in steps.most_common():
        print(f"| {k} | {100 * c / n:.1f} % |")
    print("inside the forward:")
    for (step, part), c in sorted(inside.items(), key=lambda x: (x[0][0], -x[1])):
        print(f"| {step} / {part} | {100 * c / n:.1f} % |")


def top(path: Path, name: str, count: int) -> None:
    stacks, n = thread(path, name)
    inclusive: collections.Counter[str] = collections.Counter()
    leaf: collections.Counter[str] = collections.Counter()
    for s in stacks:
        inclusive.update(set(s))
        if s:
            leaf[s[-1]] += 1
    print(f"\n## {path.name}, {name}: {n} samples; leaf frames (self time)")
    for k, c in leaf.most_common(count):
        print(f"| {100 * c / n:.1f} % | {k} |")


def metrics(path: Path) -> dict[str, float]:
    out: dict[str, float] = collections.defaultdict(float)
    for line in path.read_text().splitlines():
        if not line.startswith("vllm:"):
            continue
        head, value = line.rsplit(" ", 1)
        m = re.match(r"([^{]+)(?:\{(.*)\})?", head)
        assert m is not None
        extra = re.search(r'\b(le|reason|source|finished_reason)="([^"]+)"', m[2] or "")
        out[m[1] + (f"[{extra[2]}]" if extra else "")] += float(value)
    return out


def window(prof: Path, a: str, b: str, seconds: float) -> None:
    x, y = metrics(prof / f"metrics-{a}.txt"), metrics(prof / f"metrics-{b}.txt")
    d = {k: y[k] - x.get(k, 0.0) for k in y}
    reqs = d["vllm:e2e_request_latency_seconds_count"]
    outputs = d["vllm:iteration_tokens_total_count"]
    print(f"\n## /metrics, {a} -> {b} ({seconds:.0f} s)")
    apart = 1000 * seconds / outputs
    print(
        f"requests finished {reqs:.0f} ({reqs / seconds:.0f}/s); engine outputs {outputs:.0f} "
        f"({outputs / seconds:.1f}/s, {reqs / outputs:.1f} requests each, {apart:.0f} ms apart)"
    )
    print(
        f"denoising steps per request {d['vllm:diffusion_num_denoising_steps_total'] / reqs:.2f}; "
        f"prompt tokens per request {d['vllm:prompt_tokens_total'] / reqs:.0f} "
        f"({d['vllm:prompt_tokens_by_source_total[local_compute]'] / reqs:.0f} computed); "
        f"canvas positions committed per request "
        f"{d['vllm:diffusion_num_committed_tokens_total'] / reqs:.0f}"
    )
    for name in ("request_queue_time", "request_inference_time", "e2e_request_latency"):
        s, c = d[f"vllm:{name}_seconds_sum"], d[f"vllm:{name}_seconds_count"]
        print(f"mean {name}: {1000 * s / c:.0f} ms")
    print(f"preemptions: {d['vllm:num_preemptions_total']:.0f}")


def queue(prof: Path) -> None:
    # This run's profile_engine.sh summed vllm:num_requests_waiting_by_reason into `waiting` too (twice
    # the gauge: the reasons add up to it); halved here, fixed in the script since.
    rows = [r.split("\t") for r in (prof / "metrics.tsv").read_text().splitlines()[1:]]
    print("\n## the queue, once a second: running / waiting / KV use")
    print(" ".join(f"{int(r[1])}/{int(r[2]) // 2}/{100 * float(r[3]):.0f}%" for r in rows))
    running = collections.Counter(int(r[1]) for r in rows)
    print("running:", dict(running.most_common()))


def main() -> None:
    prof = Path(sys.argv[1] if len(sys.argv) > 1 else "prof")
    breakdown(prof / "enginecore.speedscope.json")
    top(prof / "enginecore.speedscope.json", "MainThread", 15)
    breakdown(prof / "enginecore-native.speedscope.json")
    top(prof / "apiserver.speedscope.json", "MainThread", 8)
    top(prof / "apiserver.speedscope.json", "ThreadPoolExecutor", 3)
    window(prof, "start", "mid", 30.0)
    queue(prof)


if __name__ == "__main__":
    main()
