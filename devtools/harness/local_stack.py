"""Start the local stack (`dgemma dev`, i.e. the supervisor) on free ports, for tests and benchmarks."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from app.core.net import free_port
from app.core.polling import wait_until
from deploy.devstack.stack import DEV_MODELS
from deploy.runtime.supervisor import READY_PREFIX

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class LocalStack:
    url: str
    engine_url: str
    served_model: str
    proc: subprocess.Popen[str]
    engine_log: Path
    alerts_url: str  # the alert router's base URL

    def engine_pid(self) -> int:
        """The vLLM server's pid; it leads a process group of its own (engine-core, worker)."""
        out = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True).stdout
        for pid in out.split():
            if b"cpu_launcher.py" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return int(pid)
        raise RuntimeError("engine process not found")


def gateway_idle(url: str) -> bool:
    """No decision in flight or waiting at the gateway at `url` (its /metrics gauges)."""
    gauges = ("dgemma_decisions_inflight ", "dgemma_decisions_queued ")
    text = httpx.get(f"{url}/metrics", timeout=10).text
    return not [ln for ln in text.splitlines() if ln.startswith(gauges) and not ln.endswith(" 0.0")]


def wait_idle(url: str, timeout_s: float = 180) -> bool:
    """Wait until the gateway at `url` reads nothing: a measurement that needs its slots (a budget,
    a latency) starts on an idle engine, not behind work an earlier step left queued (a load test's
    last requests, a router's classifications that it retries later)."""
    return bool(wait_until(lambda: gateway_idle(url), timeout_s, interval_s=1, errors=(httpx.HTTPError,)))


def spawn_dev(engine_log: Path, **env: str) -> tuple[subprocess.Popen[str], int, int, int]:
    """Start `dgemma dev` on free ports in a session of its own; (process, gateway port, engine port,
    alert router port)."""
    port, engine_port, alerts_port = free_port(), free_port(), free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "deploy.cli", "dev", "--port", str(port), "--engine-port", str(engine_port),
         "--engine-log", str(engine_log), "--alerts-port", str(alerts_port)],
        cwd=ROOT,
        env={**os.environ, "DGEMMA_LOG_LEVEL": "WARNING", **env},
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )  # fmt: skip
    return proc, port, engine_port, alerts_port


def wait_ready(proc: subprocess.Popen[str], timeout_s: float) -> bool:
    """Whether the supervisor printed its ready line within `timeout_s` (False if it exited)."""
    ready = threading.Event()

    def watch() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith(READY_PREFIX):
                ready.set()

    threading.Thread(target=watch, daemon=True).start()
    return bool(wait_until(ready.is_set, timeout_s, abort=lambda: proc.poll() is not None))


def stop(proc: subprocess.Popen[Any], grace_s: float = 30) -> None:
    """SIGTERM, as Cloud Run does; SIGKILL the group if it has not stopped within `grace_s`."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@contextmanager
def local_stack(
    engine_log: Path, timeout_s: float = 400, model: str = "toy", **env: str
) -> Iterator[LocalStack]:
    """Run `dgemma dev` on `model` (toy or random; `env`: extra settings) until the block ends;
    raise RuntimeError (with the engine log) if it fails."""
    proc, port, engine_port, alerts_port = spawn_dev(engine_log, DGEMMA_DEV_MODEL=model, **env)
    try:
        if not wait_ready(proc, timeout_s):
            tail = engine_log.read_text()[-4000:] if engine_log.exists() else "(no engine log)"
            raise RuntimeError(f"the local stack did not start; engine log tail:\n{tail}")
        yield LocalStack(
            url=f"http://127.0.0.1:{port}",
            engine_url=f"http://127.0.0.1:{engine_port}",
            served_model=DEV_MODELS[model],
            proc=proc,
            engine_log=engine_log,
            alerts_url=f"http://127.0.0.1:{alerts_port}",
        )
    finally:
        stop(proc)


# -- single services, as processes: the gateway alone, the instant stand-in of vLLM -------------------


@dataclass
class Service:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path


def spawn(
    args: list[str], log: Path, *, cwd: Path = ROOT, python: str = sys.executable, **env: str
) -> subprocess.Popen[bytes]:
    """`python args...` in a session of its own, output to `log`; PYTHONPATH=cwd, so a tree's own
    code wins over this checkout's editable install (benchmarks run a baseline commit that way)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    # Only the settings given: none leak in from the caller's environment.
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DGEMMA_") and k != "PORT"}
    with log.open("wb") as out:
        return subprocess.Popen(
            [python, *args],
            cwd=cwd,
            env={**clean, "PYTHONPATH": str(cwd), **env},
            stdout=out,
            stderr=out,
            start_new_session=True,
        )


@contextmanager
def service(
    args: list[str], log: Path, ready_path: str | None, *, port: int, timeout_s: float = 60, **kwargs: Any
) -> Iterator[Service]:
    """A process listening on `port`, until the block ends (SIGTERM, then SIGKILL after 15 s);
    ready when GET `ready_path` answers 200 (None: when the port takes connections)."""
    url = f"http://127.0.0.1:{port}"
    proc = spawn(args, log, **kwargs)
    try:

        def ready() -> bool:
            if ready_path is not None:
                return httpx.get(url + ready_path, timeout=2).status_code == 200
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True

        if not wait_until(
            ready,
            timeout_s,
            interval_s=0.1,
            abort=lambda: proc.poll() is not None,
            errors=(httpx.HTTPError, OSError),
        ):
            raise RuntimeError(f"{args} did not start; its log:\n{log.read_text()[-3000:]}")
        yield Service(url, proc, log)
    finally:
        stop(proc, grace_s=15)


def instant_engine(
    log: Path, *, delay_s: float = 0.0, model: str = "dgemma", floor: str | None = None, **kwargs: Any
) -> Any:
    """`devtools.harness.instant_engine` as a service (see there); with `floor`, the pass-through floor to
    that engine URL instead (it answers decisions only: ready when its port is open)."""
    port = free_port()
    args = [
        "-m",
        "devtools.harness.instant_engine",
        "--port",
        str(port),
        "--model",
        model,
        "--delay-s",
        str(delay_s),
    ]
    if floor:
        args += ["--floor", floor]
    return service(args, log, None if floor else "/health", port=port, **kwargs)


def gateway(
    engine_url: str, log: Path, *, model: str = "dgemma", ready_path: str = "/readyz", **kwargs: Any
) -> Any:
    """`dgemma serve` as a service on `engine_url` (`env`: its settings), started once `ready_path`
    answers 200 (/healthz for an engine that is not ready on purpose)."""
    port = free_port()
    env = {"DGEMMA_ENGINE_URL": engine_url, "DGEMMA_SERVED_MODEL": model, **kwargs.pop("env", {})}
    args = ["-m", "deploy.cli", "serve", "--port", str(port), *kwargs.pop("extra_args", [])]
    return service(args, log, ready_path, port=port, **kwargs, **env)
