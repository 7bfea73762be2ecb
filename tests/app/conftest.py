"""In-process tier: the gateway app called through httpx's ASGI transport, the engine replaced by
the scripted stand-in. Milliseconds per test; no engine environment needed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from app.gateway.main import create_app
from tests.helpers import AppFactory, ScriptedEngine, gateway_settings, in_process


@pytest.fixture
def scripted() -> ScriptedEngine:
    return ScriptedEngine()


@pytest.fixture
async def make_app(scripted: ScriptedEngine) -> AsyncIterator[AppFactory]:
    """Build a gateway with settings overrides (engine: the `scripted` fixture unless given)."""
    clients: list[httpx.AsyncClient] = []

    def make(engine: Any = None, **overrides: Any) -> tuple[FastAPI, httpx.AsyncClient]:
        app = create_app(gateway_settings(**overrides), engine=engine or scripted)
        clients.append(in_process(app))
        return app, clients[-1]

    yield make
    for c in clients:
        await c.aclose()


@pytest.fixture
def gw(make_app: AppFactory) -> httpx.AsyncClient:
    return make_app()[1]
