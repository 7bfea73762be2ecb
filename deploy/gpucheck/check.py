"""Does it start, fit and meet its targets on this GPU? `dgemma gpu-check`, on a GPU host with vLLM.

It starts the kit as the image does (`dgemma run`: the supervisor's own GPU path, its fit and its
flags, the gateway in front), twice: with empty compile caches (cold) and with the caches the first
start left (warm). Each start is timed from the process's spawn to the supervisor's ready line, and
vLLM's own log lines place the phases in between. Then the load-test gate runs through the gateway
(latency@1, batch@32, the overhead against the raw engine) while nvidia-smi samples the whole GPU's
memory and vLLM's /metrics its queue; the prefix cache's hit rate is read off vLLM's counters.
One report: `report.md`, `report.json`, `gpu-check.png`, beside the gate's own.

On a larger GPU than the profile's (an H200 for the `l4` profile) the supervisor serves the profile
as it would on its GPU (DGEMMA_ENGINE_ON_LARGER_GPU), and the profile's GPU memory is the budget the
measured peak is held to: the L4 fit is then measured, not computed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx
from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console

from app.core.config import ConfigError
from app.core.polling import wait_until
from deploy.errors import GpuCheckError
from deploy.runtime.gpu_budget import GPUS, NVIDIA_SMI_DIRS, Budget, detect_gpu
from deploy.runtime.supervisor import READY_PREFIX

console = Console(stderr=True, soft_wrap=True)
MIB = 2**20

# What vLLM 0.32's log says of each phase of its start: (key, pattern, group converters).
_PHASES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (key, re.compile(pattern))
    for key, pattern in (
        ("vllm_version", r"Initializing a V1 LLM engine \(v(?P<v>[\w.+-]+)\)"),
        ("weights_read_s", r"Loading weights took (?P<v>[\d.]+) seconds"),
        ("weights_gib", r"Model loading took (?P<v>[\d.]+) GiB memory"),
        ("model_load_s", r"Model loading took [\d.]+ GiB memory and (?P<v>[\d.]+) seconds"),
        ("dynamo_s", r"Dynamo bytecode transform time: (?P<v>[\d.]+) s"),
        ("compile_s", r"torch\.compile took (?P<v>[\d.]+) s in total"),
        ("warmup_s", r"Initial profiling/warmup run took (?P<v>[\d.]+) s"),
        ("kv_gib", r"reserved (?P<v>[\d.]+) GiB memory for KV Cache"),
        ("kv_gib", r"Available KV cache memory: (?P<v>[\d.]+) GiB"),
        ("kv_tokens", r"GPU KV cache size: (?P<v>[\d,]+) tokens"),
        ("graphs_s", r"Graph capturing finished in (?P<v>[\d.]+) secs"),
        ("graphs_gib", r"Graph capturing finished in [\d.]+ secs, took (?P<v>[\d.]+) GiB"),
        ("init_engine_s", r"init engine \(profile, create kv cache, warmup model\) took (?P<v>[\d.]+) s"),
        # The largest step that runs as a CUDA graph, from the config vLLM prints at start.
        ("max_capture_size", r"'max_cudagraph_capture_size': (?P<v>\d+)"),
        # The supervisor's compile cache (deploy/runtime/compile_cache.py) and its engine warm-up.
        ("cache_restore_s", r"compile cache hit: \d+ files, [\d.]+ MB in (?P<v>[\d.]+) s"),
        ("cache_mb", r"compile cache (?:hit|saved): \d+ files, (?P<v>[\d.]+) MB"),
        ("cache_save_s", r"compile cache saved: \d+ files, [\d.]+ MB in (?P<v>[\d.]+) s"),
        ("warmup_decision_s", r"engine warm-up: a first decision in (?P<v>[\d.]+) s"),
    )
)
# The supervisor's last word on a compile-cache save (saved, nothing to save, lost a race, failed).
_SAVED = re.compile(r"compile cache (saved|not saved|.* was saved by another|save to .* failed)")
# The kernels vLLM chose, as it names them.
_KERNELS = (
    ("linear", re.compile(r"Using (?P<v>\w+) for CompressedTensorsWNA16")),
    ("moe", re.compile(r"Using '(?P<v>\w+)' WNA16 MoE backend")),
    ("experts", re.compile(r"^Using (?P<v>\w+Experts)$")),
    ("attention", re.compile(r"Using AttentionBackendEnum\.(?P<v>\w+) backend")),
)
# Moments of the start, by the first line that says so (seconds from the spawn).
_MOMENTS = (
    ("weights verified", re.compile(r"^weights ready in")),
    ("caches restored", re.compile(r"^compile cache hit")),
    ("engine started", re.compile(r"^started engine")),
    ("engine core up", re.compile(r"Initializing a V1 LLM engine")),
    ("weights on the GPU", re.compile(r"Model loading took")),
    ("compiled", re.compile(r"torch\.compile took|Initial profiling/warmup run took")),
    ("KV cache", re.compile(r"GPU KV cache size")),
    ("graphs captured", re.compile(r"Graph capturing finished")),
    ("engine ready", re.compile(r"init engine \(profile")),
    ("warm-up decision", re.compile(r"^engine warm-up: a first decision")),
    ("gateway started", re.compile(r"^started gateway")),
)


def parse_start_log(lines: list[tuple[float, str]]) -> dict[str, Any]:
    """Phases, kernels, moments and the engine's argv from a start's log: (seconds since the spawn,
    the line) pairs, each line one of the supervisor's JSON lines (vLLM's relayed) or plain text."""
    phases: dict[str, Any] = {}
    kernels: dict[str, str] = {}
    moments: dict[str, float] = {}
    argv: list[str] = []
    for t, raw in lines:
        message, record = raw, None
        if raw.startswith("{"):
            try:
                record = json.loads(raw)
                message = str(record.get("message", ""))
            except ValueError:
                pass
        for key, pattern in _PHASES:
            m = pattern.search(message)
            if m and key not in phases:
                v = m["v"].replace(",", "")
                phases[key] = v if key == "vllm_version" else float(v)
        for key, pattern in _KERNELS:
            m = pattern.search(message)
            if m:
                kernels.setdefault(key, m["v"])
        for name, pattern in _MOMENTS:
            if name not in moments and pattern.search(message):
                moments[name] = round(t, 1)
        if record and message.startswith("started engine") and isinstance(record.get("argv"), list):
            argv = [str(a) for a in record["argv"]]
    return {"phases": phases, "kernels": kernels, "moments": moments, "engine_argv": argv}


def engine_counters(text: str) -> dict[str, float]:
    """vLLM's /metrics: the counters and gauges the report reads (summed over label sets), and its
    engine steps: `steps` and `step_tokens` (the count and sum of `vllm:iteration_tokens_total`, one
    observation per step) and `steps_le_N` (steps of at most N tokens, the histogram's buckets)."""
    wanted = {
        "vllm:prefix_cache_queries": "prefix_cache_queries",
        "vllm:prefix_cache_hits": "prefix_cache_hits",
        "vllm:num_requests_running": "running",
        "vllm:num_requests_waiting": "waiting",
        "vllm:kv_cache_usage_perc": "kv_usage",
        "vllm:prompt_tokens": "prompt_tokens",
        "vllm:request_success": "requests_finished",
    }
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        name = family.name.removesuffix("_total")  # without a TYPE line the suffix stays
        if name == "vllm:iteration_tokens":
            _step_histogram(family.samples, out)
            continue
        key = wanted.get(name)
        if key is None:
            continue
        out[key] = out.get(key, 0.0) + sum(s.value for s in family.samples if not s.name.endswith("_created"))
    return out


def engines_counters(engine_urls: list[str], http: httpx.Client | None = None) -> dict[str, float]:
    """`engine_counters` of each engine on the GPU (`engine_replicas`), added up: the KV cache's use
    is the fullest engine's, as each engine has its own."""
    total: dict[str, float] = {}
    for url in engine_urls:
        page = (http.get(f"{url}/metrics") if http else httpx.get(f"{url}/metrics", timeout=10)).text
        for k, v in engine_counters(page).items():
            total[k] = max(total.get(k, 0.0), v) if k == "kv_usage" else total.get(k, 0.0) + v
    return total


def _step_histogram(samples: list[Any], out: dict[str, float]) -> None:
    for s in samples:
        if s.name.endswith("_count"):
            key = "steps"
        elif s.name.endswith("_sum"):
            key = "step_tokens"
        elif s.name.endswith("_bucket") and s.labels.get("le") not in (None, "+Inf"):
            key = f"steps_le_{float(s.labels['le']):.0f}"
        else:
            continue
        out[key] = out.get(key, 0.0) + s.value


@dataclass
class Start:
    """One start of `dgemma run`."""

    cache: str  # "cold", "warm" (the cold start's caches left in place) or "restored" (from the store)
    ready_s: float  # spawn to the supervisor's ready line
    phases: dict[str, Any]
    kernels: dict[str, str]
    moments: dict[str, float]
    engine_argv: list[str]
    idle_mib: float = 0.0  # the whole GPU, after the ready line
    stop_s: float = 0.0  # SIGTERM to exit
    exit_code: int | None = None


@dataclass
class Sample:
    t: float  # seconds since the gate began
    used_mib: float
    util: float  # GPU utilization %, nvidia-smi's


@dataclass
class Check:
    """Everything the report says; `report.json` is this, as JSON."""

    host: dict[str, Any]
    profile: str
    gate_profile: str
    starts: list[Start] = field(default_factory=list)
    memory: dict[str, Any] = field(default_factory=dict)
    gate: dict[str, Any] = field(default_factory=dict)
    engine: dict[str, Any] = field(default_factory=dict)  # prefix cache, queue
    samples: list[Sample] = field(default_factory=list)
    queue: list[dict[str, float]] = field(default_factory=list)  # vLLM's running/waiting over time
    phase_marks: dict[str, float] = field(default_factory=dict)
    verdict: list[str] = field(default_factory=list)  # what failed (empty: it starts, fits, meets)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _free_ports(n: int) -> int:
    """The first of `n` consecutive free ports: the supervisor's engines take `engine_port` + k."""
    for _ in range(100):
        first = _free_port()
        with contextlib.ExitStack() as held:
            try:
                for k in range(1, n):
                    s = held.enter_context(socket.socket())
                    s.bind(("127.0.0.1", first + k))
            except OSError:
                continue
        return first
    raise OSError(f"no {n} consecutive free ports on 127.0.0.1")


def _smi() -> str:
    path = os.environ.get("PATH", "") + os.pathsep + os.pathsep.join(NVIDIA_SMI_DIRS)
    smi = shutil.which("nvidia-smi", path=path)
    if smi is None:
        raise ConfigError("no nvidia-smi: this host has no NVIDIA GPU to check")
    return smi


def gpu_used_mib() -> float:
    out = subprocess.run(
        [_smi(), "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
        capture_output=True, text=True, timeout=30, check=True,
    ).stdout  # fmt: skip
    return float(out.strip().splitlines()[0])


def host_facts() -> dict[str, Any]:
    query = "--query-gpu=name,memory.total,driver_version"
    out = (
        subprocess.run(
            [_smi(), query, "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        .stdout.strip()
        .splitlines()[0]
    )
    name, total, driver = (x.strip() for x in out.split(","))
    return {
        "gpu": name,
        "gpu_mib": float(total),
        "driver": driver,
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
    }


class _Run:
    """`dgemma run` as a child process: its stderr (JSON lines) kept with arrival times, its stdout
    watched for the ready line."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.started = time.monotonic()
        self.lines: list[tuple[float, str]] = []
        self.ready_at: float | None = None
        self._log = log.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "deploy.cli", "run"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._threads = [
            threading.Thread(target=self._read, args=(self.proc.stdout, True), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, False), daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _read(self, stream: IO[bytes], stdout: bool) -> None:
        for raw in stream:
            t = time.monotonic() - self.started
            line = raw.decode("utf-8", errors="replace").rstrip()
            self.lines.append((t, line))
            self._log.write(f"{t:8.2f} {line}\n")
            self._log.flush()
            if stdout and line.startswith(READY_PREFIX) and self.ready_at is None:
                self.ready_at = t

    def wait_ready(self, timeout_s: float, progress: Any) -> float:
        deadline = time.monotonic() + timeout_s
        while self.ready_at is None:
            if self.proc.poll() is not None:
                time.sleep(0.5)  # the readers drain what is left
                raise GpuCheckError(
                    f"`dgemma run` exited with {self.proc.returncode} before it was ready:\n{self.tail()}"
                )
            if time.monotonic() > deadline:
                raise GpuCheckError(f"`dgemma run` not ready after {timeout_s:.0f} s:\n{self.tail()}")
            last = self.lines[-1][1] if self.lines else ""
            progress(time.monotonic() - self.started, _short(last))
            time.sleep(1.0)
        return self.ready_at

    def tail(self, n: int = 25) -> str:
        return "\n".join(_short(line, 300) for _, line in self.lines[-n:])

    def stop(self, timeout_s: float = 60) -> tuple[float, int | None]:
        """SIGTERM, as Cloud Run sends it; (seconds to exit, exit code)."""
        started = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        elapsed = time.monotonic() - started
        for t in self._threads:
            t.join(timeout=5)
        self._log.close()
        return elapsed, self.proc.returncode


def _short(line: str, limit: int = 140) -> str:
    if line.startswith("{"):
        with contextlib.suppress(ValueError):
            line = str(json.loads(line).get("message", line))
    return line if len(line) <= limit else line[: limit - 1] + "…"


@contextmanager
def sampling(check: Check, engine_urls: list[str], t0: float) -> Iterator[None]:
    """nvidia-smi's memory and utilization every 250 ms, vLLM's queue (all engines') every second,
    until the block ends."""
    smi = subprocess.Popen(
        [_smi(), "--query-gpu=memory.used,utilization.gpu", "--format=csv,noheader,nounits", "-lms", "250"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    done = threading.Event()

    def read_smi() -> None:
        assert smi.stdout is not None
        for line in smi.stdout:
            try:
                used, util = (float(x) for x in line.split(","))
            except ValueError:
                continue
            check.samples.append(Sample(round(time.monotonic() - t0, 2), used, util))

    def poll_engine() -> None:
        with httpx.Client(timeout=5) as http:
            while not done.wait(1.0):
                try:
                    c = engines_counters(engine_urls, http)
                except httpx.HTTPError:
                    continue
                check.queue.append({"t": round(time.monotonic() - t0, 1), **c})

    threads = [
        threading.Thread(target=read_smi, daemon=True),
        threading.Thread(target=poll_engine, daemon=True),
    ]
    for t in threads:
        t.start()
    try:
        yield
    finally:
        done.set()
        smi.terminate()
        smi.wait(timeout=10)
        for t in threads:
            t.join(timeout=5)


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
    extra_env: dict[str, str] = field(default_factory=dict)
    # The supervisor's compile-cache store (a directory the check owns, emptied first): the second
    # start then restores what the first saved, as a revision's second Cloud Run instance would.
    cache_store: Path | None = None


def run_env(opts: Options, key: str, port: int, engine_port: int, on_larger: bool) -> dict[str, str]:
    """The environment of `dgemma run`: the image's settings, this host's paths, and compile caches
    that this check owns (so that cold is cold and warm is the cold start's leftovers)."""
    cache = opts.cache_dir.resolve()
    env = {
        **os.environ,
        "DGEMMA_ENGINE_MODE": "gpu",
        "DGEMMA_ENGINE_ATTENTION_BACKEND": "TRITON_ATTN",
        "DGEMMA_MODEL_DIR": str(opts.model.resolve()),
        "DGEMMA_WEIGHTS_MODE": "baked",
        "DGEMMA_ENGINE_GPU": opts.profile_gpu,
        "DGEMMA_ENGINE_ON_LARGER_GPU": "true" if on_larger else "false",
        "DGEMMA_ENGINE_PORT": str(engine_port),
        "DGEMMA_ENGINE_STARTUP_TIMEOUT_S": str(opts.startup_timeout_s),
        "DGEMMA_HOST": "127.0.0.1",
        "PORT": str(port),
        "DGEMMA_API_KEYS": key,
        "DGEMMA_LOG_LEVEL": "INFO",
        "VLLM_CACHE_ROOT": str(cache / "vllm"),
        "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"),
        "TRITON_CACHE_DIR": str(cache / "triton"),
        "CUDA_CACHE_PATH": str(cache / "cuda"),
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("DGEMMA_API_KEYS_FILE", None)
    if opts.cache_store is not None:
        env |= {
            "DGEMMA_COMPILE_CACHE_URL": str(opts.cache_store.resolve()),
            "DGEMMA_COMPILE_CACHE_DIR": str(cache),
        }
    else:
        env["DGEMMA_COMPILE_CACHE_URL"] = "off"  # the check's own caches: warm is the cold start's leftovers
    return env | opts.extra_env


def fit_budget(opts: Options) -> Budget:
    """The supervisor's own budget for this checkpoint and profile (the computed rows)."""
    from deploy.runtime.gpu_budget import Arch, budget, load_config, profile_for
    from deploy.runtime.settings import EngineSettings

    config = load_config(opts.model)
    settings = EngineSettings(engine_mode="gpu", model_dir=opts.model, engine_gpu=opts.profile_gpu)
    return budget(Arch.from_config(config), profile_for(settings, config))


def start(check: Check, opts: Options, cache: str, env: dict[str, str]) -> tuple[_Run, Start]:
    baseline = gpu_used_mib()
    run = _Run(env, opts.out / f"run-{cache}.log")
    with console.status(f"{cache} start") as status:

        def progress(t: float, last: str) -> None:
            status.update(f"{cache} start: {t:4.0f} s  [dim]{last}[/]")

        try:
            ready = run.wait_ready(opts.startup_timeout_s + 120, progress)
        except BaseException:
            run.stop()  # one not ready in time still runs: the GPU must be free for what comes next
            raise
    parsed = parse_start_log(run.lines)
    s = Start(cache=cache, ready_s=round(ready, 1), **parsed)
    time.sleep(3)  # let the allocator settle after the first decisions of the warm-up probes
    s.idle_mib = gpu_used_mib() - baseline
    console.print(f"{cache} start: ready in {ready:.0f} s; GPU {s.idle_mib:,.0f} MiB at idle")
    check.starts.append(s)
    return run, s


def await_save(run: _Run, s: Start, timeout_s: float = 300.0) -> None:
    """With a compile-cache store: wait for the supervisor's save to end before stopping the start
    that made the caches (a real instance lives on; the check's next start restores the archive)."""
    done = wait_until(lambda: any(_SAVED.search(line) for _, line in run.lines), timeout_s, interval_s=1.0)
    s.phases.update({k: v for k, v in parse_start_log(run.lines)["phases"].items() if k.startswith("cache_")})
    console.print(f"{s.cache} start: compile cache " + ("save ended" if done else "save did not end"))


def stop(run: _Run, s: Start) -> None:
    seconds, s.exit_code = run.stop()
    s.stop_s = round(seconds, 1)
    console.print(f"{s.cache} start: stopped in {s.stop_s:.1f} s, exit {s.exit_code}")
    # The next start measures from an empty GPU.
    wait_until(lambda: gpu_used_mib() < 1024, 60, interval_s=1.0)


def gate(check: Check, opts: Options, url: str, engine_urls: list[str], key: str) -> None:
    from loadtest.gate import GateProfile
    from loadtest.gate import run as run_gate

    profile = GateProfile.load(opts.gate_profile).overridden(
        [], opts.latency_seconds, opts.throughput_seconds
    )
    before = engines_counters(engine_urls)
    t0 = time.monotonic()
    marks: dict[str, float] = {}
    with sampling(check, engine_urls, t0):

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
    found = detect_gpu()
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
    b = fit_budget(opts)
    key = secrets.token_urlsafe(24)
    port, engine_port = _free_port(), _free_ports(b.profile.replicas)
    url = f"http://127.0.0.1:{port}"
    engine_urls = [f"http://127.0.0.1:{engine_port + i}" for i in range(b.profile.replicas)]
    env = run_env(opts, key, port, engine_port, on_larger)
    baseline = gpu_used_mib()
    try:
        cold_run, cold = start(check, opts, "cold", env)
        try:
            gate(check, opts, url, engine_urls, key)
        except GateError as e:  # the second start is still measured; the report says why
            check.verdict.append(f"gate: {e}")
        finally:
            if opts.cache_store is not None:
                await_save(cold_run, cold)
            stop(cold_run, cold)
        warm_run, warm = start(check, opts, "restored" if opts.cache_store else "warm", env)
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
        from deploy.gpucheck.report import write

        write(check, opts.out)
    return check
