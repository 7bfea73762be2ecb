"""The one process supervisor: weights, then the engine, then the gateway (and, in `dgemma dev`, the
alert router); it owns signals and shutdown.

Same code for `make dev` and the container. Each step is a child process in a session of its own,
so SIGTERM interrupts any of them, including a weights download. If a child exits on its own, the
supervisor stops the rest and exits non-zero (so Cloud Run replaces the instance). On SIGTERM/SIGINT
it stops the router, then the gateway (uvicorn finishes in-flight requests), then the engine, within
the grace. On Cloud Run the router is a service of its own (CPU only), not a child of the GPU one.
The GPU engine's compile caches are restored before it starts and saved after (compile_cache.py).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import httpx
from pydantic import SecretStr

from app.alerts.settings import AlertRouterSettings
from app.core.config import ConfigError, redacted, to_env
from app.core.errors import KitError
from app.core.polling import wait_http_ok, wait_until
from app.gateway.settings import GatewaySettings
from deploy.runtime import compile_cache
from deploy.runtime.settings import (
    CPU_LAUNCHER,
    FLASHINFER_REFUSAL,
    FLASHINFER_SAMPLER_ENV,
    EngineSettings,
    SupervisorSettings,
)

log = logging.getLogger("deploy.supervisor")
# The one line that says the stack is up; the local-stack harness waits for it on stdout.
READY_PREFIX = "dgemma ready:"
# The engine's warm-up decision: one question of each type, the shapes the alert router asks.
WARMUP_DECISION = {
    "state": "DiskUsageHigh on db-1: disk 97% full, growing 2% per hour.",
    "questions": {
        "page": {"type": "noul", "instructions": "Should on-call be paged now?"},
        "team": {
            "type": "choice",
            "instructions": "Which team owns this alert?",
            "criteria": {"database": None, "network": None, "app": None},
        },
        "severity": {
            "type": "score",
            "instructions": "How severe is this alert?",
            "criteria": ["low", "medium", "high"],
        },
    },
}


class StartRefused(KitError, RuntimeError):
    """A step before the engine (weights) failed: the instance must not serve."""

    exit_code = 2
    label = "refusing to start"


@dataclass
class Child:
    name: str
    argv: list[str]
    env: dict[str, str]
    log_path: Path | None = None
    relay: bool = False  # re-emit the child's output as JSON log lines (logger `deploy.<name>`)
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    recent: deque[str] = field(default_factory=lambda: deque(maxlen=30), repr=False)  # relayed lines
    _log_file: IO[bytes] | None = field(default=None, repr=False)
    _relay: threading.Thread | None = field(default=None, repr=False)

    def start(self) -> None:
        stdout: IO[bytes] | int | None = None
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log_file = self.log_path.open("ab")
            stdout = self._log_file
        elif self.relay:
            stdout = subprocess.PIPE
        # A session of its own, so the whole tree (vLLM forks engine-core and workers) can be stopped.
        self.proc = subprocess.Popen(
            self.argv,
            env=self.env,
            stdout=stdout,
            stderr=subprocess.STDOUT if stdout is not None else None,
            start_new_session=True,
        )
        if self.relay and self._log_file is None:
            relay = logging.getLogger(f"deploy.{self.name}")
            self._relay = threading.Thread(
                target=relay_output, args=(self.proc, relay, self.recent), daemon=True
            )
            self._relay.start()
        log.info("started %s (pid %d)", self.name, self.proc.pid, extra={"argv": self.argv})

    def exited(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def stop(self, grace_s: float) -> None:
        """SIGTERM the child's process group, wait up to `grace_s`, then SIGKILL what is left."""
        if self.proc is None:
            return
        _signal_group(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            log.warning("%s did not stop within %.1f s; killing it", self.name, grace_s)
        # vLLM's engine-core and worker may outlive the API server by a few seconds: kill the group.
        _signal_group(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        if self._log_file:
            self._log_file.close()

    def log_tail(self, lines: int = 30) -> str:
        """The child's last lines of output (from its log file, or as relayed)."""
        if self.log_path is None:
            if self._relay is not None:
                self._relay.join(timeout=2)  # the relay drains the pipe after the child exits
            return "\n".join(list(self.recent)[-lines:])
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


# vLLM: "(EngineCore pid=12) INFO 11-30 06:21:15 [core.py:133] message"; torch: "[W1130 06:21:21 ...]".
_VLLM_LINE = re.compile(
    r"^(?:\((?P<process>[\w-]+) pid=\d+\)\s+)?(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+"
    r"\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+\[(?P<source>[^\]]+)\]\s?(?P<message>.*)$"
)
_TORCH_LINE = re.compile(r"^\[(?P<level>[IWEF])\d{4} ")
_TORCH_LEVELS = {"I": logging.INFO, "W": logging.WARNING, "E": logging.ERROR, "F": logging.CRITICAL}


def parse_vllm_line(line: str, previous: int) -> tuple[int, str, dict[str, str]]:
    """(level, message, extra fields) of one line of vLLM's output. A line without a level of its
    own (a traceback, a progress bar) keeps the previous line's level; a traceback starts an ERROR."""
    m = _VLLM_LINE.match(line)
    if m:
        extra = {"source": str(m["source"])} | ({"vllm_process": str(m["process"])} if m["process"] else {})
        return logging.getLevelNamesMapping()[m["level"]], str(m["message"]), extra
    t = _TORCH_LINE.match(line)
    if t:
        return _TORCH_LEVELS[t["level"]], line, {}
    if line.startswith("Traceback (most recent call last)"):
        return logging.ERROR, line, {}
    return previous, line, {}


def relay_output(proc: subprocess.Popen[bytes], logger: logging.Logger, recent: deque[str]) -> None:
    """Re-emit a child's output as JSON log lines (severity from vLLM's own level), so Cloud
    Logging files it like the gateway's; keep the last lines in `recent`."""
    assert proc.stdout is not None
    level = logging.INFO
    for raw in proc.stdout:
        line = raw.decode("utf-8", errors="replace").rstrip()
        if not line:
            continue
        recent.append(line)
        level, message, extra = parse_vllm_line(line, level)
        if not message.strip():  # the blank lines of vLLM's banner
            continue
        try:
            logger.log(level, "%s", message, extra=extra)
        except Exception:  # never stop draining the pipe: a full pipe would stall the engine
            logger.error("%s", line)


def engine_command(
    gateway: GatewaySettings, engine: EngineSettings, replica: int = 0
) -> tuple[list[str], dict[str, str]]:
    """The engine's argv and extra environment for the configured mode (`replica`: which of the
    `engine_replicas` engines, on `engine_port` + replica); refuses FlashInfer and, on the GPU, a
    profile that cannot fit (FitError)."""
    if "FLASHINFER" in os.environ.get("VLLM_ATTENTION_BACKEND", "").upper():
        raise ConfigError(FLASHINFER_REFUSAL)
    if os.environ.get(FLASHINFER_SAMPLER_ENV, "0") != "0":
        raise ConfigError(
            f"{FLASHINFER_SAMPLER_ENV}={os.environ[FLASHINFER_SAMPLER_ENV]} asks vLLM for FlashInfer's "
            f"sampler, which the image does not have (the engine would die at start): unset it"
        )
    # What both modes share: the names requests may use, an internal address, and raw logprobs,
    # without which vLLM does not enable /v1/systemone.
    common = [
        "--served-model-name", *gateway.model_names,
        "--host", "127.0.0.1",
        "--port", str(engine.engine_port + replica),
        "--logprobs-mode", "raw_logprobs",
        # Text only: the local tiny model has no vision tower, and vLLM 0.32's decisions take no images.
        "--language-model-only",
    ]  # fmt: skip
    if engine.engine_mode == "gpu":
        return _gpu_command(engine, common)
    return _cpu_command(engine, common)


def _cpu_command(engine: EngineSettings, common: list[str]) -> tuple[list[str], dict[str, str]]:
    """vLLM on CPU through the Triton-interpreter launcher (local stack and CI)."""
    argv = [
        str(engine.engine_python), str(CPU_LAUNCHER),
        "--model", str(engine.model_dir),
        *common,
        "--max-model-len", str(engine.engine_max_model_len),
        "--dtype", engine.engine_dtype,
        # Inductor compilation would add ~40 s to start and ~20 s to the first read on 2 cores.
        "--enforce-eager",
        # vLLM checks free memory per NUMA node; 0.3 passes on a 24 GiB machine.
        "--gpu-memory-utilization", "0.3",
    ]  # fmt: skip
    env = {
        "TRITON_INTERPRET": "1",
        "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB; ample for tests (millions of tokens)
        # The diffusion sampler's own torch.compile calls are not covered by --enforce-eager.
        "TORCHDYNAMO_DISABLE": "1",
        "VLLM_WORKER_MULTIPROC_METHOD": "fork",
    }
    return argv, env


def _gpu_command(engine: EngineSettings, common: list[str]) -> tuple[list[str], dict[str, str]]:
    """`vllm serve` in the CUDA image, sized by the fit profile of the checkpoint's config.json."""
    from deploy.runtime.gpu_budget import (
        Arch,
        budget,
        check_fits,
        check_gpu,
        load_config,
        profile_for,
        scheduling_flags,
        vllm_flags,
    )
    from deploy.runtime.nvidia_smi import detect_gpu

    config = load_config(engine.model_dir)
    profile = profile_for(engine, config)
    found = detect_gpu()  # the GPU it really runs on, not the one the settings name
    log.info("GPU: %s", check_gpu(profile, found, on_larger=engine.engine_on_larger_gpu))
    fitted = budget(Arch.from_config(config), profile)
    check_fits(fitted)  # refuse to start rather than die later in vLLM's memory profiling
    argv = [
        "vllm", "serve", str(engine.model_dir),
        *common,
        "--attention-backend", engine.engine_attention_backend,
        "--enable-prefix-caching",
        *([] if engine.engine_moe_backend == "auto" else ["--moe-backend", engine.engine_moe_backend]),
        *vllm_flags(fitted, host_gpu_gib=found[1] if found and engine.engine_on_larger_gpu else None),
        *scheduling_flags(engine),
    ]  # fmt: skip
    env = {
        "VLLM_NO_USAGE_STATS": "1",
        "HF_HUB_OFFLINE": "1",
        "CUDA_MODULE_LOADING": "LAZY",
        FLASHINFER_SAMPLER_ENV: "0",  # else vLLM's GPU sampler imports FlashInfer, absent here
        # vLLM's CLI sets spawn only where this is unset; its own reason for spawn (accelerators that
        # cannot fork) does not hold while the API server has not touched CUDA, as here.
        "VLLM_WORKER_MULTIPROC_METHOD": engine.engine_multiproc_method,
    }
    return argv, env


def weights_command(settings: SupervisorSettings) -> list[str]:
    """The weights step per mode (download, verify baked files, or check the mounted bucket): a
    child process, so SIGTERM can stop it."""
    cli = [sys.executable, "-m", "deploy.cli", "weights"]
    mode, url, model_dir = settings.resolved_weights_mode, settings.weights_url, str(settings.model_dir)
    if mode == "download" and url:
        return [*cli, "download", url, model_dir]
    if mode == "gcs_fuse" and url:
        return [*cli, "verify-remote", url, "--mounted", model_dir]
    return [*cli, "verify", model_dir]


class Supervisor:
    def __init__(
        self,
        gateway: GatewaySettings,
        settings: SupervisorSettings,
        *,
        weights: bool = True,
        engine_log_path: Path | None = None,
        router: AlertRouterSettings | None = None,
    ) -> None:
        """`weights`: check (or download) the checkpoint first. `engine_log_path`: vLLM's output to a
        file (dev) instead of JSON lines on stderr. `router`: also run the alert router, asking this
        gateway (dev)."""
        self.settings = settings
        # The gateway reads through the engines this supervisor starts, spreading calls between them.
        self.engine_ports = [settings.engine_port + i for i in range(settings.engine_replicas)]
        update: dict[str, object] = {
            "engine_url": ",".join(f"http://127.0.0.1:{port}" for port in self.engine_ports)
        }
        if settings.engine_replicas > 1 and "max_concurrent_decisions" not in gateway.model_fields_set:
            # Unset, the gateway admits one engine's batch: with several, it admits all of theirs.
            update["max_concurrent_decisions"] = settings.engine_max_num_seqs * settings.engine_replicas
        self.gateway_settings = gateway.model_copy(update=update)
        # The GPU engine's compile caches, restored before it starts (the CPU one compiles nothing).
        gpu = settings.engine_mode == "gpu"
        self.compile_cache_url = settings.resolved_compile_cache_url if gpu else None
        self.weights = (
            Child("weights", weights_command(settings), dict(os.environ), relay=True) if weights else None
        )
        self.engines: list[Child] = []
        for i in range(settings.engine_replicas):
            argv, engine_env = engine_command(gateway, settings, replica=i)
            if self.compile_cache_url:  # one local cache directory: later engines start from it
                engine_env |= compile_cache.cache_env(settings.compile_cache_dir)
            log_path = engine_log_path
            if log_path is not None and i:
                log_path = log_path.with_name(f"{log_path.stem}-{i + 1}{log_path.suffix}")
            name = "engine" if settings.engine_replicas == 1 else f"engine-{i + 1}"
            env = {**os.environ, **engine_env}
            self.engines.append(Child(name, argv, env, log_path=log_path, relay=True))
        drain_s = max(1, int(settings.shutdown_grace_s) - 2)
        self.gateway = Child(
            "gateway",
            [sys.executable, "-m", "deploy.cli", "serve", "--drain-seconds", str(drain_s)],
            {**os.environ, **to_env(self.gateway_settings)},
        )
        self.router_settings: AlertRouterSettings | None = None
        self.router: Child | None = None
        if router is not None:
            update = {"alerts_gateway_url": f"http://127.0.0.1:{self.gateway_settings.port}"}
            if router.alerts_gateway_api_key is None and router.alerts_gateway_api_key_file is None:
                # Without a key of its own, the router asks with the gateway's (dev's accepts any).
                gateway_keys = self.gateway_settings
                if gateway_keys.api_keys:
                    update["alerts_gateway_api_key"] = gateway_keys.api_keys[0]
                elif gateway_keys.api_keys_file is not None:
                    update["alerts_gateway_api_key_file"] = gateway_keys.api_keys_file
                else:
                    update["alerts_gateway_api_key"] = SecretStr("dev")
            self.router_settings = router.model_copy(update=update)
            self.router = Child(
                "router",
                [sys.executable, "-m", "deploy.cli", "alerts", "serve", "--drain-seconds", str(drain_s)],
                {**os.environ, **to_env(self.router_settings)},  # its PORT replaces the gateway's
            )
        self._stop = threading.Event()

    def _on_signal(self, signum: int, _frame: object) -> None:
        log.info("received %s: shutting down", signal.Signals(signum).name)
        self._stop.set()

    def run(self) -> int:
        """Weights, engine, gateway, then supervise. Returns the process exit code; raises
        StartRefused when the weights step fails."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._on_signal)
        log.info(
            "configuration",
            extra={"supervisor": redacted(self.settings), "gateway": redacted(self.gateway_settings)}
            | ({"router": redacted(self.router_settings)} if self.router_settings else {}),
        )
        started = time.monotonic()
        try:
            if self.weights is not None:
                code = self._run_to_end(self.weights)
                if self._stop.is_set():
                    return 0
                if code != 0:
                    raise StartRefused(
                        f"the weights in {self.settings.model_dir} are not usable; the engine was not "
                        f"started. The weights step (exit {code}) said: {self.weights.log_tail(5)}"
                    )
                log.info("weights ready in %.1f s", time.monotonic() - started)
            if not self._start_engine():
                return 0 if self._stop.is_set() else 1
            engine_s = time.monotonic() - started
            self.gateway.start()
            ready_url = f"http://127.0.0.1:{self.gateway_settings.port}/readyz"
            if not self._wait_healthy(self.gateway, ready_url, 60):
                return 0 if self._stop.is_set() else 1
            if self.router is not None and self.router_settings is not None:
                self.router.start()
                router_ready = f"http://127.0.0.1:{self.router_settings.alerts_port}/readyz"
                if not self._wait_healthy(self.router, router_ready, 30):
                    return 0 if self._stop.is_set() else 1
            self._announce(engine_s, time.monotonic() - started)
            while not self._stop.wait(0.2):
                for child in self._children():
                    code = child.exited()
                    if code is not None:
                        log.error("%s exited with code %s; stopping", child.name, code)
                        return 1
            return 0
        finally:
            self.shutdown()

    @property
    def engine(self) -> Child:
        """The first engine: the one whose start restores and saves the compile caches."""
        return self.engines[0]

    def _start_engine(self) -> bool:
        """Restore the compile caches, start the first engine and wait for its health; if it dies
        after a restore, once more with empty caches. Then the other engines, one after the other
        (they find what the first compiled). Once all are healthy after a miss, or after a restore the
        start compiled more to (`CompileCache.worth_saving`), save the caches in
        the background. Whether every engine is healthy."""
        cache = outcome = None
        if self.compile_cache_url:
            from deploy.runtime.nvidia_smi import detect_gpu

            found = detect_gpu()
            cache = compile_cache.for_engine(
                self.compile_cache_url,
                self.settings.compile_cache_dir,
                self.engine.argv,
                self.settings.model_dir,
                found[0] if found else None,
            )
            outcome = cache.restore() if cache else None
        started = time.monotonic()
        timeout_s = self.settings.engine_startup_timeout_s
        engine_url = f"http://127.0.0.1:{self.engine_ports[0]}/health"
        self.engine.start()
        healthy = self._wait_healthy(self.engine, engine_url, timeout_s)
        exited = self.engine.exited() is not None
        if cache and compile_cache.should_retry_without_cache(outcome, healthy, exited, self._stop.is_set()):
            log.warning("the engine died after its compile cache was restored: once more with empty caches")
            self.engine.stop(grace_s=1.0)
            compile_cache.wipe(cache.cache_dir)
            outcome = None  # the stored cache is not ours to replace (create-only): it expires
            old = self.engine
            self.engines[0] = Child(old.name, old.argv, old.env, log_path=old.log_path, relay=old.relay)
            self.engine.start()
            remaining = max(1.0, timeout_s - (time.monotonic() - started))
            healthy = self._wait_healthy(self.engine, engine_url, remaining)
        warm_up = self.settings.engine_mode == "gpu" and self.settings.engine_warmup
        if healthy and warm_up:
            self._warm_up(self.engine_ports[0])
        # The others after the first, not beside it: two cold starts would compile the same graphs
        # twice into one cache directory (one after the other: 96 and 89 s on an H200 once the first
        # had compiled, docs/engine-sizing-h200 run 3).
        for child, port in zip(self.engines[1:], self.engine_ports[1:], strict=True):
            if not healthy:
                break
            child.start()
            remaining = max(1.0, timeout_s - (time.monotonic() - started))
            healthy = self._wait_healthy(child, f"http://127.0.0.1:{port}/health", remaining)
            if healthy and warm_up:
                self._warm_up(port)
        if healthy and cache and cache.worth_saving(outcome):
            # In the background: /readyz must not wait on an upload, and a failed save is only logged.
            threading.Thread(target=cache.save, name="compile-cache-save", daemon=True).start()
        elif healthy and cache and outcome == "hit":  # said, so that whoever waits on a save knows
            log.info(
                "compile cache not saved: generation %d restored, and this start compiled nothing it lacks",
                cache.generation,
            )
        return healthy

    def _warm_up(self, port: int) -> None:
        """One decision through the engine's own /v1/systemone (one question of each type), so that
        the kernels vLLM compiles at a first decision are compiled now."""
        url = f"http://127.0.0.1:{port}/v1/systemone"
        body = {"model": self.gateway_settings.served_model, **WARMUP_DECISION}
        started = time.monotonic()
        try:
            r = httpx.post(url, json=body, timeout=self.settings.engine_startup_timeout_s)
            r.raise_for_status()
        except httpx.HTTPError as e:
            log.warning("engine warm-up failed (not fatal): %r", e)
            return
        log.info("engine warm-up: a first decision in %.1f s", time.monotonic() - started)

    def _announce(self, engine_s: float, total_s: float) -> None:
        host = self.gateway_settings.host
        url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{self.gateway_settings.port}"
        model = self.gateway_settings.served_model
        line = f"{READY_PREFIX} {url} (model {model}; engine up in {engine_s:.0f} s, total {total_s:.0f} s)"
        if self.router_settings is not None:
            line += f"; alerts: http://127.0.0.1:{self.router_settings.alerts_port}/v1/alerts/<source>"
        # The one plain line on stdout: people and the local-stack harness wait for it.
        print(line, flush=True)

    def _children(self) -> list[Child]:
        return [*self.engines, self.gateway] + ([self.router] if self.router is not None else [])

    def shutdown(self) -> None:
        """Router first (it finishes deliveries), then the gateway (it drains in-flight decisions),
        then the engine, within the grace budget."""
        deadline = time.monotonic() + self.settings.shutdown_grace_s
        if self.weights is not None:
            self.weights.stop(grace_s=1.0)
        if self.router is not None:
            self.router.stop(grace_s=max(1.0, (deadline - time.monotonic()) / 3))
        self.gateway.stop(grace_s=max(1.0, deadline - time.monotonic() - 2.0))
        # The engines side by side: each may take the time that is left.
        grace_s = max(1.0, deadline - time.monotonic())
        stops = [
            threading.Thread(target=e.stop, args=(grace_s,), name=f"stop-{e.name}") for e in self.engines
        ]
        for t in stops:
            t.start()
        for t in stops:
            t.join()
        log.info("stopped")

    def _run_to_end(self, child: Child) -> int | None:
        """Run a child to its end, unless a signal comes first; its exit code, or None."""
        child.start()
        wait_until(lambda: child.exited() is not None, float("inf"), interval_s=0.2, abort=self._stop.is_set)
        return child.exited()

    def _wait_healthy(self, child: Child, url: str, timeout_s: float) -> bool:
        def gone() -> bool:
            return self._stop.is_set() or child.exited() is not None

        healthy = wait_http_ok(url, timeout_s, abort=gone)
        if healthy or self._stop.is_set():
            return healthy
        code = child.exited()
        why = (
            f"exited with code {code} before it was ready"
            if code is not None
            else f"not healthy after {timeout_s:.0f} s"
        )
        log.error("%s %s\n%s", child.name, why, child.log_tail())
        return False
