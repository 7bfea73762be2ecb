"""`create_app()`: the gateway's routers, middleware, error handlers and engine client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from app.decisions import Decider
from app.deps import Admission
from app.engine import EngineClient
from app.errors import install_error_handlers
from app.observability import Metrics, RequestContextMiddleware, configure_logging
from app.routes import health, systemone
from app.settings import Settings


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    configure_logging(settings.log_level)
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = EngineClient(
            settings.engine_url, settings.served_model, settings.engine_timeout_s, settings.retry_after_s
        )
        app.state.engine = engine
        app.state.decider = Decider(
            engine,
            max_options=settings.engine_max_options,
            max_questions_per_call=settings.engine_max_questions,
        )
        try:
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
    app.state.metrics = metrics
    app.state.admission = Admission(
        settings.max_concurrent_decisions, settings.max_queued_decisions, settings.retry_after_s, metrics
    )
    install_error_handlers(app)
    app.include_router(systemone.router)
    app.include_router(health.router)
    app.add_middleware(RequestContextMiddleware, metrics=metrics)
    return app
