"""`dgemma run` as a child of the GPU check: its environment (its ports: app/core/net.py), its start
(timed from the spawn to the supervisor's ready line, its log kept with arrival times) and its stop
(SIGTERM, as Cloud Run sends it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from rich.console import Console

from app.core.polling import wait_until
from deploy.errors import GpuCheckError
from deploy.gpucheck.record import Start
from deploy.gpucheck.startlog import cache_save_ended, parse_start_log, short
from deploy.runtime.nvidia_smi import used_mib
from deploy.runtime.supervisor import READY_PREFIX

console = Console(stderr=True, soft_wrap=True)


def run_env(
    model: Path, profile_gpu: str, cache_dir: Path, *, key: str, port: int, engine_port: int,
    on_larger: bool, startup_timeout_s: float, cache_store: Path | None = None,
) -> dict[str, str]:  # fmt: skip
    """The environment of `dgemma run`: the image's settings, this host's paths, `profile_gpu`'s
    serving profile, and compile caches in `cache_dir` that the caller owns (so that cold is cold
    and warm is the cold start's leftovers); with `cache_store`, the supervisor's store there."""
    cache = cache_dir.resolve()
    env = {
        **os.environ,
        "DGEMMA_ENGINE_MODE": "gpu",
        "DGEMMA_ENGINE_ATTENTION_BACKEND": "TRITON_ATTN",
        "DGEMMA_MODEL_DIR": str(model.resolve()),
        "DGEMMA_WEIGHTS_MODE": "baked",
        "DGEMMA_ENGINE_GPU": profile_gpu,
        "DGEMMA_ENGINE_ON_LARGER_GPU": "true" if on_larger else "false",
        "DGEMMA_ENGINE_PORT": str(engine_port),
        "DGEMMA_ENGINE_STARTUP_TIMEOUT_S": str(startup_timeout_s),
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
    if cache_store is not None:
        env |= {
            "DGEMMA_COMPILE_CACHE_URL": str(cache_store.resolve()),
            "DGEMMA_COMPILE_CACHE_DIR": str(cache),
        }
    else:
        env["DGEMMA_COMPILE_CACHE_URL"] = "off"  # the caller's caches: warm is the cold start's leftovers
    return env


class DgemmaRun:
    """`dgemma run` as a child process: its stderr (JSON lines) kept with arrival times, its stdout
    watched for the ready line, both written to `log`."""

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

    def wait_ready(self, timeout_s: float, progress: Callable[[float, str], None]) -> float:
        """Seconds from the spawn to the ready line; `progress` hears the last line every second."""
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
            progress(time.monotonic() - self.started, short(last))
            time.sleep(1.0)
        return self.ready_at

    def tail(self, n: int = 25) -> str:
        return "\n".join(short(line, 300) for _, line in self.lines[-n:])

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


def start(env: dict[str, str], out: Path, cache: str, startup_timeout_s: float) -> tuple[DgemmaRun, Start]:
    """Start `dgemma run` (its log: `out`/run-`cache`.log) and wait for its ready line, 2 minutes
    longer than the supervisor waits for the engine; the start's record, the GPU's memory at idle in it."""
    baseline = used_mib()
    run = DgemmaRun(env, out / f"run-{cache}.log")
    with console.status(f"{cache} start") as status:

        def progress(t: float, last: str) -> None:
            status.update(f"{cache} start: {t:4.0f} s  [dim]{last}[/]")

        try:
            ready = run.wait_ready(startup_timeout_s + 120, progress)
        except BaseException:
            run.stop()  # one not ready in time still runs: the GPU must be free for what comes next
            raise
    parsed = parse_start_log(run.lines)
    s = Start(cache=cache, ready_s=round(ready, 1), **parsed)
    time.sleep(3)  # let the allocator settle after the first decisions of the warm-up probes
    s.idle_mib = used_mib() - baseline
    console.print(f"{cache} start: ready in {ready:.0f} s; GPU {s.idle_mib:,.0f} MiB at idle")
    return run, s


def await_save(run: DgemmaRun, s: Start, timeout_s: float = 300.0) -> None:
    """With a compile-cache store: wait for the supervisor's save to end before stopping the start
    that made the caches (a real instance lives on; the check's next start restores the archive)."""
    done = wait_until(lambda: cache_save_ended(run.lines), timeout_s, interval_s=1.0)
    s.phases.update({k: v for k, v in parse_start_log(run.lines)["phases"].items() if k.startswith("cache_")})
    console.print(f"{s.cache} start: compile cache " + ("save ended" if done else "save did not end"))


def stop(run: DgemmaRun, s: Start) -> None:
    """Stop the start and record it; return once the GPU is empty (the next start measures from there)."""
    seconds, s.exit_code = run.stop()
    s.stop_s = round(seconds, 1)
    console.print(f"{s.cache} start: stopped in {s.stop_s:.1f} s, exit {s.exit_code}")
    wait_until(lambda: used_mib() < 1024, 60, interval_s=1.0)
