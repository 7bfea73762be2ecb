"""The router's routes: a webhook per source, the probes and the metrics. What they use,
`create_router_app` put on `app.state` (`triage`, `senders`, `metrics`)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app.alerts.formats import parse_body
from app.alerts.metrics import RouterMetrics
from app.alerts.records import SOURCES, Source
from app.alerts.senders import SenderAuth
from app.alerts.triage import Triage
from app.core.errors import Unauthorized
from app.core.http_errors import error_response
from app.jev.wire import read_limited

log = logging.getLogger("app.alerts")
MAX_BODY_BYTES = 4 * 1024 * 1024  # an Alertmanager group of hundreds of alerts fits many times over
router = APIRouter()


async def receive(source: Source, request: Request) -> Response:
    """One delivery: the sender's credential, its payload as alerts, each alert routed."""
    auth: SenderAuth = request.app.state.senders[source]
    triage: Triage = request.app.state.triage
    try:
        auth.check(request.headers, request.query_params)
    except Unauthorized as e:
        return error_response(401, e.detail, headers={"WWW-Authenticate": auth.challenge})
    raw = await read_limited(request.headers.get("content-length"), request.stream(), MAX_BODY_BYTES)
    batch = parse_body(source, raw)
    if batch.truncated:
        log.warning(
            "%s left out %d alerts of group %s (max_alerts)", source, batch.truncated, batch.group_key
        )
    outcomes = await triage.handle(list(batch.alerts))
    return JSONResponse({"received": len(batch.alerts), "truncated": batch.truncated, "outcomes": outcomes})


def _webhook(source: Source) -> Callable[[Request], Awaitable[Response]]:
    async def webhook(request: Request) -> Response:
        return await receive(source, request)

    return webhook


# A path per source, not a path parameter: an unknown source is a 404, as any unknown path.
for _source in SOURCES:
    router.add_api_route(
        f"/v1/alerts/{_source}", _webhook(_source), methods=["POST"], summary=f"A {_source} webhook delivery",
        tags=["alerts"],
    )  # fmt: skip


@router.get("/healthz", tags=["ops"])
async def healthz() -> dict[str, str]:
    """The router process is alive (it needs nothing else to page: the fallback route)."""
    return {"status": "ok"}


@router.get("/readyz", tags=["ops"])
async def readyz() -> dict[str, str]:
    """Ready to take alerts; it does not wait for the decision service."""
    return {"status": "ready"}


@router.get("/metrics", tags=["ops"])
async def metrics(request: Request) -> Response:
    """Prometheus metrics, for any sender's credential (the service is public: its sink names and
    alert counts are not)."""
    senders: dict[Source, SenderAuth] = request.app.state.senders
    registry: RouterMetrics = request.app.state.metrics
    for auth in senders.values():
        try:
            auth.check(request.headers, request.query_params)
            break
        except Unauthorized:
            continue
    else:
        challenge = senders["alertmanager"].challenge
        return error_response(401, "Invalid or missing credentials.", headers={"WWW-Authenticate": challenge})
    return Response(generate_latest(registry.registry), media_type=CONTENT_TYPE_LATEST)
