"""Engine settings side by side on one GPU host: which ones lift throughput (issue 19).

Each arm is the kit started as the image starts it (`dgemma run`: the supervisor, its fit and flags,
the gateway in front; `deploy.gpucheck`'s child runner and sampling start, sample and stop it),
with some `EngineSettings` changed. Once ready, the gateway is loaded with Locust as the gate loads
it: the gate's latency phase at 1 client (one question per decision), then 3-question decisions at
each client count. Per load level: Locust's rate and percentiles, vLLM's engine steps from its
/metrics counters (steps, tokens and finished requests per step, steps above the CUDA-graph cap),
its queue once a second, and the whole GPU's memory and load (nvidia-smi). Then the arm is stopped
and the next one started.

The arms share one compile-cache directory, emptied first: vLLM, Inductor and Triton key their own
entries, so an arm run again starts from its own compiled graphs, and a new arm reuses whatever of
the earlier arms' kernels still match. The supervisor's compile-cache store is off (it would empty
the directory at each miss).

The report (`arms.json`, `arms.md`, `arms.png`) is rewritten after every load level, so a run cut
short still leaves the arms it did. Compare arms within one run only: hosts differ by ~20 %.

    python -m devtools.lab.engine_arms CKPT --out DIR --arms docs/engine-arms-h200/arms.toml
    python -m devtools.lab.engine_arms CKPT --out DIR \\
        --arm baseline --arm async-on:engine_async_scheduling=true --arm baseline

The arms are a TOML file, one `[[arm]]` table per run in run order: `name`, `fields` (a table of
`EngineSettings` fields, deploy/runtime/settings.py, and their values), `replicas` and `env` (other
variables of the kit's processes: Python's and torch's own); `--arm NAME[:FIELD=VALUE,...]` is the
shorthand of one table (`env.NAME=VALUE` for an `env` entry); both are devtools/lab/sweep.py's
record, as toy_sweep's runs and coldstart's starts are. The run writes its arms to DIR/arms.toml,
beside its report. A name given again runs that arm again; `baseline` with no fields is today's settings;
`engine_gpu=h200` runs that GPU's serving profile (its seqs, batched tokens and graph cap, the
gateway admitting as many decisions as it has seqs) and holds it to that GPU's memory;
`replicas=N` starts N copies of the kit on the one GPU (each engine given 1/N of the memory share),
one after the other, and splits each level's clients evenly between their gateways: whether a second
engine core uses what one leaves idle (one engine core's main thread is the limit,
docs/throughput-h200). After the levels, the gateway's share of a decision at 1 client
(`loadtest.overhead`). Without `--arms` or `--arm`: today's settings against vLLM's own defaults, and today's
again (docs/engine-arms-h200/).
Needs vLLM's CUDA build (`vllm` on PATH), a GPU, Locust and matplotlib.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import math
import secrets
import shlex
import shutil
import signal
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
from pydantic import Field, ValidationError, field_validator, model_validator

from app.core.config import ConfigError, env_names
from app.core.models import validation_problems
from app.core.net import free_port, free_ports
from deploy.errors import GpuCheckError
from deploy.gpucheck import child
from deploy.gpucheck.check import host_facts
from deploy.gpucheck.metrics import engines_counters
from deploy.gpucheck.record import Sample, Start
from deploy.gpucheck.sampling import Samples, sampling
from deploy.runtime.gpu_budget import GPU_NAMES, GPUS
from deploy.runtime.nvidia_smi import detect_gpu, used_mib
from deploy.runtime.settings import EngineSettings
from devtools.lab.sweep import Entry, Record, read_toml, shorthand, validated
from devtools.tables import header, row

L4_MIB = round(GPUS["l4"] * 1024)
VLLM_CAPTURE = 512  # vLLM 0.32's own cap on a non-Blackwell GPU (engine_max_cudagraph_capture_size=0)
# Today's settings against vLLM's own defaults (what the kit ran before docs/engine-arms-h200), twice.
DEFAULT_ARMS = (
    "baseline",
    "vllm-defaults:engine_async_scheduling=true,engine_max_cudagraph_capture_size=0,engine_cudagraph_sizes=vllm,"
    "engine_multiproc_method=spawn",
    "baseline",
)
MAX_REPLICAS = 4
# What a run writes above its arms (DIR/arms.toml).
ARMS_HEADER = (
    "# The arms of this run, in run order (python -m devtools.lab.engine_arms CKPT --arms FILE).\n\n"
)
# An arm's `env` names the process environment the kit's settings do not hold (Python's and torch's
# own switches: PYTHONPYCACHEPREFIX, TORCH_COMPILE_JOB_ID); the kit's own go through `fields`.
ENV_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
SETTLE_S = 3.0  # the queue's first seconds of a level are the ramp, not the steady state


class Arm(Entry):
    """One engine configuration: `EngineSettings` fields and their values, as the environment
    carries them (an `[[arm]]` table, or `--arm NAME:FIELD=VALUE,...`)."""

    settings: dict[str, str] = Field(default_factory=dict, alias="fields")
    replicas: int = 1  # copies of the kit on the one GPU, the load split evenly between them
    extra_env: dict[str, str] = Field(default_factory=dict, alias="env")  # beyond the kit's settings

    @field_validator("settings", "extra_env", mode="before")
    @classmethod
    def _as_environment(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            raise ValueError("a table of NAME = VALUE is needed")
        return {str(k): _env_value(k, v) for k, v in value.items()}

    @field_validator("replicas", mode="before")
    @classmethod
    def _replicas(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_REPLICAS:
            raise ValueError(f"{value!r}; 1 to {MAX_REPLICAS}")
        return value

    @field_validator("extra_env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for var in value:
            if not var or not set(var) <= ENV_NAME_CHARS or var.startswith("DGEMMA_"):
                raise ValueError(
                    f"{var!r}: an upper-case variable name, not the kit's DGEMMA_ ones (those are fields)"
                )
        return value

    @model_validator(mode="after")
    def _as_the_supervisor_reads_them(self) -> Arm:
        for key, value in self.settings.items():
            if key not in EngineSettings.model_fields:
                raise ValueError(f"{key!r} is not an EngineSettings field")
            if key == "engine_gpu" and value not in GPUS:
                raise ValueError(f"engine_gpu {value!r}; known: {', '.join(GPUS)}")
        try:
            self.engine("l4")  # the values checked as the supervisor would read them
        except ValidationError as e:
            raise ValueError(validation_problems(e)) from e
        except ValueError as e:
            raise ValueError(" ".join(str(e).split())) from e
        return self

    def env(self, out: Path | None = None) -> dict[str, str]:
        """The settings as the supervisor reads them (DGEMMA_ENGINE_...), and the arm's own `env`,
        `{out}` in its values standing for the run's output folder (no host's path in an arms file)."""
        names = env_names(EngineSettings)
        extra = {k: v.replace("{out}", str(out)) if out else v for k, v in self.extra_env.items()}
        return {names[k][0]: v for k, v in self.settings.items()} | extra

    def engine(self, gpu: str) -> EngineSettings:
        """The settings the supervisor resolves for this arm (`gpu`: the run's profile, unless the
        arm names its own `engine_gpu`)."""
        return EngineSettings(**{"engine_mode": "gpu", "engine_gpu": gpu, **self.settings})  # type: ignore[arg-type]

    def gpu(self, default: str) -> str:
        """The GPU whose serving profile this arm runs (and whose memory it is held to)."""
        return self.engine(default).engine_gpu

    def capture_size(self, gpu: str = "l4") -> int:
        """The largest step that runs as a CUDA graph, in tokens."""
        return self.engine(gpu).engine_max_cudagraph_capture_size or VLLM_CAPTURE


def _env_value(key: object, value: object) -> str:
    """A TOML value as the supervisor's environment carries it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise ValueError(f"{key} = {value!r}; a string, a number or a boolean")


