"""`create_router_app()`: the alert router, its policy, client of the decision service, sinks and
triage, with its routes (app/alerts/routes.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from wsgiref.simple_server import WSGIServer

from fastapi import FastAPI
from prometheus_client import CollectorRegistry, start_http_server
from pydantic import SecretStr

from app.alerts import routes
from app.alerts.audit import AuditLog
from app.alerts.metrics import RouterMetrics
from app.alerts.policy import Policy
from app.alerts.records import Source
from app.alerts.senders import SenderAuth
from app.alerts.settings import AlertRouterSettings
from app.alerts.sinks import Sink, build_sinks
from app.alerts.store import GcsStore, ObjectStore
from app.alerts.triage import Triage
from app.core.config import ConfigError
from app.core.http_errors import install_error_handlers
from app.core.identity import IdTokens
from app.core.observability import RequestContextMiddleware
from app.jev.client import JevClient


def _reveal(secret: SecretStr | None) -> str | None:
    return secret.get_secret_value() if secret is not None else None


def sender_auth(settings: AlertRouterSettings) -> dict[Source, SenderAuth]:
    """Each source's credentials (refused at start when a source has none, unless left open)."""
    s, open_ = settings, settings.alerts_allow_open_senders
    return {
        "alertmanager": SenderAuth.from_secrets(
            "alertmanager",
            _reveal(s.alerts_alertmanager_token),
            _reveal(s.alerts_alertmanager_basic),
            allow_open=open_,
        ),
        "grafana": SenderAuth.from_secrets(
            "grafana", _reveal(s.alerts_grafana_token), _reveal(s.alerts_grafana_basic), allow_open=open_
        ),
        "cloud-monitoring": SenderAuth.from_secrets(
            "cloud-monitoring",
            basic=_reveal(s.alerts_cloud_monitoring_basic),
            query_token=_reveal(s.alerts_cloud_monitoring_token),
            allow_open=open_,
        ),
    }


def metrics_listener(port: int, registry: CollectorRegistry) -> WSGIServer:
    """prometheus-client's HTTP server for `registry` on 127.0.0.1:`port`, in a thread of its own.
    Raises ConfigError when the port cannot be taken."""
    try:
        server, _ = start_http_server(port, addr="127.0.0.1", registry=registry)
    except OSError as e:
        raise ConfigError(f"DGEMMA_ALERTS_METRICS_PORT {port}: {e.strerror or e}") from e
    return server


def create_router_app(
    settings: AlertRouterSettings,
    *,
    policy: Policy | None = None,
    gateway: JevClient | None = None,
    sinks: dict[str, Sink] | None = None,
    store: ObjectStore | None = None,
) -> FastAPI:
    """The router. `gateway`, `sinks` and `store` replace the HTTP client of the decision service,
    the policy's sinks and the ledger's store (tests). Raises ConfigError (a source without
    credentials, a bad policy, a bad ledger URL)."""
    policy = policy or Policy.load(settings.alerts_policy_file)
    senders = sender_auth(settings)
    gateway = gateway or JevClient(
        settings.alerts_gateway_url,
        api_key=settings.gateway_key(),
        id_tokens=IdTokens() if settings.alerts_id_token else None,
    )
    sinks = sinks if sinks is not None else build_sinks(policy.sink_configs)
    metrics = RouterMetrics()
    if store is None and settings.alerts_ledger_url:
        store = GcsStore(settings.alerts_ledger_url, timeout_s=settings.alerts_ledger_timeout_s)
    triage = Triage(
        policy,
        gateway,
        sinks,
        metrics,
        budget_s=settings.alerts_decision_budget_s,
        reclassify_for_s=settings.alerts_reclassify_for_s,
        max_concurrency=settings.alerts_max_concurrency,
        audit=AuditLog(settings.alerts_audit_file),
        mode=settings.alerts_mode,
        store=store,
        claim_s=settings.alerts_ledger_claim_s,
        ledger_timeout_s=settings.alerts_ledger_timeout_s,
        scan_s=settings.alerts_ledger_scan_s,
        heartbeats=frozenset(settings.alerts_heartbeats),
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        port = settings.alerts_metrics_port
        exporter = metrics_listener(port, metrics.registry) if port else None
        await triage.start()
        try:
            yield
        finally:
            if exporter is not None:
                exporter.shutdown()
                exporter.server_close()
            await triage.aclose()
            triage.audit.close()
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
    app.state.triage = triage
    app.state.senders = senders
    app.state.metrics = metrics
    install_error_handlers(app)
    app.add_middleware(RequestContextMiddleware, metrics=metrics)

    app.include_router(routes.router)
    return app
