"""Fixtures: the real local stack (vLLM on CPU + gateway) once per session, and extra gateways.

The stack is started exactly as `make dev` starts it (`dgemma dev`, through the supervisor) on free
ports; tests that need other gateway settings get their own real uvicorn server in a thread,
reading through the same engine.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import uvicorn

from app.main import create_app
from app.settings import Settings
from deploy.localstack import LocalStack, free_port, local_stack

Stack = LocalStack
__all__ = ["GatewayFactory", "Stack", "free_port"]


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The real local stack, started exactly as `make dev` starts it, once per session."""
    log = tmp_path_factory.mktemp("stack") / "engine.log"
    try:
        with local_stack(log) as running:
            yield running
    except RuntimeError as e:
        pytest.fail(str(e))


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