def parse_arms(specs: list[str]) -> list[Arm]:
    """The run's arms in order from `NAME[:FIELD=VALUE,...]` (the `--arm` shorthand of one `[[arm]]`
    table: `replicas=N`, `env.NAME=VALUE`); a name seen before, alone or with the same fields, runs
    that arm again."""
    tables: list[dict[str, Any]] = []
    for spec in specs:
        name, options = shorthand(spec)
        table: dict[str, Any] = {"name": name}
        for item in options:
            key, eq, value = (part.strip() for part in item.partition("="))
            if not eq:
                raise ConfigError(f"--arm {spec!r}: {item!r} is not FIELD=VALUE")
            if key == "replicas":
                table["replicas"] = int(value) if value.isdigit() else value
            elif key.startswith("env."):
                table.setdefault("env", {})[key.removeprefix("env.")] = value
            else:
                table.setdefault("fields", {})[key] = value
        tables.append(table)
    return _plan([validated(Arm, t, f"--arm {s!r}") for s, t in zip(specs, tables, strict=True)], "")


def load_arms(path: Path) -> list[Arm]:
    """The run's arms in order from a TOML file: one `[[arm]]` table per run, with `name`, `fields`
    (`EngineSettings` fields and their values), `replicas` and `env`; a name seen before, alone or with
    the same fields, runs that arm again (as `parse_arms`). Every refusal is one line."""
    where = f"arms file {path}"
    plan = validated(ArmsFile, read_toml(path, "arms file"), where, entries="arm")
    return _plan(list(plan.arm), f"{where}: ")


class ArmsFile(Record):
    """An arms file: its `[[arm]]` tables in run order."""

    arm: tuple[Arm, ...] = ()


def _plan(arms: list[Arm], prefix: str) -> list[Arm]:
    """The arms in run order, an arm named again alone being the first of that name."""
    known: dict[str, Arm] = {}
    plan: list[Arm] = []
    for arm in arms:
        bare = not (arm.settings or arm.extra_env or arm.replicas != 1)
        if arm.name in known and not bare and known[arm.name] != arm:
            raise ConfigError(f"{prefix}arm {arm.name} is given twice with different settings")
        plan.append(known.setdefault(arm.name, arm))
    if not plan:
        raise ConfigError(f"{prefix}no arms to run")
    return plan


def arms_toml(arms: list[Arm]) -> str:
    """The arms as `load_arms` reads them: an arm's fields at its first run, its name alone after."""
    lines: list[str] = []
    seen: set[str] = set()
    for arm in arms:
        lines += ["[[arm]]", f"name = {json.dumps(arm.name)}"]
        if arm.name not in seen:
            if arm.settings:
                pairs = ", ".join(f"{k} = {json.dumps(v)}" for k, v in arm.settings.items())
                lines.append(f"fields = {{ {pairs} }}")
            if arm.replicas != 1:
                lines.append(f"replicas = {arm.replicas}")
            if arm.extra_env:
                pairs = ", ".join(f"{k} = {json.dumps(v)}" for k, v in arm.extra_env.items())
                lines.append(f"env = {{ {pairs} }}")
        seen.add(arm.name)
        lines.append("")
    return "\n".join(lines)


