"""`create_app()`: the gateway's routers, middleware, error handlers, engine client and admission.

Logging is configured by the entry point (`dgemma serve`), not here, so tests and embedders keep
their own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic.json_schema import models_json_schema

from app.core.http_errors import install_error_handlers
from app.core.observability import RequestContextMiddleware
from app.gateway.admission import Admission
from app.gateway.api_keys import KeyRing
from app.gateway.decisions.calibration_file import Calibration
from app.gateway.decisions.decide import Decider
from app.gateway.engine import Engine, EngineClient
from app.gateway.metrics import Metrics
from app.gateway.routes import health, systemone
from app.gateway.settings import GatewaySettings
from app.jev.wire import SystemOneRequest


def create_app(settings: GatewaySettings, *, engine: Engine | None = None) -> FastAPI:
    """The gateway. `engine` replaces the HTTP client of vLLM (tests use a scripted stand-in).
    Raises ConfigError when no API key is configured and any key is not explicitly allowed, or when
    the calibration file does not match the served model and read policy."""
    keys = KeyRing.from_settings(settings)
    read_policy = settings.read_policy  # built once: the property validates a model each time
    calibration = None
    if settings.calibration_file is not None:
        calibration = Calibration.load(
            settings.calibration_file, served_model=settings.served_model, read_policy=read_policy
        )
    metrics = Metrics()
    engine = engine or EngineClient(
        settings.engine_url, settings.served_model, settings.engine_timeout_s, settings.retry_after_s
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            async with keys.reloading(settings.api_keys_reload_s):
                yield
        finally:
            await engine.aclose()

    app = FastAPI(
        title="DiffusionGemma decision gateway",
        summary="Jev-compatible structured decisions on a self-hosted DiffusionGemma (vLLM).",
        version="0.1.0",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.read_policy = read_policy
    app.state.metrics = metrics
    app.state.keys = keys
    app.state.engine = engine
    app.state.decider = Decider(
        engine,
        max_options=settings.engine_max_options,
        max_questions_per_call=settings.engine_max_questions,
        max_reads=settings.max_reads_per_decision,
        calibration=calibration,
    )
    app.state.admission = Admission(
        settings.max_concurrent_decisions,
        settings.max_queued_decisions,
        settings.engine_max_questions,
        settings.retry_after_s,
        metrics,
        max_wait_s=settings.max_queue_wait_s,
    )
    app.state.drain = app.state.admission  # what `serve` drains on SIGTERM (see app.core.serving)
    install_error_handlers(app)
    app.include_router(systemone.router)
    app.include_router(health.router)
    app.state.decide = systemone.decision_handler(
        settings, keys, app.state.decider, app.state.admission, metrics, read_policy
    )
    # The decision route past FastAPI's layers (see DecisionRoute), inside the request middleware:
    # ids, logs, metrics.
    app.add_middleware(systemone.DecisionRoute, handler=app.state.decide)
    app.add_middleware(RequestContextMiddleware, metrics=metrics)
    app.openapi = _openapi_with_request_schema(app)  # type: ignore[method-assign]
    return app


def _openapi_with_request_schema(app: FastAPI) -> Callable[[], dict[str, Any]]:
    """FastAPI's document plus the Jev request body's schema (the route reads the raw body itself,
    zstd and multipart included, so FastAPI cannot see the model) and the bearer key of /v1."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
            _, defs = models_json_schema(
                [(SystemOneRequest, "validation")], ref_template="#/components/schemas/{model}"
            )
            schemas = doc.setdefault("components", {}).setdefault("schemas", {})
            for name, schema in defs.get("$defs", {}).items():
                schemas.setdefault(name, schema)
            # The names this deployment serves (the rest are 404): what a client may send, and
            # what lets a fuzzer reach past the model check.
            request = schemas["SystemOneRequest"]["properties"]["model"]
            request["enum"] = list(app.state.settings.model_names)
            # /v1 takes an API key as a bearer token (checked by `require_api_key`, not by a
            # FastAPI security dependency), so the document declares it here.
            doc["components"]["securitySchemes"] = {
                "apiKey": {"type": "http", "scheme": "bearer", "description": "An API key of the deployment."}
            }
            for path, operations in doc["paths"].items():
                if path.startswith("/v1/"):
                    for operation in operations.values():
                        operation["security"] = [{"apiKey": []}]
            app.openapi_schema = doc
        return app.openapi_schema

    return openapi
