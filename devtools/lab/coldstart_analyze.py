"""Summarize the starts of devtools/lab/coldstart.py kept in a report folder (docs/cold-start-h200: its
README says how they were run).

    python3 -m devtools.lab.coldstart_analyze DIR    # DIR/starts/*.tgz in; DIR/summary.md, timeline-*.txt out
    python3 -m devtools.lab.coldstart_analyze --arms OUT.md ARMS.tar.gz...   # engine arms' starts

Per start, from its run.log (seconds from the spawn of `dgemma run`, each line as it arrived): the
moments that vLLM's and the supervisor's lines mark, and the phases between them; with procs.tsv,
the CPU each process used in each phase (1.00 = one core busy throughout), with gpu.csv the GPU's
mean utilization. Per py-spy start (pyspy.json.gz, chrometrace, every thread's stack, idle ones
too): what the engine core's and the API server's main threads were doing in each phase, by
category of stack, and a timeline every second (timeline-NN.txt). For the importtime start, the
import trees of the API server and of the engine core (python -X importtime, relayed by the
supervisor). Standard library only.
"""

from __future__ import annotations

import collections
import datetime as dt
import gzip
import json
import re
import statistics
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from devtools.tables import header, row

# (pid, tid) -> the thread's (from, to, stack) segments, seconds from the spawn of `dgemma run`
Trace = dict[tuple[int, int], list[tuple[float, float, tuple[Any, ...]]]]

# (key, label, pattern of the first line that marks it); the phase named by a moment ends there.
MOMENTS = [
    ("engine", "supervisor: weights check, compile-cache restore", r"^started engine"),
    ("banner", "API server: interpreter and imports, to vLLM's banner", r"█▄█▀ █"),
    ("core_proc", "API server: config (lazy imports, checkpoint metadata), engine core started", None),
    ("init", "engine core: its interpreter and imports, to 'Initializing'", r"Initializing a V1 LLM engine"),
    ("load_start", "engine core: device, distributed init, worker", r"Loading model from scratch"),
    ("weights_read", "weights: model init, then read (safetensors) and loaded", r"Loading weights took"),
    ("weights_done", "weights: after loading (Marlin repack...)", r"Model loading took"),
    ("aot", "torch.compile: the backbone loaded from the AOT cache (cold: compiled)", r"torch\.compile took"),
    ("kv", "profiling run, KV cache", r"GPU KV cache size"),
    ("capture_start", "warmup_kernels: dummy steps, the sampler's torch.compile (unlogged at INFO)", None),
    ("pw_done", "CUDA graphs: PIECEWISE", r"Capturing CUDA graphs \(PIECEWISE\):.*100%"),
    ("full_done", "CUDA graphs: FULL", r"Capturing CUDA graphs \(FULL\):.*100%"),
    ("init_done", "engine core: after capture, to 'init engine ... took'", r"init engine \(profile"),
    ("server", "API server: app, to 'Starting vLLM server'", r"Starting vLLM server"),
    ("health", "API server: uvicorn up, first /health 200", r"GET /health HTTP/1.1\" 200"),
    ("warmup", "supervisor's warm-up decision", r"^engine warm-up: a first decision"),
    ("ready", "gateway up, ready", r"^dgemma ready:"),
]


def _records(run_log: Path) -> list[tuple[float, str, dict[str, Any]]]:
    out = []
    for line in run_log.open(errors="replace"):
        head, _, raw = line.strip("\n").lstrip().partition(" ")
        try:
            t = float(head)
        except ValueError:
            continue
        raw = raw.strip()
        rec: dict[str, Any] = {}
        msg = raw
        if raw.startswith("{"):
            try:
                rec = json.loads(raw)
                msg = str(rec.get("message", ""))
            except ValueError:
                pass
        out.append((t, msg, rec))
    return out


