"""Probes and metrics: `/healthz` (process alive), `/readyz` (engine ready), `/metrics`."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app.core.errors import Draining, EngineUnavailable
from app.gateway.deps import AdmissionDep, EngineDep, MetricsDep, SettingsDep
from app.jev.wire import ErrorBody

router = APIRouter(tags=["ops"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The gateway process is alive."""
    return {"status": "ok"}


@router.get(
    "/readyz",
    responses={
        503: {"model": ErrorBody, "description": "The engine is not ready, or the gateway is stopping."}
    },
)
async def readyz(engine: EngineDep, settings: SettingsDep, admission: AdmissionDep) -> dict[str, str]:
    """Ready to decide: the engine answers its health check, and the gateway is not shutting down."""
    if admission.draining:
        raise Draining("The gateway is shutting down.", retry_after=settings.retry_after_s)
    if not await engine.healthy():
        raise EngineUnavailable("The engine is not ready.", retry_after=settings.retry_after_s)
    return {"status": "ready"}


@router.get(
    "/metrics",
    response_class=Response,
    responses={
        200: {
            "description": "Prometheus text format.",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        }
    },
)
async def metrics(m: MetricsDep) -> Response:
    """Prometheus metrics."""
    return Response(generate_latest(m.registry), media_type=CONTENT_TYPE_LATEST)
