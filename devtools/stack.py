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

from app.polling import wait_until
from deploy.devstack import DEV_MODELS
from deploy.supervisor import READY_PREFIX

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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


def stop(proc: subprocess.Popen[Any]) -> None:
    """SIGTERM, as Cloud Run does; SIGKILL the group if it has not stopped within 30 s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
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