def _bar_elapsed(msg: str) -> float | None:
    """A finished tqdm bar's elapsed seconds: its count over its final mean rate
    ('147/147 [00:14<00:00, 10.10it/s]'), else its whole seconds."""
    found = re.findall(r"(\d+)/(\d+) \[(\d+):(\d+)<[^,\]]*, *([\d.]+)it/s\]", msg)
    if found and float(found[-1][4]) > 0:
        return int(found[-1][0]) / float(found[-1][4])
    whole = re.findall(r"(\d+)/(\d+) \[(\d+):(\d+)<", msg)
    return int(whole[-1][2]) * 60 + int(whole[-1][3]) if whole else None


def moments(d: Path, start: dict[str, Any], trace: Trace | None) -> dict[str, float]:
    recs = _records(d / "run.log")
    m: dict[str, float] = {}
    for key, _, pattern in MOMENTS:
        if pattern is None:
            continue
        for t, msg, _rec in recs:
            if re.search(pattern, msg):
                m[key] = t
                break
    # The engine core's process: first seen in procs.tsv (every 0.25 s), or its first py-spy sample.
    core = _core_pid(start)
    procs = d / "procs.tsv"  # devtools.lab.coldstart's; an engine arm's start has only its run log
    rows = [r.split("\t") for r in procs.read_text().splitlines()[1:]] if procs.exists() else []
    seen = [float(r[0]) for r in rows if core is not None and r[1] == str(core)]
    if seen:
        m["core_proc"] = seen[0]
    if trace is not None and core is not None:
        firsts = [segs[0][0] for (pid, _), segs in trace.items() if pid == core and segs]
        if firsts:
            m["core_proc"] = min(firsts)
    if "core_proc" in m and "init" in m:  # a forked engine core logs within procs.tsv's 0.25 s
        m["core_proc"] = min(m["core_proc"], m["init"])
    # Capture start: vLLM's DEBUG line, else the first capture_model sample, else the bar's elapsed.
    debug = [t for t, msg, _ in recs if "Capturing a cudagraph on" in msg]
    if debug:
        m["capture_start"] = debug[0]
        m["capture_how"] = 0  # the DEBUG line
    elif trace is not None and core is not None:
        main = _main_thread(trace, core)
        cap = [a for a, _, st in trace[main] if any(f[0] == "GPUModelRunner.capture_model" for f in st)]
        if cap:
            m["capture_start"], m["capture_how"] = cap[0], 1
    if "capture_start" not in m and "pw_done" in m:
        pw = next(msg for t, msg, _ in recs if t == m["pw_done"] and "PIECEWISE" in msg)
        elapsed = _bar_elapsed(pw)
        if elapsed is not None:
            m["capture_start"], m["capture_how"] = m["pw_done"] - elapsed, 2
    return m


