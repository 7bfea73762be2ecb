"""Request dependencies: what `create_app` put on `app.state`, and bearer auth.

All `async def`: FastAPI runs plain `def` dependencies in its thread pool, a hop per dependency
per request for what is an attribute read.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import Depends, Request

from app.gateway.admission import Admission
from app.gateway.api_keys import KeyRing
from app.gateway.engine import Engine
from app.gateway.metrics import Metrics
from app.gateway.settings import GatewaySettings


def _state(attr: str) -> Callable[[Request], Awaitable[Any]]:
    """A dependency returning `app.state.<attr>`, set once by `create_app`; typed by the aliases below."""

    async def get(request: Request) -> Any:
        return getattr(request.app.state, attr)

    return get


SettingsDep = Annotated[GatewaySettings, Depends(_state("settings"))]
EngineDep = Annotated[Engine, Depends(_state("engine"))]
MetricsDep = Annotated[Metrics, Depends(_state("metrics"))]
AdmissionDep = Annotated[Admission, Depends(_state("admission"))]


async def require_api_key(request: Request) -> bytes:
    """Bearer auth on /v1 (keys hashed once at start; see `app.gateway.api_keys`): the caller's key digest."""
    keys: KeyRing = request.app.state.keys
    return keys.check(request.headers.get("authorization", ""))