@dataclass
class Level:
    """One load level of one arm: Locust's figures and the engine's under it."""

    clients: int
    kind: str  # "latency" (one question per decision) or "throughput" (three)
    seconds: int
    requests: int = 0
    failures: int = 0
    rps: float = 0.0  # successful decisions per second
    decisions_per_s: float = 0.0  # answered questions per second
    p50_ms: float = float("nan")
    p95_ms: float = float("nan")
    engine: dict[str, float | None] = field(default_factory=dict)


@dataclass
class ArmRun:
    """One start of one arm, its load levels and its memory."""

    index: int
    arm: str
    settings: dict[str, str]
    gpu: str = "l4"  # the serving profile's GPU: its memory is the arm's budget
    replicas: int = 1
    env: dict[str, str] = field(default_factory=dict)  # the arm's `env`, beside its settings
    start: dict[str, Any] = field(default_factory=dict)  # deploy.gpucheck.record.Start, as a dict
    replica_starts: list[dict[str, Any]] = field(default_factory=list)  # the other replicas' starts
    levels: list[Level] = field(default_factory=list)
    idle_mib: float | None = None
    peak_mib: float | None = None
    overhead: dict[str, float] | None = None  # loadtest.overhead's ratios at 1 client, after the levels
    error: str | None = None
    skipped: str | None = None