def graph_counts(d: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for _, msg, _ in _records(d / "run.log"):
        for kind in ("PIECEWISE", "FULL"):
            found = re.findall(rf"Capturing CUDA graphs \({kind}\):.*?(\d+)/(\d+) \[", msg)
            if found:
                counts[kind] = int(found[-1][1])
    return counts


def _core_pid(start: dict[str, Any]) -> int | None:
    return next((int(p) for p, comm in start.get("pids", {}).items() if comm.startswith("VLLM::")), None)


# -- py-spy (chrometrace: B/E events per thread, ts in microseconds from py-spy's start) -------------


def load_trace(path: Path, offset: float) -> Trace:
    with gzip.open(path) as f:
        events = json.load(f)
    by_thread: dict[tuple[int, int], list[dict[str, Any]]] = collections.defaultdict(list)
    for e in events:
        by_thread[(e["pid"], e["tid"])].append(e)
    out = {}
    for key, evs in by_thread.items():
        stack: list[tuple[str, str, int]] = []
        segs = []
        last = None
        for e in evs:
            t = offset + e["ts"] / 1e6
            if last is not None and t > last:
                segs.append((last, t, tuple(f for f in stack if not f[0].startswith("process "))))
            last = t
            frame = (e["name"], e["args"].get("filename", ""), e["args"].get("line", 0))
            if e["ph"] == "B":
                stack.append(frame)
            else:
                for i in range(len(stack) - 1, -1, -1):
                    if stack[i][0] == frame[0]:
                        del stack[i:]
                        break
        out[key] = segs
    return out


def _main_thread(trace: Trace, pid: int) -> tuple[int, int]:
    """The thread whose samples start with the interpreter's own first frame (`<module>`)."""
    threads = [k for k in trace if k[0] == pid and trace[k]]
    mains = [k for k in threads if any(st and st[0][0] == "<module>" for _, _, st in trace[k][:50])]
    return max(mains or threads, key=lambda k: sum(b - a for a, b, _ in trace[k]))


def short(frame: tuple[str, str, int]) -> str:
    name, file, line = frame
    for prefix in ("site-packages/", "/site/", "python3.12/", "/gpu/bin/"):
        if prefix in file:
            file = file.split(prefix, 1)[1]
    if "torch_compile_cache/" in file:
        file = "<compiled graph>"
    return f"{name} ({file}:{line})"


def category(st: tuple[Any, ...]) -> str:
    """What a main thread's stack is doing, by the first rule that matches."""
    if not st:
        return "(no stack: py-spy sample error)"
    names = [f[0] for f in st]
    if any(n in names for n in ("InductorStandaloneAdaptor.compile", "VllmBackend.__call__")):
        return "backbone compile (vLLM's Inductor backend)"
    if any(n in ("ConvertFrame.__call__", "ConvertFrameAssert.__call__") for n in names):
        frames = [f for f in st if "vllm/" in f[1] and "vllm/compilation/" not in f[1]]
        return "torch.compile (Dynamo+Inductor) under " + (short(frames[-1]) if frames else "?")
    if "_find_and_load" in names:
        return "imports"
    if "GPUModelRunner.capture_model" in names:
        return "CUDA-graph capture"
    if "warmup_kernels" in names:
        return "warmup_kernels: running the dummy steps"
    if any(n in names for n in ("deserialize_compile_artifacts", "load_all", "aot_compile_hash_factors")):
        return "compile cache: AOT load and its hash"
    if "GPUModelRunner.profile_run" in names:
        return "profile run"
    if "GPUModelRunner.load_model" in names or "Worker.load_model" in names:
        return "load_model (weights)"
    if "Worker.init_device" in names or "init_worker_distributed_environment" in names:
        return "init_device"
    if "wait_for_engine_startup" in names:
        return "API server: waiting for the engine core (zmq poll)"
    if "EngineCoreProc.run_busy_loop" in names:
        step = "EngineCore.step" in names
        return "engine core: serving a request" if step else "engine core: busy loop, idle"
    vllm = [f for f in st if "vllm/" in f[1]]
    return "other: " + short(vllm[-1] if vllm else st[-1])


def categories(segs: list[Any], t0: float, t1: float) -> collections.Counter[str]:
    c: collections.Counter[str] = collections.Counter()
    for a, b, st in segs:
        lo, hi = max(a, t0), min(b, t1)
        if hi > lo:
            c[category(st)] += hi - lo
    return c


def timeline(segs: list[Any], t0: float, t1: float, step: float = 1.0) -> list[str]:
    lines = []
    t = t0
    while t < t1:
        weight: collections.Counter[tuple[Any, ...]] = collections.Counter()
        for a, b, st in segs:
            lo, hi = max(a, t), min(b, t + step)
            if hi > lo:
                weight[st] += hi - lo
        if weight:
            st = weight.most_common(1)[0][0]
            vllm = [short(f) for f in st if "vllm/" in f[1] or "deploy/" in f[1]][-3:][::-1]
            leaf = short(st[-1]) if st else "(none)"
            lines.append(f"{t:6.1f}  {category(st)[:70]:70}  {leaf[:70]:70}  {' < '.join(vllm)[:300]}")
        t += step
    return lines


# -- procs.tsv and gpu.csv ---------------------------------------------------------------------------


def cpu_in(d: Path, pid: int | None, t0: float, t1: float) -> float | None:
    """Cores' worth of CPU a process used between t0 and t1 (utime+stime over wall time)."""
    if pid is None:
        return None
    procs = d / "procs.tsv"  # devtools.lab.coldstart's; an engine arm's start has only its run log
    rows = [r.split("\t") for r in procs.read_text().splitlines()[1:]] if procs.exists() else []
    pts = [(float(r[0]), float(r[4])) for r in rows if r[1] == str(pid)]

    def at(t: float) -> float | None:
        before = [c for tt, c in pts if tt <= t]
        return before[-1] if before else (0.0 if pts and pts[0][0] > t else None)

    a, b = at(t0), at(t1)
    return None if a is None or b is None or t1 - t0 < 0.5 else (b - a) / (t1 - t0)


def gpu_in(d: Path, spawn_unix: float, t0: float, t1: float) -> float | None:
    vals = []
    for line in (d / "gpu.csv").read_text().splitlines()[1:]:
        parts = [p.strip() for p in line.split(",")]
        try:
            stamp = dt.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=dt.UTC)
        except (ValueError, IndexError):
            continue
        t = stamp.timestamp() - spawn_unix
        if t0 <= t < t1:
            vals.append(float(parts[1]))
    return sum(vals) / len(vals) if vals else None


