"""Shared request dependencies: settings, engine, auth, admission (saturation)."""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, Request

from app.decisions import Decider
from app.engine import EngineClient
from app.errors import ApiError
from app.observability import Metrics
from app.settings import Settings


def _from_state(attr: str) -> Callable[[Request], Any]:
    """A dependency returning `app.state.<attr>`, set once by `create_app`."""

    def get(request: Request) -> Any:
        return getattr(request.app.state, attr)

    return get


SettingsDep = Annotated[Settings, Depends(_from_state("settings"))]
EngineDep = Annotated[EngineClient, Depends(_from_state("engine"))]
DeciderDep = Annotated[Decider, Depends(_from_state("decider"))]
MetricsDep = Annotated[Metrics, Depends(_from_state("metrics"))]


def require_api_key(request: Request, settings: SettingsDep) -> None:
    """Bearer auth on /v1. Keyless mode (no keys configured) accepts any token."""
    keys = settings.accepted_keys
    if not keys:
        return
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    given = token.strip().encode()
    # Compare against every key so the time taken does not depend on which one matched.
    ok = False
    for key in keys:
        ok |= hmac.compare_digest(given, key)
    if scheme.lower() != "bearer" or not ok:
        raise ApiError(401, "Invalid or missing API key.", headers={"WWW-Authenticate": "Bearer"})


class Admission:
    """At most `concurrent` decisions read at once and `queued` waiting; beyond that, 429."""

    def __init__(self, concurrent: int, queued: int, retry_after_s: int, metrics: Metrics) -> None:
        self._slots = asyncio.Semaphore(concurrent)
        self._max_waiting = queued
        self._waiting = 0
        self._retry_after = retry_after_s
        self._metrics = metrics

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        if self._slots.locked() and self._waiting >= self._max_waiting:
            raise ApiError(
                429,
                "The gateway is saturated; retry after the indicated delay.",
                retry_after=self._retry_after,
            )
        self._waiting += 1
        self._metrics.queued.inc()
        try:
            await self._slots.acquire()
        finally:
            self._waiting -= 1
            self._metrics.queued.dec()
        self._metrics.inflight.inc()
        try:
            yield
        finally:
            self._metrics.inflight.dec()
            self._slots.release()
