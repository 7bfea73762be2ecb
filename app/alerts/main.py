"""`create_router_app()`: the alert router's webhooks, probes and metrics."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import SecretStr

from app.alerts.formats import parse_body
from app.alerts.metrics import RouterMetrics
from app.alerts.policy import Policy
from app.alerts.records import SOURCES, Source
from app.alerts.senders import SenderAuth
from app.alerts.settings import AlertRouterSettings
from app.alerts.sinks import Sink, build_sinks
from app.alerts.triage import Router
from app.core.errors import Unauthorized
from app.core.http_errors import error_response, install_error_handlers
from app.core.identity import IdTokens
from app.core.observability import RequestContextMiddleware
from app.jev.client import JevClient
from app.jev.wire import read_limited

log = logging.getLogger("app.alerts")
MAX_BODY_BYTES = 4 * 1024 * 1024  # an Alertmanager group of hundreds of alerts fits many times over


def _reveal(secret: SecretStr | None) -> str | None:
    return secret.get_secret_value() if secret is not None else None


def _pair(secret: SecretStr | None) -> tuple[str, str] | None:
    """`user:password` as the pair basic auth compares."""
    if secret is None:
        return None
    user, _, password = secret.get_secret_value().partition(":")
    return user, password


def sender_auth(settings: AlertRouterSettings) -> dict[Source, SenderAuth]:
    """Each source's credentials (refused at start when a source has none, unless left open)."""
    s, open_ = settings, settings.alerts_allow_open_senders
    return {
        "alertmanager": SenderAuth.from_secrets(
            "alertmanager",
            _reveal(s.alerts_alertmanager_token),
            _pair(s.alerts_alertmanager_basic),
            allow_open=open_,
        ),
        "grafana": SenderAuth.from_secrets(
            "grafana", _reveal(s.alerts_grafana_token), _pair(s.alerts_grafana_basic), allow_open=open_
        ),
        "cloud-monitoring": SenderAuth.from_secrets(
            "cloud-monitoring",
            basic=_pair(s.alerts_cloud_monitoring_basic),
            query_token=_reveal(s.alerts_cloud_monitoring_token),
            allow_open=open_,
        ),
    }


def create_router_app(
    settings: AlertRouterSettings,
    *,
    policy: Policy | None = None,
    gateway: JevClient | None = None,
    sinks: dict[str, Sink] | None = None,
) -> FastAPI:
    """The router. `gateway` and `sinks` replace the HTTP client of the decision service and the
    policy's sinks (tests). Raises ConfigError (a source without credentials, a bad policy)."""
    policy = policy or Policy.load(settings.alerts_policy_file)
    senders = sender_auth(settings)
    gateway = gateway or JevClient(
        settings.alerts_gateway_url,
        api_key=settings.gateway_key(),
        id_tokens=IdTokens() if settings.alerts_id_token else None,
    )
    sinks = sinks if sinks is not None else build_sinks(policy.sink_configs)
    metrics = RouterMetrics()
    router = Router(
        policy,
        gateway,
        sinks,
        metrics,
        budget_s=settings.alerts_decision_budget_s,
        reclassify_for_s=settings.alerts_reclassify_for_s,
        max_concurrency=settings.alerts_max_concurrency,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await router.aclose()
            for sink in sinks.values():
                await sink.aclose()
            await gateway.aclose()

    app = FastAPI(
        title="DiffusionGemma alert router",
        summary="Monitoring webhooks in, classified pages out; a page is never lost.",
        version="0.1.0",
        lifespan=lifespan,
        # A public service (senders cannot mint Google ID tokens): no API description to browse.
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.router = router
    app.state.metrics = metrics
    install_error_handlers(app)
    app.add_middleware(RequestContextMiddleware, metrics=metrics)

    async def receive(source: Source, request: Request) -> Response:
        auth = senders[source]
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
        outcomes = await router.handle(list(batch.alerts))
        return JSONResponse(
            {"received": len(batch.alerts), "truncated": batch.truncated, "outcomes": outcomes}
        )

    for source in SOURCES:

        async def endpoint(request: Request, source: Source = source) -> Response:
            return await receive(source, request)

        app.add_api_route(
            f"/v1/alerts/{source}",
            endpoint,
            methods=["POST"],
            summary=f"A {source} webhook delivery",
            tags=["alerts"],
        )

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, str]:
        """The router process is alive (it needs nothing else to page: the fallback route)."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["ops"])
    async def readyz() -> dict[str, str]:
        """Ready to take alerts; it does not wait for the decision service."""
        return {"status": "ready"}

    @app.get("/metrics", tags=["ops"])
    async def metrics_route(request: Request) -> Response:
        """Prometheus metrics, for any sender's credential (the service is public: its sink names
        and alert counts are not)."""
        for auth in senders.values():
            try:
                auth.check(request.headers, request.query_params)
                break
            except Unauthorized:
                continue
        else:
            challenge = senders["alertmanager"].challenge
            return error_response(
                401, "Invalid or missing credentials.", headers={"WWW-Authenticate": challenge}
            )
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return app