# -- importtime ---------------------------------------------------------------------------------------

_IMPORT = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(.*)$")


def import_segments(run_log: Path) -> list[dict[str, Any]]:
    """One segment per interpreter (each prints the header line first), in order of arrival; with
    several interpreters at once their lines interleave, so later segments may hold a few of another's."""
    segs: list[dict[str, Any]] = []
    for t, msg, rec in _records(run_log):
        if "import time:" not in msg:
            continue
        if "self [us]" in msg:
            segs.append({"t": t, "logger": rec.get("logger", "(stderr)"), "lines": []})
            continue
        m = _IMPORT.search(msg)
        if m and segs:
            depth = (len(m[3]) - 1) // 2
            segs[-1]["lines"].append((t, int(m[1]) / 1e6, int(m[2]) / 1e6, depth, m[4].strip()))
    return segs


def import_tree(lines: list[Any]) -> list[dict[str, Any]]:
    """importtime prints a module after its imports (post-order), indented by depth."""
    roots: list[dict[str, Any]] = []
    pending: dict[int, list[dict[str, Any]]] = collections.defaultdict(list)
    for t, self_s, cum_s, depth, name in lines:
        node = {"name": name, "self": self_s, "cum": cum_s, "t": t, "children": pending.pop(depth + 1, [])}
        for deeper in [k for k in pending if k > depth + 1]:
            node["children"] += pending.pop(deeper)
        (roots if depth == 0 else pending[depth]).append(node)
    return roots


def show_tree(nodes: list[dict[str, Any]], min_s: float, depth: int, indent: int = 0) -> list[str]:
    out = []
    for n in sorted(nodes, key=lambda n: -n["cum"]):
        if n["cum"] < min_s:
            continue
        out.append(f"{'  ' * indent}{n['cum']:6.2f} s  {n['name']}  (self {n['self']:.2f})")
        if indent + 1 < depth:
            out += show_tree(n["children"], min_s, depth, indent + 1)
    return out


# -- the summary ------------------------------------------------------------------------------------


def phase_rows(d: Path, start: dict[str, Any], m: dict[str, float]) -> list[dict[str, Any]]:
    core, serve = _core_pid(start), start.get("serve_pid")
    rows = []
    prev = 0.0
    for key, label, _ in MOMENTS:
        if key not in m:
            continue
        t = m[key]
        api = key in ("banner", "core_proc", "server", "health", "warmup", "ready")
        busy = None if key == "engine" else serve if api else core
        rows.append({
            "key": key, "label": label, "from": prev, "to": t, "s": t - prev,
            "cpu": cpu_in(d, busy, prev, t), "cpu_of": "API server" if api else "engine core",
            "gpu": gpu_in(d, start["spawn_unix"], prev, t),
        })  # fmt: skip
        prev = t
    return rows


