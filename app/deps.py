"""Shared request dependencies: settings, engine, auth, admission (saturation)."""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated

from fastapi import Depends, Request

from app.decisions import Decider
from app.engine import EngineClient
from app.errors import ApiError
from app.observability import Metrics
from app.settings import Settings


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_engine(request: Request) -> EngineClient:
    engine: EngineClient = request.app.state.engine
    return engine


def get_decider(request: Request) -> Decider:
    decider: Decider = request.app.state.decider
    return decider


def get_metrics(request: Request) -> Metrics:
    metrics: Metrics = request.app.state.metrics
    return metrics


SettingsDep = Annotated[Settings, Depends(get_settings)]
EngineDep = Annotated[EngineClient, Depends(get_engine)]
DeciderDep = Annotated[Decider, Depends(get_decider)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]


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
