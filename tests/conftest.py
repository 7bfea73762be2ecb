"""The session's fixtures: a hermetic environment and the real stack (vLLM on CPU and the supervisor,
once per session, for the tests marked `engine`). The rooms' own fixtures are in tests/fixtures/,
loaded here; shared code is in tests/helpers/. Tests are cut by room (tests/<room>/, mirroring
app/ and deploy/) and tiers are markers: `unit`, `inprocess`, `integration`, `engine`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from app.gateway.main import create_app
from devtools.harness.local_stack import LocalStack, local_stack
from tests.helpers import cpu
from tests.helpers.gateway import GatewayFactory, gateway_settings, serving
from tests.helpers.timing import Timing

pytest_plugins = ["tests.fixtures.gateway", "tests.fixtures.deploy", "tests.fixtures.alerts"]

# What the tests must not inherit from the shell or CI that runs them.
OUTSIDE = (
    "PORT",
    "GOOGLE_CLOUD_PROJECT",
    "STORAGE_EMULATOR_HOST",
    "VLLM_ATTENTION_BACKEND",
    "GCE_METADATA_HOST",
    "GCE_METADATA_IP",
    "GOOGLE_APPLICATION_CREDENTIALS",
)


def _scrub(mp: pytest.MonkeyPatch, prefixes: tuple[str, ...], names: tuple[str, ...] = ()) -> None:
    for name in list(os.environ):
        if name.startswith(prefixes) or name in names:
            mp.delenv(name)


@pytest.fixture(scope="session", autouse=True)
def hermetic_session() -> Iterator[None]:
    """No settings from outside reach the session's stacks and settings."""
    with pytest.MonkeyPatch.context() as mp:
        _scrub(mp, ("DGEMMA_", "TYPESAFE_"), OUTSIDE)
        yield


@pytest.fixture(autouse=True)
def hermetic(monkeypatch: pytest.MonkeyPatch) -> None:
    """...nor does a DGEMMA_* setting leak from one test into the next (module fixtures may set
    others, such as the GCS emulator's address)."""
    _scrub(monkeypatch, ("DGEMMA_",))


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    """The real local stack, started as `make dev` starts it, once per session, on the tiny
    random-weight model: the plumbing's tests (tests/deploy/models/test_toy_model.py runs the toy)."""
    log = tmp_path_factory.mktemp("stack") / "engine.log"
    try:
        with local_stack(log, model="random") as running:
            yield running
    except RuntimeError as e:
        pytest.fail(str(e))


@pytest.fixture(scope="session")
def client(stack: LocalStack) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=stack.url, timeout=60, headers={"authorization": "Bearer test"}) as c:
        yield c


@pytest.fixture(scope="session")
def engine(stack: LocalStack) -> Iterator[httpx.Client]:
    """Direct access to vLLM's native API, for hand-computed expectations."""
    with httpx.Client(base_url=stack.engine_url, timeout=60) as c:
        yield c


@pytest.fixture(scope="session")
def gateway_factory(stack: LocalStack) -> Iterator[GatewayFactory]:
    """A real gateway (uvicorn, own port, own thread) on the session's engine, with settings
    overrides; returns its URL."""
    with ExitStack() as servers:

        def start(**overrides: Any) -> str:
            values = {"engine_url": stack.engine_url, "served_model": stack.served_model, **overrides}
            return servers.enter_context(serving(create_app(gateway_settings(**values))))

        yield start


TIERS = ("unit", "inprocess", "integration")


def pytest_configure(config: pytest.Config) -> None:
    """Where the time goes, recorded for every session (tests/helpers/timing.py)."""
    config.pluginmanager.register(Timing(), "timing")


def pytest_sessionstart(session: pytest.Session) -> None:
    """What the session runs on, above its results (a report header would be hidden by `-q`): a
    failure of an engine test then says which CPU build it had."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(cpu.isa())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test names its tier, exactly one (`make test-fast` and CI select by marker)."""
    untiered = [i.nodeid for i in items if sum(1 for t in TIERS if i.get_closest_marker(t)) != 1]
    if untiered:
        raise pytest.UsageError(f"tests without exactly one tier marker {TIERS}: {untiered[:5]}")