def _f(v: float | None, digits: int = 1) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def arms_phases(tarballs: list[Path], out_md: Path) -> None:
    """The phases of every engine arm's start (devtools/lab/engine_arms.py's report tarballs), from their
    run logs alone (no procs.tsv or py-spy: the engine core's start and its imports are one phase)."""
    keys = [k for k, _, _ in MOMENTS if k != "core_proc"]
    labels = {k: label for k, label, _ in MOMENTS}
    labels["init"] = "API server: config; engine core started, its imports, to 'Initializing'"
    cols: list[tuple[str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, tgz in enumerate(tarballs):
            with tarfile.open(tgz) as tar:
                tar.extractall(Path(tmp) / str(n), filter="data")
            for log in sorted((Path(tmp) / str(n)).glob("*/[0-9][0-9]-*/run-*.log")):
                log.rename(log.with_name("run.log"))
                m = moments(log.parent, {}, None)
                prev, phases = 0.0, {}
                for k in keys:
                    if k in m:
                        phases[k], prev = m[k] - prev, m[k]
                phases["_total"] = m.get("ready", 0.0)
                cols.append((f"{tgz.name.split('.')[0]}/{log.parent.name} ({log.name})", phases))
    lines = [
        "# The engine arms' starts, phase by phase (devtools/lab/coldstart_analyze.py --arms; see README.md)",
        "",
        "Seconds from the spawn of `dgemma run`, from each start's log. A run's first start of a",
        "configuration compiles; every later one loads from the shared compile-cache directory.",
        "",
        *header("phase", *(c for c, _ in cols), align="lr"),
    ]
    for k in [*keys, "_total"]:
        label = "**spawn to ready**" if k == "_total" else labels[k]
        lines.append(row(label, *(_f(ph.get(k), 1) for _, ph in cols)))
    out_md.write_text("\n".join(lines) + "\n")
    print(f"wrote {out_md}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if args and args[0] == "--arms":  # --arms OUT.md ARMS.tar.gz...
        arms_phases([Path(a) for a in args[2:]], Path(args[1]))
        return 0
    here = Path(args[0])
    out = [
        "# Summary of the starts (written by devtools/lab/coldstart_analyze.py; see README.md)",
        "",
        "Seconds from the spawn of `dgemma run`. CPU: cores' worth of CPU the process named used in",
        "the phase (1.00 = one core busy throughout; the API server's for its own phases, the engine",
        "core's for the others). GPU: nvidia-smi's mean utilization in the phase.",
        "",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for tgz in sorted((here / "starts").glob("*.tgz")):
            with tarfile.open(tgz) as tar:
                tar.extractall(tmp, filter="data")
        dirs = sorted(p for p in Path(tmp).iterdir() if p.is_dir())
        table: dict[str, dict[str, float]] = {}
        envs: dict[str, dict[str, str]] = {}
        for d in dirs:
            start = json.loads((d / "start.json").read_text())
            trace = None
            if (d / "pyspy.json.gz").exists():
                trace = load_trace(d / "pyspy.json.gz", start["pyspy_started_s"])
            m = moments(d, start, trace)
            rows = phase_rows(d, start, m)
            table[d.name] = {r["key"]: r["s"] for r in rows} | {"_total": m.get("ready", 0.0)}
            envs[d.name] = start.get("env") or {}
            how = {0: "vLLM's DEBUG line", 1: "py-spy", 2: "the bar's count over its mean rate"}
            out += [
                f"## {d.name}: ready {_f(start.get('ready_s'), 2)} s",
                "",
                f"Options: {start.get('env') or '(none)'}, py-spy {start.get('pyspy_hz') or 'off'}; graphs "
                f"{graph_counts(d)}; capture start from {how.get(int(m.get('capture_how', -1)), '?')}.",
                "",
                *header("phase", "from", "to", "s", "CPU", "GPU %", align="lr"),
            ]
            out += [
                row(
                    r["label"],
                    f"{r['from']:.2f}",
                    f"{r['to']:.2f}",
                    f"{r['s']:.2f}",
                    f"{_f(r['cpu'], 2)}{'' if r['cpu'] is None else ' (' + r['cpu_of'] + ')'}",
                    _f(r["gpu"], 0),
                )
                for r in rows
            ]
            out.append("")
            core = _core_pid(start)
            if trace is not None and core is not None and start.get("serve_pid"):
                cmain, amain = _main_thread(trace, core), _main_thread(trace, int(start["serve_pid"]))
                out += [
                    "py-spy, the main threads' time in each phase by what their stacks show "
                    "(seconds; at most 4 categories each):",
                    "",
                    *header("phase", "engine core", "API server"),
                ]
                for r in rows:
                    cells = []
                    for thread in (cmain, amain):
                        c = categories(trace[thread], r["from"], r["to"])
                        cells.append("; ".join(f"{k} {v:.2f}" for k, v in c.most_common(4)) or "-")
                    out.append(row(r["label"], *cells))
                out.append("")
                lines = [f"# {d.name}: the main threads' stacks, every second (category, leaf, vLLM frames)"]
                for name, thread in (("engine core", cmain), ("API server", amain)):
                    lines += [f"## {name} {thread}", *timeline(trace[thread], 0.0, m.get("ready", 0.0) + 1)]
                (here / f"timeline-{d.name[:2]}.txt").write_text("\n".join(lines) + "\n")
            if start.get("env", {}).get("PYTHONPROFILEIMPORTTIME"):
                segs = import_segments(d / "run.log")
                out += ["python -X importtime (PYTHONPROFILEIMPORTTIME=1), one segment per interpreter:", ""]
                for s in segs:
                    top = sum(line[2] for line in s["lines"] if line[3] == 0)
                    span = f"{s['lines'][0][0]:.2f}-{s['lines'][-1][0]:.2f}" if s["lines"] else "-"
                    out.append(
                        f"- from {s['t']:.2f} s ({s['logger']}): {len(s['lines'])} modules, "
                        f"{top:.2f} s of imports, lines arriving {span}"
                    )
                for s in segs:
                    if len(s["lines"]) < 2000:
                        continue
                    selfs: collections.Counter[str] = collections.Counter()
                    for line in s["lines"]:
                        selfs[line[4].split(".")[0]] += line[1]
                    out += [
                        "",
                        f"The interpreter from {s['t']:.2f} s: imports of 0.25 s or more (cumulative).",
                        "self time by top-level package: "
                        + ", ".join(f"{k} {v:.2f}" for k, v in selfs.most_common(10)),
                        "",
                        "```",
                        *show_tree(import_tree(s["lines"]), 0.25, 7),
                        "```",
                    ]
                out.append("")
        keys = [k for k, _, _ in MOMENTS]
        labels = dict((k, label) for k, label, _ in MOMENTS)
        names = list(table)
        out += [
            "## All starts side by side (seconds per phase)",
            "",
            *header("phase", *(n[:2] for n in names), align="lr"),
        ]
        for k in keys:
            out.append(row(labels[k], *(_f(table[n].get(k), 1) for n in names)))
        out.append(row("**spawn to ready**", *(f"**{table[n]['_total']:.1f}**" for n in names)))
        out += ["", "Starts: " + ", ".join(names), ""]
        groups: dict[str, list[str]] = collections.defaultdict(list)
        for n in names:
            env = envs[n]
            if "fork" in n or env.get("VLLM_WORKER_MULTIPROC_METHOD") == "fork":
                groups["restored, fork"].append(n)
            elif n.endswith("cold"):
                continue
            elif env.get("VLLM_LOGGING_LEVEL") or env.get("PYTHONPROFILEIMPORTTIME"):
                groups["restored, DEBUG logs (and importtime)"].append(n)
            else:
                groups["restored, as shipped (spawn)"].append(n)
        kinds = [f"{g} ({', '.join(v[:2] for v in m)})" for g, m in groups.items()]
        out += [
            "## Restored starts by kind: median (min-max) seconds per phase",
            "",
            *header("phase", *kinds, align="lr"),
        ]
        for k in [*keys, "_total"]:
            cells = []
            for members in groups.values():
                vals = sorted(table[n][k] for n in members if k in table[n])
                cells.append(f"{statistics.median(vals):.1f} ({vals[0]:.1f}-{vals[-1]:.1f})" if vals else "-")
            label = "**spawn to ready**" if k == "_total" else labels[k]
            out.append(row(label, *cells))
        out.append("")
    (here / "summary.md").write_text("\n".join(out) + "\n")
    print(f"wrote {here / 'summary.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
