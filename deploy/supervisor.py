"""The one process supervisor: engine first, then the gateway; it owns signals and shutdown.

Same code for `make dev` and the container. If either child exits on its own, the supervisor stops
the other and exits non-zero (so Cloud Run replaces the instance). On SIGTERM/SIGINT it stops the
gateway first (uvicorn finishes in-flight requests), then the engine, each within the grace budget.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import httpx

from app.settings import FLASHINFER_REFUSAL, Settings

log = logging.getLogger("deploy.supervisor")
ENGINE_DIR = Path(__file__).resolve().parent / "engine"


@dataclass
class Child:
    name: str
    argv: list[str]
    env: dict[str, str]
    log_path: Path | None = None
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _log_file: IO[bytes] | None = field(default=None, repr=False)

    def start(self) -> None:
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log_file = self.log_path.open("ab")
        # A session of its own, so the whole tree (vLLM forks engine-core and workers) can be stopped.
        self.proc = subprocess.Popen(
            self.argv,
            env=self.env,
            stdout=self._log_file,
            stderr=subprocess.STDOUT if self._log_file else None,
            start_new_session=True,
        )
        log.info("started %s (pid %d)", self.name, self.proc.pid)

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
        if self.log_path is None or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def cpu_engine_command(settings: Settings) -> tuple[list[str], dict[str, str]]:
    """vLLM on CPU through the Triton-interpreter launcher (local stack and CI)."""
    argv = [
        str(settings.engine_python),
        str(ENGINE_DIR / "cpu_launcher.py"),
        "--model", str(settings.model_dir),
        "--served-model-name", settings.served_model,
        # /v1/systemone is enabled only with raw (or processed) logprobs.
        "--logprobs-mode", "raw_logprobs",
        "--host", "127.0.0.1",
        "--port", str(settings.engine_port),
        "--max-model-len", str(settings.engine_max_model_len),
        "--dtype", settings.engine_dtype,
        # Inductor compilation would add ~40 s to start and ~20 s to the first read on 2 cores.
        "--enforce-eager",
        # The tiny model has no vision tower; without this vLLM's multimodal budget crashes.
        "--language-model-only",
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


def gpu_engine_command(settings: Settings) -> tuple[list[str], dict[str, str]]:
    """`vllm serve` in the CUDA image, sized by the fit profile of the checkpoint's config.json."""
    from deploy.fit import Arch, budget, check_fits, load_config, profile_for, vllm_flags

    config = load_config(settings.model_dir)
    fitted = budget(Arch.from_config(config), profile_for(settings, config))
    check_fits(fitted)  # refuse to start rather than die later in vLLM's memory profiling
    argv = [
        "vllm", "serve", str(settings.model_dir),
        "--served-model-name", *settings.model_names,
        "--host", "127.0.0.1",
        "--port", str(settings.engine_port),
        "--logprobs-mode", "raw_logprobs",
        "--attention-backend", settings.engine_attention_backend,
        "--language-model-only",
        "--enable-prefix-caching",
        *vllm_flags(fitted),
    ]  # fmt: skip
    env = {"VLLM_NO_USAGE_STATS": "1", "HF_HUB_OFFLINE": "1", "CUDA_MODULE_LOADING": "LAZY"}
    return argv, env


def engine_command(settings: Settings) -> tuple[list[str], dict[str, str]]:
    """The engine's argv and extra environment for the configured mode; refuses FlashInfer."""
    if "FLASHINFER" in os.environ.get("VLLM_ATTENTION_BACKEND", "").upper():
        raise ValueError(FLASHINFER_REFUSAL)
    return gpu_engine_command(settings) if settings.engine_mode == "gpu" else cpu_engine_command(settings)


class Supervisor:
    def __init__(self, settings: Settings, *, engine_log: Path | None = None) -> None:
        self.settings = settings
        argv, engine_env = engine_command(settings)
        self.engine = Child("engine", argv, {**os.environ, **engine_env}, log_path=engine_log)
        gateway_env = {
            **os.environ,
            "DGEMMA_ENGINE_URL": f"http://127.0.0.1:{settings.engine_port}",
            "DGEMMA_SERVED_MODEL": settings.served_model,
            "DGEMMA_MODEL_DESCRIPTION": settings.model_description,
            "PORT": str(settings.port),
        }
        self.gateway = Child(
            "gateway",
            [sys.executable, "-m", "deploy.cli", "serve", "--host", settings.host],
            gateway_env,
        )
        self._stop = threading.Event()

    def _on_signal(self, signum: int, _frame: object) -> None:
        log.info("received %s: shutting down", signal.Signals(signum).name)
        self._stop.set()

    def run(self) -> int:
        """Start both, wait for readiness, supervise. Returns the process exit code."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._on_signal)
        started = time.monotonic()
        try:
            self.engine.start()
            if not self._wait_healthy(
                self.engine,
                f"http://127.0.0.1:{self.settings.engine_port}/health",
                self.settings.engine_startup_timeout_s,
            ):
                return 0 if self._stop.is_set() else 1
            engine_s = time.monotonic() - started
            self.gateway.start()
            if not self._wait_healthy(self.gateway, f"http://127.0.0.1:{self.settings.port}/readyz", 60):
                return 0 if self._stop.is_set() else 1
            url = f"http://{_display_host(self.settings.host)}:{self.settings.port}"
            print(
                f"dgemma ready: {url} (model {self.settings.served_model}; engine up in {engine_s:.0f} s, "
                f"total {time.monotonic() - started:.0f} s)",
                flush=True,
            )
            while not self._stop.wait(0.2):
                for child in (self.engine, self.gateway):
                    code = child.exited()
                    if code is not None:
                        log.error("%s exited with code %s; stopping", child.name, code)
                        return 1
            return 0
        finally:
            self.shutdown()

    def shutdown(self) -> None:
        """Gateway first (it drains in-flight decisions), then the engine, within the grace budget."""
        deadline = time.monotonic() + self.settings.shutdown_grace_s
        self.gateway.stop(grace_s=max(1.0, deadline - time.monotonic() - 2.0))
        self.engine.stop(grace_s=max(1.0, deadline - time.monotonic()))
        log.info("stopped")

    def _wait_healthy(self, child: Child, url: str, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not self._stop.is_set():
            code = child.exited()
            if code is not None:
                log.error(
                    "%s exited with code %s before it was ready\n%s", child.name, code, child.log_tail()
                )
                return False
            try:
                if httpx.get(url, timeout=2.0).status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        if not self._stop.is_set():
            log.error("%s not healthy after %.0f s\n%s", child.name, timeout_s, child.log_tail())
        return False


def _display_host(host: str) -> str:
    return "127.0.0.1" if host in ("0.0.0.0", "") else host
