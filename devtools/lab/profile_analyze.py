"""The tables of a `devtools/lab/gpu_host/profile_engine.sh` run (py-spy beside the gate's load; the run
of docs/throughput-h200: its README says how it was made and reads these tables).

    python -m devtools.lab.profile_analyze DIR [--halve-waiting]  # DIR/profiles.tar.gz in; analysis.md out

The profiles are the tarball's `prof/` folder (or DIR/prof, untarred): py-spy's speedscope files
(one profile per thread, idle samples left out), vLLM's /metrics at the profile's start, middle and
end, and the per-second queue of metrics.tsv. Per profile of the engine core's main thread: each
sample's step of the engine loop (by the first frame that matches, in order) and, inside the
forward, its part; the leaf frames of a thread (self time); the counters over the profile's window;
the queue once a second. `--halve-waiting`: the run's metrics.tsv summed
vllm:num_requests_waiting_by_reason into `waiting` (twice the gauge: the reasons add up to it), as
profile_engine.sh did before docs/throughput-h200 found it. Standard library only.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import tarfile
from pathlib import Path
from typing import Any

from devtools.tables import row

# What each step of the engine core's loop spends its time in, by the first frame that matches (in
# order). Line numbers are vLLM 0.32.0's, as installed from its wheel.
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
PROFILE_S = 30.0  # the start -> mid window: profile_engine.sh's SECONDS in this run


def read_profiles(here: Path) -> dict[str, str]:
    """The run's files by name: `prof/` from DIR/profiles.tar.gz, else DIR/prof's files."""
    tgz = here / "profiles.tar.gz"
    if tgz.exists():
        out = {}
        with tarfile.open(tgz) as tar:
            for member in tar.getmembers():
                parts = Path(member.name).parts
                if member.isfile() and len(parts) == 2 and parts[0] == "prof":
                    f = tar.extractfile(member)
                    assert f is not None
                    out[parts[1]] = f.read().decode()
        return out
    return {p.name: p.read_text() for p in sorted((here / "prof").iterdir()) if p.is_file()}


def label(frame: dict[str, Any]) -> str:
    short = "/".join((frame.get("file") or "").split("/")[-2:])
    return f"{frame['name']} ({short}:{frame.get('line', '')})"


def thread(speedscope: str, name: str) -> list[list[str]]:
    """The stacks of the first profile (thread) whose name holds `name`, root first."""
    data = json.loads(speedscope)
    frames = data["shared"]["frames"]
    profile = next(p for p in data["profiles"] if name in p["name"])
    return [[label(frames[i]) for i in s] for s in profile["samples"]]


def first(stack: list[str], rules: tuple[tuple[str, str], ...]) -> str:
    for name, needle in rules:
        if any(needle in f for f in stack):
            return name
    return "other"


def breakdown(file: str, speedscope: str) -> list[str]:
    stacks = thread(speedscope, "MainThread")
    n = len(stacks)
    steps: collections.Counter[str] = collections.Counter()
    inside: collections.Counter[tuple[str, str]] = collections.Counter()
    for s in stacks:
        step = first(s, STEP) if s else "(empty stack)"
        steps[step] += 1
        if step.startswith("forward"):
            inside[(step, first(s, FORWARD))] += 1
    lines = ["", f"## {file}, engine core main thread: {n} samples with a stack"]
    lines += [row(k, f"{100 * c / n:.1f} %") for k, c in steps.most_common()]
    lines.append("inside the forward:")
    for (step, part), c in sorted(inside.items(), key=lambda x: (x[0][0], -x[1])):
        lines.append(row(f"{step} / {part}", f"{100 * c / n:.1f} %"))
    return lines


def top(file: str, speedscope: str, name: str, count: int) -> list[str]:
    stacks = thread(speedscope, name)
    leaf = collections.Counter(s[-1] for s in stacks if s)
    lines = ["", f"## {file}, {name}: {len(stacks)} samples; leaf frames (self time)"]
    return [*lines, *(row(f"{100 * c / len(stacks):.1f} %", k) for k, c in leaf.most_common(count))]


def metrics(text: str) -> dict[str, float]:
    """vLLM's /metrics text, summed over labels but for one that tells series apart (a bucket, a reason)."""
    out: dict[str, float] = collections.defaultdict(float)
    for line in text.splitlines():
        if not line.startswith("vllm:"):
            continue
        head, value = line.rsplit(" ", 1)
        m = re.match(r"([^{]+)(?:\{(.*)\})?", head)
        assert m is not None
        extra = re.search(r'\b(le|reason|source|finished_reason)="([^"]+)"', m[2] or "")
        out[m[1] + (f"[{extra[2]}]" if extra else "")] += float(value)
    return out


