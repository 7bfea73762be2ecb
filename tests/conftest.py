"""Fixtures: the real local stack (vLLM on CPU + gateway) once per session, and extra gateways.

The stack is started exactly as `make dev` starts it (`dgemma dev`, through the supervisor) on free
ports; tests that need other gateway settings get their own real uvicorn server in a thread,
reading through the same engine.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from app.main import create_app
from app.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
STARTUP_TIMEOUT_S = 400


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Stack:
    url: str
    engine_url: str
    served_model: str
    proc: subprocess.Popen[str]
    engine_log: Path

    def engine_pid(self) -> int:
        """The vLLM API server's pid (the supervisor's engine child)."""
        out = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True).stdout
        for pid in out.split():
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            if b"cpu_launcher.py" in cmd:
                return int(pid)
        raise RuntimeError("engine process not found")


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    port, engine_port = free_port(), free_port()
    log_dir = tmp_path_factory.mktemp("stack")
    engine_log = log_dir / "engine.log"
    env = {
        **os.environ,
        "PORT": str(port),
        "DGEMMA_ENGINE_PORT": str(engine_port),
        "DGEMMA_LOG_LEVEL": "WARNING",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "deploy.cli", "dev", "--engine-log", str(engine_log)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    ready = threading.Event()
    lines: list[str] = []

    def watch() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("dgemma ready:"):
                ready.set()

    threading.Thread(target=watch, daemon=True).start()
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while not ready.wait(0.5):
        if proc.poll() is not None or time.monotonic() > deadline:
            tail = engine_log.read_text()[-4000:] if engine_log.exists() else ""
            _stop(proc)
            pytest.fail(f"the local stack did not start\nstdout: {''.join(lines)}\nengine log:\n{tail}")
    try:
        yield Stack(
            url=f"http://127.0.0.1:{port}",
            engine_url=f"http://127.0.0.1:{engine_port}",
            served_model="dgemma-tiny-random",
            proc=proc,
            engine_log=engine_log,
        )
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="session")
def client(stack: Stack) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=stack.url, timeout=60, headers={"authorization": "Bearer test"}) as c:
        yield c


@pytest.fixture(scope="session")
def engine(stack: Stack) -> Iterator[httpx.Client]:
    """Direct access to vLLM's native API, for hand-computed expectations."""
    with httpx.Client(base_url=stack.engine_url, timeout=60) as c:
        yield c


class _ThreadedServer(uvicorn.Server):
    def install_signal_handlers(self) -> None:  # the test process keeps its own handlers
        pass


GatewayFactory = Callable[..., str]


@pytest.fixture(scope="session")
def gateway_factory(stack: Stack) -> Iterator[GatewayFactory]:
    """Start a real gateway (uvicorn, own port, own thread) with settings overrides; returns its URL."""
    servers: list[tuple[_ThreadedServer, threading.Thread]] = []

    def start(**overrides: Any) -> str:
        port = free_port()
        values: dict[str, Any] = {
            "engine_url": stack.engine_url,
            "served_model": stack.served_model,
            "log_level": "WARNING",
            **overrides,
        }
        settings = Settings(port=port, **values)
        server = _ThreadedServer(uvicorn.Config(create_app(settings), port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("test gateway did not start")
            time.sleep(0.05)
        servers.append((server, thread))
        return f"http://127.0.0.1:{port}"

    yield start
    for server, thread in servers:
        server.should_exit = True
        thread.join(timeout=10)