@dataclass
class Report:
    """Everything the run measured; `arms.json` is this, as JSON."""

    host: dict[str, Any]
    command: str
    plan: list[str]
    latency_seconds: int
    seconds: int
    clients: list[int]
    started: str = field(default_factory=lambda: f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC")
    runs: list[ArmRun] = field(default_factory=list)

    @property
    def baseline(self) -> str:
        return self.plan[0]


@dataclass
class Options:
    model: Path
    out: Path
    arms: list[Arm]
    clients: list[int]
    seconds: int = 30
    latency_seconds: int = 30
    profile_gpu: str = "l4"
    cache_dir: Path = Path(".cache/engine-arms/compile")
    startup_timeout_s: float = 1700.0
    start_by_s: float | None = None  # start no arm later than this after the command began
    overhead_rounds: int = 20  # gateway against raw engine, interleaved (loadtest.overhead); 0: none
    reuse_cache: bool = False  # keep what an earlier run on this host compiled (its first start is warm)


def summarize_level(
    level: Level,
    stats: dict[str, float],
    before: dict[str, float],
    after: dict[str, float],
    queue: list[dict[str, float]],
    samples: list[Sample],
    capture_size: int,
) -> None:
    """Fill a level from Locust's stats, vLLM's counters at its ends, and what was sampled during it
    (the queue and nvidia-smi's samples of its window only)."""
    questions = 1 if level.kind == "latency" else 3
    level.requests, level.failures = int(stats["requests"]), int(stats["failures"])
    level.rps = stats["rps"] * (1 - level.failures / max(1, level.requests))
    level.decisions_per_s = level.rps * questions
    level.p50_ms, level.p95_ms = stats["p50_ms"], stats["p95_ms"]

    def delta(key: str) -> float:
        return after.get(key, 0.0) - before.get(key, 0.0)

    steps = delta("steps")
    # The histogram's smallest bucket at or above the cap: steps above it certainly ran eager.
    bounds = sorted(int(k[len("steps_le_") :]) for k in after if k.startswith("steps_le_"))
    capped = f"steps_le_{next((b for b in bounds if b >= capture_size), capture_size)}"
    running = [q.get("running", 0.0) for q in queue]
    waiting = [q.get("waiting", 0.0) for q in queue]
    level.engine = {
        "steps": steps,
        "steps_per_s": steps / level.seconds,
        "tokens_per_step": delta("step_tokens") / steps if steps else None,
        "requests_per_step": delta("requests_finished") / steps if steps else None,
        # Steps whose iteration tokens (computed prompt + committed tokens) pass the CUDA-graph cap:
        # the forward's batch is larger still (a read's 33 canvas tokens), so these ran eager; a
        # lower bound on the eager steps. The cap must be a bucket bound of vLLM's histogram.
        "over_cap_share": (steps - delta(capped)) / steps if steps and capped in after else None,
        "prefix_hit_rate": delta("prefix_cache_hits") / delta("prefix_cache_queries")
        if delta("prefix_cache_queries")
        else None,
        "running_median": statistics.median(running) if running else None,
        "running_max": max(running, default=None),
        "waiting_median": statistics.median(waiting) if waiting else None,
        "waiting_max": max(waiting, default=None),
        "kv_usage_max": max((q.get("kv_usage", 0.0) for q in queue), default=None),
        "gpu_busy_pct": statistics.fmean(s.util for s in samples) if samples else None,
    }


def _window(items: list[Any], t0: float, t1: float) -> list[Any]:
    return [x for x in items if t0 <= (x["t"] if isinstance(x, dict) else x.t) < t1]


@dataclass
class _Stack:
    """One copy of the kit on the GPU: its gateway, its engine, and what is sampled from them."""

    url: str
    engine_urls: list[str]  # its engines (several with `engine_replicas`)
    probes: list[Samples]  # one per engine: its queue (and the GPU's samples)
    proc: child.DgemmaRun | None = None
    start: Start | None = None

    @property
    def probe(self) -> Samples:
        return self.probes[0]

    def counters(self) -> dict[str, float]:
        """vLLM's counters, summed over the stack's engines."""
        return engines_counters(self.engine_urls)

    def queue(self, t0: float, t1: float) -> list[dict[str, float]]:
        """The engines' queue in a window, summed per second (one engine: as sampled)."""
        if len(self.probes) == 1:
            return _window(self.probe.queue, t0, t1)
        seconds: dict[int, dict[str, float]] = {}
        for p in self.probes:
            for q in _window(p.queue, t0, t1):
                row = seconds.setdefault(int(q["t"]), {"t": float(int(q["t"]))})
                for k in ("running", "waiting"):
                    row[k] = row.get(k, 0.0) + q.get(k, 0.0)
                row["kv_usage"] = max(row.get("kv_usage", 0.0), q.get("kv_usage", 0.0))
        return [seconds[t] for t in sorted(seconds)]


def run_arm(report: Report, run: ArmRun, arm: Arm, opts: Options, cold: bool) -> None:
    """Start the kit with the arm's settings (`arm.replicas` copies of it, one after the other), load
    it level by level, stop it; the report is written after each level."""
    from loadtest import overhead as bench
    from loadtest.gate import GatePhase, GateProfile, finish_locust, start_locust, warm_up

    arm_dir = opts.out / f"{run.index:02d}-{arm.name}"
    gpu = run.gpu = arm.gpu(opts.profile_gpu)
    engine = arm.engine(gpu)
    arm_dir.mkdir(parents=True, exist_ok=True)
    found = detect_gpu()
    on_larger = bool(found and found[1] > GPUS[gpu] * 1.05)
    key = secrets.token_urlsafe(24)
    headers = {"Authorization": f"Bearer {key}"}
    baseline_mib = used_mib()
    stacks: list[_Stack] = []
    profile = GateProfile.load("l4")
    try:
        for i in range(arm.replicas):
            logs = arm_dir if arm.replicas == 1 else arm_dir / f"replica-{i + 1}"
            logs.mkdir(parents=True, exist_ok=True)
            port, engine_port = free_port(), free_ports(engine.engine_replicas)
            engines = range(engine.engine_replicas)  # the supervisor's, on engine_port + k
            stack = _Stack(
                f"http://127.0.0.1:{port}", [f"http://127.0.0.1:{engine_port + k}" for k in engines],
                [Samples() for _ in engines],
            )  # fmt: skip
            env = child.run_env(
                opts.model, gpu, opts.cache_dir, key=key, port=port, engine_port=engine_port,
                on_larger=on_larger, startup_timeout_s=opts.startup_timeout_s,
            ) | arm.env(opts.out)  # fmt: skip
            # The gateway admits as many decisions as its engines have seqs, as terraform/main.tf sets it.
            env["DGEMMA_MAX_CONCURRENT_DECISIONS"] = str(engine.engine_max_num_seqs * engine.engine_replicas)
            if arm.replicas > 1 and not on_larger:
                # Each engine gets its share of the GPU (one held to a smaller GPU's memory fits as it is).
                util = env_names(EngineSettings)["engine_gpu_memory_utilization"][0]
                env[util] = f"{engine.engine_gpu_memory_utilization / arm.replicas:.4f}"
            stacks.append(stack)
            cache = "cold" if cold and not i else "warm"
            stack.proc, stack.start = child.start(env, logs, cache, opts.startup_timeout_s)
        first = stacks[0]
        assert first.start is not None
        run.start = asdict(first.start)
        run.replica_starts = [asdict(st.start) for st in stacks[1:] if st.start is not None]
        run.idle_mib = sum(st.start.idle_mib or 0.0 for st in stacks if st.start is not None)
        for st in stacks:
            warm_up(st.url, headers, 300)
        levels = [("latency", 1, opts.latency_seconds)] + [
            ("throughput", n, opts.seconds) for n in opts.clients
        ]
        t0 = time.monotonic()
        with contextlib.ExitStack() as sampled:
            for st in stacks:
                for probe, engine_url in zip(st.probes, st.engine_urls, strict=True):
                    sampled.enter_context(sampling(probe, [engine_url], t0))
            for kind, clients, seconds in levels:
                # The load split evenly between the copies; a level of fewer clients loads the first ones.
                loaded = stacks[: min(clients, len(stacks))]
                shares = [clients // len(loaded) + (j < clients % len(loaded)) for j in range(len(loaded))]
                before = [st.counters() for st in loaded]
                begun = time.monotonic() - t0
                phases, procs = [], []
                for j, (st, users) in enumerate(zip(loaded, shares, strict=True)):
                    phase = GatePhase(kind, users, seconds)
                    out = (
                        arm_dir / f"c{clients}" / (f"replica-{j + 1}" if len(stacks) > 1 else "")
                    ).resolve()
                    out.mkdir(parents=True, exist_ok=True)
                    phases.append((phase, out))
                    procs.append(start_locust(st.url, phase, profile, out, headers))
                for proc, (phase, out) in zip(procs, phases, strict=True):
                    finish_locust(proc, phase, out)
                ended = time.monotonic() - t0
                parts = []
                for st, b, (phase, _) in zip(loaded, before, phases, strict=True):
                    part = Level(clients, kind, seconds)
                    summarize_level(
                        part, phase.stats, b, st.counters(),
                        st.queue(begun + SETTLE_S, ended),
                        _window(st.probe.gpu, begun + SETTLE_S, ended),
                        arm.capture_size(gpu),
                    )  # fmt: skip
                    parts.append(part)
                level = combine_levels(parts)
                run.levels.append(level)
                run.peak_mib = max((s.used_mib for s in first.probe.gpu), default=baseline_mib) - baseline_mib
                _say(f"  {arm.name} @{clients}: {_level_line(level)}")
                write(report, opts.out)
        if opts.overhead_rounds:
            o = bench.ratios(bench.run(first.url, first.engine_urls[0], opts.overhead_rounds, headers))
            run.overhead = asdict(o) | {"gateway_share": o.gateway_share}
            _say(f"  {arm.name} gateway against the raw engine: {o}")
            write(report, opts.out)
    finally:
        for st in reversed(stacks[1:]):  # the last one's stop waits for an empty GPU
            if st.proc is not None and st.start is not None:
                st.start.stop_s, st.start.exit_code = st.proc.stop()
        if stacks and stacks[0].proc is not None and stacks[0].start is not None:
            child.stop(stacks[0].proc, stacks[0].start)
            run.start = asdict(stacks[0].start)
            run.replica_starts = [asdict(st.start) for st in stacks[1:] if st.start is not None]


def combine_levels(parts: list[Level]) -> Level:
    """One level from the same level on each copy of the kit: rates and queues add up, a step's
    shape and the percentiles are the copies' mean, the GPU is the one they share."""
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    level = Level(first.clients, first.kind, first.seconds)  # each part's clients: the level's
    level.requests = sum(p.requests for p in parts)
    level.failures = sum(p.failures for p in parts)
    level.rps = sum(p.rps for p in parts)
    level.decisions_per_s = sum(p.decisions_per_s for p in parts)
    level.p50_ms = statistics.fmean(p.p50_ms for p in parts)
    level.p95_ms = statistics.fmean(p.p95_ms for p in parts)

    def values(key: str) -> list[float]:
        return [v for p in parts if (v := p.engine.get(key)) is not None]

    def total(key: str) -> float | None:
        return sum(values(key)) if values(key) else None

    def mean(key: str) -> float | None:
        return statistics.fmean(values(key)) if values(key) else None

    level.engine = {
        "steps": total("steps"),
        "steps_per_s": total("steps_per_s"),
        "tokens_per_step": mean("tokens_per_step"),
        "requests_per_step": mean("requests_per_step"),
        "over_cap_share": mean("over_cap_share"),
        "prefix_hit_rate": mean("prefix_hit_rate"),
        "running_median": total("running_median"),
        "running_max": total("running_max"),
        "waiting_median": total("waiting_median"),
        "waiting_max": total("waiting_max"),
        "kv_usage_max": max(values("kv_usage_max"), default=None),
        "gpu_busy_pct": first.engine.get("gpu_busy_pct"),
        "replicas": len(parts),
    }
    return level


def _level_line(level: Level) -> str:
    e = level.engine
    return (
        f"{level.rps:.1f} req/s, p50 {level.p50_ms:.0f} / p95 {level.p95_ms:.0f} ms, "
        f"{_f(e.get('requests_per_step'), 1)} requests and {_f(e.get('tokens_per_step'), 0)} tokens per "
        f"step, running {_f(e.get('running_median'), 0)}, waiting {_f(e.get('waiting_median'), 0)}, "
        f"eager steps >= {_pct(e.get('over_cap_share'))}, {level.failures} failed"
    )


def _say(line: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {line}", flush=True)


def run(opts: Options, command: str) -> Report:
    """Every arm in order; the report is in `opts.out` whatever happens to an arm."""
    if shutil.which("vllm") is None:
        raise ConfigError("no `vllm` on PATH: run where vLLM's CUDA build is installed")
    if detect_gpu() is None:
        raise ConfigError("nvidia-smi reports no GPU")
    began = time.monotonic()
    opts.out.mkdir(parents=True, exist_ok=True)
    (opts.out / "arms.toml").write_text(ARMS_HEADER + arms_toml(opts.arms))  # beside its report
    if opts.cache_dir.exists() and not opts.reuse_cache:
        shutil.rmtree(opts.cache_dir)  # the first start is cold; later ones find what it compiled
    opts.cache_dir.mkdir(parents=True, exist_ok=True)
    report = Report(
        host=host_facts(),
        command=command,
        plan=[a.name for a in opts.arms],
        latency_seconds=opts.latency_seconds,
        seconds=opts.seconds,
        clients=opts.clients,
    )
    write(report, opts.out)
    try:
        for i, arm in enumerate(opts.arms, start=1):
            r = ArmRun(index=i, arm=arm.name, settings=arm.settings, replicas=arm.replicas, env=arm.extra_env)
            report.runs.append(r)
            elapsed = time.monotonic() - began
            if opts.start_by_s is not None and elapsed > opts.start_by_s:
                r.skipped = (
                    f"not started: {elapsed:.0f} s had passed, past --start-by-s {opts.start_by_s:.0f}"
                )
                _say(f"arm {i} {arm.name}: {r.skipped}")
                continue
            _say(f"arm {i}/{len(opts.arms)} {arm.name} {arm.settings or '(as the profile is today)'}")
            try:
                run_arm(report, r, arm, opts, cold=i == 1)
            except (GpuCheckError, httpx.HTTPError, OSError, RuntimeError, ValueError) as e:
                r.error = f"{type(e).__name__}: {e}"[-2000:]
                _say(f"arm {i} {arm.name} failed: {r.error[-400:]}")
            write(report, opts.out)
    finally:
        write(report, opts.out)  # also when interrupted: the arms done, and the one cut short
    _say(f"done in {time.monotonic() - began:.0f} s: {opts.out / 'arms.md'}")
    return report


# -- the report ------------------------------------------------------------------------------------


def write(report: Report, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    data = json.dumps(asdict(report), indent=1, default=str)
    (out / "arms.json").write_text(data.replace("NaN", "null") + "\n")
    (out / "arms.md").write_text(markdown(report))
    if any(r.levels for r in report.runs):
        plot(report, out / "arms.png")


def _f(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:,.{digits}f}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.0f} %"


def _share(percent: float | None) -> float | None:
    return None if percent is None else percent / 100


def _level(run: ArmRun, clients: int, kind: str = "throughput") -> Level | None:
    return next((lv for lv in run.levels if lv.clients == clients and lv.kind == kind), None)


def _mean(values: list[float]) -> float | None:
    values = [v for v in values if not math.isnan(v)]
    return statistics.fmean(values) if values else None


def arm_means(report: Report) -> dict[str, dict[str, float | None]]:
    """Per arm, over its runs: p50 and p95 at 1 client, decisions per second at each client count."""
    out: dict[str, dict[str, float | None]] = {}
    for name in dict.fromkeys(report.plan):
        runs = [r for r in report.runs if r.arm == name and r.levels]
        if not runs:
            continue
        lat = [lv for r in runs if (lv := _level(r, 1, "latency"))]
        means: dict[str, float | None] = {
            "p50_ms": _mean([lv.p50_ms for lv in lat]),
            "p95_ms": _mean([lv.p95_ms for lv in lat]),
        }
        for n in report.clients:
            means[f"rps@{n}"] = _mean([lv.rps for r in runs if (lv := _level(r, n))])
        out[name] = means
    return out


def ratios(report: Report) -> dict[str, dict[str, float | None]]:
    """Each arm's means over the baseline's (the plan's first arm), measured in the same run."""
    means = arm_means(report)
    base = means.get(report.baseline)
    if not base:
        return {}
    out: dict[str, dict[str, float | None]] = {}
    for name, m in means.items():
        out[name] = {}
        for k, v in m.items():
            b = base.get(k)
            out[name][k] = v / b if v is not None and b else None
    return out


def drift(report: Report) -> list[str]:
    """How far the baseline's later runs moved from its first (the same settings, the same host)."""
    runs = [r for r in report.runs if r.arm == report.baseline and r.levels]
    lines = []
    for later in runs[1:]:
        parts = []
        for n in report.clients:
            a, b = _level(runs[0], n), _level(later, n)
            if a and b and a.rps:
                parts.append(f"@{n} x{b.rps / a.rps:.3f}")
        a1, b1 = _level(runs[0], 1, "latency"), _level(later, 1, "latency")
        if a1 and b1 and a1.p50_ms:
            parts.append(f"p50@1 x{b1.p50_ms / a1.p50_ms:.3f}")
        lines.append(f"run {later.index} against run {runs[0].index}: " + ", ".join(parts))
    return lines


def _flags_added(report: Report, run: ArmRun) -> str:
    """The engine argv's words this run has and the baseline's first run lacks, and the reverse."""
    base = next((r for r in report.runs if r.arm == report.baseline and r.start.get("engine_argv")), None)
    mine = run.start.get("engine_argv") or []
    if base is None or not mine or base is run:
        return ""
    theirs = base.start["engine_argv"]

    def pairs(argv: list[str]) -> set[str]:
        """Each flag with its values (a list of many, such as the graph sizes, shortened)."""
        out, i = set(), 0
        while i < len(argv):
            j = i + 1
            while argv[i].startswith("--") and j < len(argv) and not argv[j].startswith("--"):
                j += 1
            values = argv[i + 1 : j]
            if len(values) > 4:
                values = [values[0], values[1], "...", values[-1], f"({len(values)} values)"]
            out.add(" ".join([argv[i], *values]))
            i = j
        return out

    plus = sorted(pairs(mine) - pairs(theirs) - {a for a in pairs(mine) if a.startswith("--port")})
    return " ".join(f"`{p}`" for p in plus)


def markdown(report: Report) -> str:
    h = report.host
    version = next((r.start.get("phases", {}).get("vllm_version") for r in report.runs if r.start), None)
    lines = [
        f"# Engine arms on an {h.get('gpu', 'unknown GPU')}, side by side",
        "",
        f"{report.started}. {h.get('gpu')} ({_f(h.get('gpu_mib'), 0)} MiB, driver {h.get('driver')}), "
        f"{h.get('cpus')} CPUs, Python {h.get('python')}" + (f", vLLM {version}" if version else "") + ". "
        "Each arm's serving profile (the `l4` one held to the L4's memory), **random weights** (figures "
        "of time and memory, never of answers); **not an L4 measurement**. Compare arms within this run "
        "only.",
        "",
        "```",
        report.command,
        "```",
        "",
        f"Each arm: `dgemma run` with its settings, ready, then Locust through the gateway: 1 client "
        f"for {report.latency_seconds} s (the gate's latency phase, one question per decision), then "
        f"{', '.join(map(str, report.clients))} clients for {report.seconds} s each (three questions "
        "per decision). Plan: " + ", ".join(report.plan) + ".",
        "",
        "## Runs",
        "",
        *header(
            "#", "arm", "settings", "ready", "torch.compile", "graphs", "GPU idle / peak (MiB)",
            "p50 / p95 @1 (ms)", *(f"req/s @{n}" for n in report.clients), "failures", "gateway share @1",
            align="rllr",
        ),
    ]  # fmt: skip
    for r in report.runs:
        words = [f"`{k}={v}`" for k, v in (r.settings | r.env).items()]
        settings = ", ".join(words + ([f"`replicas={r.replicas}`"] if r.replicas > 1 else [])) or "(today's)"
        if r.skipped or (r.error and not r.levels):
            lines.append(row(r.index, r.arm, settings, r.skipped or "failed: " + (r.error or "")[:160]))
            continue
        ph = r.start.get("phases", {})
        lat = _level(r, 1, "latency")
        peak = r.peak_mib
        budget_mib = round(GPUS[r.gpu] * 1024)
        fit = "" if peak is None else (" ✓" if peak <= budget_mib else f" **over the {GPU_NAMES[r.gpu]}**")
        share = (r.overhead or {}).get("gateway_share")
        cut = " (cut: " + r.error[:120] + ")" if r.error else ""
        lines.append(
            row(
                r.index,
                r.arm,
                settings,
                f"{_f(r.start.get('ready_s'), 0)} s",
                f"{_f(ph.get('compile_s'), 1)} s",
                f"{_f(ph.get('graphs_s'), 0)} s, {_f(ph.get('graphs_gib'), 2)} GiB "
                f"(cap {_f(ph.get('max_capture_size'), 0)})",
                f"{_f(r.idle_mib, 0)} / {_f(peak, 0)}{fit}",
                f"{_f(lat.p50_ms if lat else None, 0)} / {_f(lat.p95_ms if lat else None, 0)}",
                *(_f(lv.rps if (lv := _level(r, n)) else None, 1) for n in report.clients),
                f"{sum(lv.failures for lv in r.levels)}{cut}",
                _pct(share),
            )
        )
    lines += [
        "",
        f"GPU memory is the whole GPU's (nvidia-smi, less what was in use before the start), against "
        f"the memory of the arm's profile GPU (the L4's {L4_MIB:,} MiB for `l4`). 'cap': the largest "
        "step vLLM runs as a CUDA graph, in tokens. Gateway share: 1 - engine / gateway p50 of the "
        "same 3-question decisions sent one at a time to the raw engine and through the gateway, "
        "interleaved (`loadtest.overhead`), after the levels.",
        "",
        "## Against the baseline",
        "",
    ]
    rat = ratios(report)
    if rat:
        keys = ["p50_ms", "p95_ms"] + [f"rps@{n}" for n in report.clients]
        labels = ["p50 @1", "p95 @1"] + [f"req/s @{n}" for n in report.clients]
        means = arm_means(report)
        lines += [
            f"Each arm's mean over its runs, over `{report.baseline}`'s mean (latency: lower is better; "
            "req/s: higher is better).",
            "",
            *header("arm", "runs", *labels, align="lr"),
        ]
        for name, ratio in rat.items():
            n_runs = sum(1 for r in report.runs if r.arm == name and r.levels)
            cells = [
                f"x{ratio[k]:.2f} ({_f(means[name].get(k), 1 if k.startswith('rps') else 0)})"
                if ratio.get(k) is not None
                else "—"
                for k in keys
            ]
            lines.append(row(name, n_runs, *cells))
        lines.append("")
        d = drift(report)
        if d:
            lines += [f"Drift of `{report.baseline}` within the run: " + "; ".join(d) + ".", ""]
    else:
        lines += ["(no baseline measured yet)", ""]
    lines += [
        "## The engine under load",
        "",
        "vLLM's own counters over each level (/metrics before and after) and its queue once a second "
        f"(after the first {SETTLE_S:.0f} s); GPU busy: nvidia-smi's utilization, mean. Steps: engine "
        "outputs (`vllm:iteration_tokens_total`'s count); tokens / step: its sum, the computed prompt "
        "tokens and committed tokens, not the forward's batch (which adds each read's 33 canvas "
        "tokens); requests / step: finished requests (one per question) per step; eager steps, at "
        "least: the share of steps whose tokens alone pass the arm's CUDA-graph cap.",
        "",
        *header(
            "#", "arm", "clients", "req/s", "decisions/s", "p50 / p95 (ms)", "steps/s", "tokens / step",
            "requests / step", "eager steps, at least", "running (median / max)", "waiting (median / max)",
            "KV max", "GPU busy", align="rlr",
        ),
    ]  # fmt: skip
    for r in report.runs:
        for lv in r.levels:
            e = lv.engine
            lines.append(
                row(
                    r.index,
                    r.arm,
                    f"{lv.clients}{' (1 q.)' if lv.kind == 'latency' else ''}",
                    f"{lv.rps:.1f}",
                    f"{lv.decisions_per_s:.1f}",
                    f"{_f(lv.p50_ms, 0)} / {_f(lv.p95_ms, 0)}",
                    _f(e.get("steps_per_s"), 1),
                    _f(e.get("tokens_per_step"), 0),
                    _f(e.get("requests_per_step"), 1),
                    _pct(e.get("over_cap_share")),
                    f"{_f(e.get('running_median'), 0)} / {_f(e.get('running_max'), 0)}",
                    f"{_f(e.get('waiting_median'), 0)} / {_f(e.get('waiting_max'), 0)}",
                    _pct(e.get("kv_usage_max")),
                    _pct(_share(e.get("gpu_busy_pct"))),
                )
            )
    lines += ["", "## The engines' argv", ""]
    for r in report.runs:
        argv = r.start.get("engine_argv")
        if not argv:
            continue
        added = _flags_added(report, r)
        if r.arm == report.baseline and not added:
            if r is next(x for x in report.runs if x.arm == report.baseline and x.start.get("engine_argv")):
                lines += [f"Run {r.index} ({r.arm}):", "", "```", shlex.join(argv), "```", ""]
            continue
        lines.append(f"- run {r.index} ({r.arm}): the baseline's argv plus {added or '(nothing)'}")
    return "\n".join(lines) + "\n"


def plot(report: Report, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_rps, ax_lat) = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [1.6, 1]})
    runs = [r for r in report.runs if r.levels]
    for r in runs:
        pts = [(lv.clients, lv.rps) for lv in r.levels if lv.kind == "throughput"]
        if pts:
            xs, ys = zip(*pts, strict=True)
            style = "--" if r.arm == report.baseline else "-"
            ax_rps.plot(xs, ys, style, marker="o", label=f"#{r.index} {r.arm}")
    ax_rps.set_xscale("log", base=2)
    ax_rps.set_xticks(report.clients, [str(n) for n in report.clients])
    ax_rps.set_xlabel("clients (3-question decisions, closed loop)")
    ax_rps.set_ylabel("requests/s (each a 3-question decision)")
    ax_rps.set_ylim(bottom=0)
    ax_rps.set_title("Throughput through the gateway")
    ax_rps.grid(alpha=0.3)
    if ax_rps.get_legend_handles_labels()[0]:
        ax_rps.legend(fontsize=8)
    width = 0.38
    for i, r in enumerate(runs):
        lv = _level(r, 1, "latency")
        if lv is None:
            continue
        ax_lat.bar(i - width / 2, lv.p50_ms, width, color="tab:blue", label="p50" if i == 0 else None)
        ax_lat.bar(i + width / 2, lv.p95_ms, width, color="tab:orange", label="p95" if i == 0 else None)
    ax_lat.set_xticks(range(len(runs)), [f"#{r.index}\n{r.arm}" for r in runs], fontsize=8)
    ax_lat.set_ylabel("ms")
    ax_lat.set_title("Latency at 1 client (one question)")
    ax_lat.grid(alpha=0.3, axis="y")
    ax_lat.legend(fontsize=8)
    fig.suptitle(
        f"Engine arms on an {report.host.get('gpu', 'unknown GPU')}, random weights (not an L4)",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# -- the command -----------------------------------------------------------------------------------


def _clients(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{text!r}: client counts, comma-separated") from e
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: at least one client count, each >= 1")
    return values


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m devtools.lab.engine_arms", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("model", type=Path, help="a checkpoint with a manifest (`dgemma model random DIR`)")
    parser.add_argument("--out", type=Path, default=Path("reports/engine-arms"), help="report directory")
    arms = parser.add_mutually_exclusive_group()
    arms.add_argument(
        "--arms", type=Path, metavar="FILE",
        help="the arms in run order, a TOML file of [[arm]] tables (name, fields, replicas)",
    )  # fmt: skip
    arms.add_argument(
        "--arm", action="append", metavar="NAME[:FIELD=VALUE,...]",
        help="an arm, in run order; repeat the flag (default: " + " ".join(DEFAULT_ARMS) + ")",
    )  # fmt: skip
    parser.add_argument("--clients", type=_clients, default=[8, 32, 64], help="throughput levels (8,32,64)")
    parser.add_argument("--seconds", type=int, default=30, help="each throughput level's length (30)")
    parser.add_argument("--latency-seconds", type=int, default=30, help="the 1-client level's length (30)")
    parser.add_argument("--gpu", choices=list(GPUS), default="l4", help="the serving profile's GPU (l4)")
    parser.add_argument(
        "--cache-dir", type=Path, default=Path(".cache/engine-arms/compile"),
        help="the arms' shared compile caches (emptied first)",
    )  # fmt: skip
    parser.add_argument(
        "--start-by-s", type=float, help="start no arm later than this many seconds after the command began"
    )
    parser.add_argument(
        "--reuse-cache", action="store_true",
        help="keep the cache directory's contents (an earlier run's on this host) instead of emptying it",
    )  # fmt: skip
    parser.add_argument(
        "--overhead-rounds", type=int, default=20,
        help="per arm, decisions sent to the raw engine and through the gateway in turn (20; 0: none)",
    )  # fmt: skip
    return parser


def options(args: argparse.Namespace) -> Options:
    if args.seconds < 5 or args.latency_seconds < 5:
        raise ConfigError("a level needs at least 5 s")
    return Options(
        model=args.model,
        out=args.out,
        arms=load_arms(args.arms) if args.arms else parse_arms(args.arm or list(DEFAULT_ARMS)),
        clients=args.clients,
        seconds=args.seconds,
        latency_seconds=args.latency_seconds,
        profile_gpu=args.gpu,
        cache_dir=args.cache_dir,
        start_by_s=args.start_by_s,
        overhead_rounds=args.overhead_rounds,
        reuse_cache=args.reuse_cache,
    )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        opts = options(args)
    except ConfigError as e:
        print(f"engine arms: {e}", file=sys.stderr)
        return 2

    def interrupted(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)  # the `finally`s stop the engine

    signal.signal(signal.SIGTERM, interrupted)
    command = shlex.join(
        ["python", "-m", "devtools.lab.engine_arms", *(argv if argv is not None else sys.argv[1:])]
    )
    try:
        report = run(opts, command)
    except ConfigError as e:
        print(f"engine arms: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("engine arms: interrupted; the report has the arms done", file=sys.stderr)
        return 1
    return 0 if all(r.levels and not r.error for r in report.runs) else 1


if __name__ == "__main__":
    sys.exit(main())
