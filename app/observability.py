"""Request ids, JSON logs and Prometheus metrics, applied to every request by one ASGI middleware."""

from __future__ import annotations

import contextvars
import logging
import sys
import time
import uuid
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from pythonjsonlogger.json import JsonFormatter
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.errors import ApiError, error_response

REQUEST_ID_HEADER = "x-typesafe-request-id"
request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
log = logging.getLogger("app")


class _RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id_var.get()
        return True


def configure_logging(level: str) -> None:
    """JSON lines on stderr, each with the current request id. Idempotent."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        JsonFormatter(
            "{asctime}{levelname}{name}{message}{request_id}", style="{", rename_fields={"levelname": "level"}
        )
    )
    handler.addFilter(_RequestIdFilter())
    for name in ("app", "deploy"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(level)
        logger.propagate = False


class Metrics:
    """The gateway's metrics, in a registry per app so that tests can build many apps."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.decision_seconds = Histogram(
            "dgemma_decision_seconds",
            "Time to answer a decision request (successful ones).",
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32),
            registry=self.registry,
        )
        self.reads_per_question = Histogram(
            "dgemma_engine_reads_per_question",
            "Engine reads a question took (re-reads and chunk reads included).",
            buckets=(0, 1, 2, 3, 4, 6, 8, 12, 16, 32),
            registry=self.registry,
        )
        self.responses = Counter(
            "dgemma_http_responses",
            "HTTP responses by route and status.",
            ["route", "status"],
            registry=self.registry,
        )
        self.errors = Counter(
            "dgemma_errors", "Error responses (status >= 400) by status.", ["status"], registry=self.registry
        )
        self.inflight = Gauge(
            "dgemma_decisions_inflight", "Decisions being read now.", registry=self.registry
        )
        self.queued = Gauge(
            "dgemma_decisions_queued", "Decisions waiting for a slot.", registry=self.registry
        )


class RequestContextMiddleware:
    """Gives every request an id (returned as `x-typesafe-request-id`), logs one JSON access line,
    counts responses, and turns an unexpected exception into a 500 that carries the id."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = uuid.uuid4().hex
        token = request_id_var.set(rid)
        start = time.perf_counter()
        status = 500
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal status, started
            if message["type"] == "http.response.start":
                started = True
                status = message["status"]
                headers: list[Any] = list(message.get("headers", []))
                headers.append((REQUEST_ID_HEADER.encode(), rid.encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            log.exception("unhandled error on %s", scope.get("path"))
            if not started:
                response = error_response(
                    ApiError(500, "Internal error in the gateway; quote the request id.")
                )
                await response(scope, receive, send_with_id)
        finally:
            route = scope.get("route")
            path = getattr(route, "path", "unmatched")
            self.metrics.responses.labels(path, str(status)).inc()
            if status >= 400:
                self.metrics.errors.labels(str(status)).inc()
            log.info(
                "%s %s %s",
                scope.get("method"),
                scope.get("path"),
                status,
                extra={"status": status, "duration_ms": round((time.perf_counter() - start) * 1000, 2)},
            )
            request_id_var.reset(token)