def window(files: dict[str, str], a: str, b: str, seconds: float) -> list[str]:
    x, y = metrics(files[f"metrics-{a}.txt"]), metrics(files[f"metrics-{b}.txt"])
    d = {k: y[k] - x.get(k, 0.0) for k in y}
    reqs = d["vllm:e2e_request_latency_seconds_count"]
    outputs = d["vllm:iteration_tokens_total_count"]
    apart = 1000 * seconds / outputs
    hits, queries = d["vllm:prefix_cache_hits_total"], d["vllm:prefix_cache_queries_total"]
    lines = [
        "",
        f"## /metrics, {a} -> {b} ({seconds:.0f} s)",
        f"requests finished {reqs:.0f} ({reqs / seconds:.0f}/s); engine outputs {outputs:.0f} "
        f"({outputs / seconds:.1f}/s, {reqs / outputs:.1f} requests each, {apart:.0f} ms apart)",
        f"denoising steps per request {d['vllm:diffusion_num_denoising_steps_total'] / reqs:.2f}; "
        f"prompt tokens per request {d['vllm:prompt_tokens_total'] / reqs:.0f} "
        f"({d['vllm:prompt_tokens_by_source_total[local_compute]'] / reqs:.0f} computed); "
        f"canvas positions committed per request "
        f"{d['vllm:diffusion_num_committed_tokens_total'] / reqs:.0f}",
        f"prefix cache: hits / queries (tokens) {hits:,.0f} / {queries:,.0f} = {100 * hits / queries:.1f} %",
    ]
    for name in ("request_queue_time", "request_inference_time", "e2e_request_latency"):
        s, c = d[f"vllm:{name}_seconds_sum"], d[f"vllm:{name}_seconds_count"]
        lines.append(f"mean {name}: {1000 * s / c:.0f} ms")
    return [*lines, f"preemptions: {d['vllm:num_preemptions_total']:.0f}"]


def queue(tsv: str, halve_waiting: bool) -> list[str]:
    rows = [r.split("\t") for r in tsv.splitlines()[1:]]
    div = 2 if halve_waiting else 1
    running = collections.Counter(int(r[1]) for r in rows)
    return [
        "",
        "## the queue, once a second: running / waiting / KV use",
        " ".join(f"{int(r[1])}/{int(r[2]) // div}/{100 * float(r[3]):.0f}%" for r in rows),
        f"running: {dict(running.most_common())}",
    ]


def analysis(files: dict[str, str], halve_waiting: bool = False, seconds: float = PROFILE_S) -> str:
    """The tables, as analysis.md holds them."""
    core, native, api = (
        files.get(f"{n}.speedscope.json") for n in ("enginecore", "enginecore-native", "apiserver")
    )
    lines = ["# The profiles' tables (written by devtools/lab/profile_analyze.py; see README.md)"]
    if core:
        lines += breakdown("enginecore.speedscope.json", core)
        lines += top("enginecore.speedscope.json", core, "MainThread", 15)
    if native:
        lines += breakdown("enginecore-native.speedscope.json", native)
    if api:
        lines += top("apiserver.speedscope.json", api, "MainThread", 8)
        lines += top("apiserver.speedscope.json", api, "ThreadPoolExecutor", 3)
    if "metrics-start.txt" in files and "metrics-mid.txt" in files:
        lines += window(files, "start", "mid", seconds)
    if "metrics.tsv" in files:
        lines += queue(files["metrics.tsv"], halve_waiting)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m devtools.lab.profile_analyze", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "dir", type=Path, help="a report folder: its profiles.tar.gz (or prof/) in, analysis.md out"
    )
    parser.add_argument(
        "--halve-waiting",
        action="store_true",
        help="metrics.tsv's `waiting` is twice the gauge (an older script's)",
    )
    parser.add_argument(
        "--seconds",
        type=float,
        default=PROFILE_S,
        help="the profile's window, start to mid (profile_engine.sh's SECONDS)",
    )
    args = parser.parse_args(argv)
    try:
        files = read_profiles(args.dir)
    except (OSError, tarfile.TarError) as e:
        print(f"profile analyze: {args.dir}: {e}", file=sys.stderr)
        return 2
    (args.dir / "analysis.md").write_text(analysis(files, args.halve_waiting, args.seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
