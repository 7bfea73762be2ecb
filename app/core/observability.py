"""Logs and metrics: JSON lines Cloud Logging parses, request ids and traces, Prometheus metrics,
applied to every request by one ASGI middleware."""

from __future__ import annotations

import contextvars
import datetime as dt
import logging
import os
import re
import sys
import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter
from pythonjsonlogger.orjson import OrjsonFormatter
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.core.http_errors import error_response

REQUEST_ID_HEADER = "x-typesafe-request-id"
TRACE_FIELD = "logging.googleapis.com/trace"
SPAN_FIELD = "logging.googleapis.com/spanId"
SAMPLED_FIELD = "logging.googleapis.com/trace_sampled"
LOGGERS = ("app", "deploy", "loadtest", "uvicorn", "uvicorn.error")
request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
trace_var: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("trace", default=None)
log = logging.getLogger("app")

# X-Cloud-Trace-Context: TRACE_ID/SPAN_ID;o=1 (span in decimal); traceparent: 00-TRACE-SPAN-FLAGS.
_CLOUD_TRACE = re.compile(r"^([0-9a-fA-F]{32})(?:/(\d+))?(?:;o=([01]))?")
_TRACE_HEADERS = (b"x-cloud-trace-context", b"traceparent")  # ASGI header names are lower-case
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


class _CloudLoggingFormatter(OrjsonFormatter):
    """`severity`, `message` and an RFC 3339 `time`: the fields Cloud Logging reads from a JSON line.
    orjson: the access line is written for every request, and the stdlib encoder was half its cost."""

    def add_fields(
        self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]
    ) -> None:
        super().add_fields(log_data, record, message_dict)
        log_data["time"] = dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(
            timespec="milliseconds"
        )
        log_data["severity"] = record.levelname
        log_data.setdefault("logger", record.name)


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever `sys.stderr` is when a record comes, so a redirection made after
    `configure_logging` (a test's capture, a wrapper) is honoured."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


class _ContextFilter(logging.Filter):
    def __init__(self, project: str | None) -> None:
        super().__init__()
        self.project = project

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id_var.get()
        trace = trace_var.get()
        if trace:
            tid = trace["trace"]
            setattr(record, TRACE_FIELD, f"projects/{self.project}/traces/{tid}" if self.project else tid)
            if trace.get("span"):
                setattr(record, SPAN_FIELD, trace["span"])
            setattr(record, SAMPLED_FIELD, trace.get("sampled", False))
        return True


def configure_logging(level: str, project: str | None = None) -> None:
    """JSON lines on stderr for our loggers and uvicorn's, each with the request id and trace.
    Called once by each entry point; idempotent."""
    handler = _StderrHandler()
    handler.setFormatter(_CloudLoggingFormatter("{message}{request_id}", style="{"))
    handler.addFilter(_ContextFilter(project))
    for name in LOGGERS:
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(level)
        logger.propagate = False
    # The logging HOWTO's "Optimization": the lines carry none of these, and an access line is
    # written per request (the process id alone is a system call each time).
    logging.logProcesses = logging.logThreads = logging.logMultiprocessing = False
    # The middleware writes one access line per request; uvicorn's would be a second, unparsed one.
    logging.getLogger("uvicorn.access").disabled = True


def parse_trace(headers: dict[str, str]) -> dict[str, Any]:
    """Trace id, span id (16 hex digits) and sampling flag from Cloud Run's headers, or {}."""
    cloud = _CLOUD_TRACE.match(headers.get("x-cloud-trace-context", ""))
    if cloud:
        trace, span, sampled = cloud.groups()
        out: dict[str, Any] = {"trace": trace.lower(), "sampled": sampled == "1"}
        if span:
            out["span"] = f"{int(span) & (2**64 - 1):016x}"
        return out
    parent = _TRACEPARENT.match(headers.get("traceparent", "").strip().lower())
    if parent:
        trace, span, flags = parent.groups()
        return {"trace": trace, "span": span, "sampled": bool(int(flags, 16) & 1)}
    return {}


class HttpMetrics:
    """Responses and errors of any of the kit's HTTP services, in a registry per app (tests build many)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.responses = Counter(
            "dgemma_http_responses",
            "HTTP responses by route and status.",
            ["route", "status"],
            registry=self.registry,
        )
        self.errors = Counter(
            "dgemma_errors", "Error responses (status >= 400) by status.", ["status"], registry=self.registry
        )


class RequestContextMiddleware:
    """Gives every request an id (returned as `x-typesafe-request-id`) and its trace, logs one JSON
    access line, counts responses, and turns an unexpected exception into a 500 that carries the id."""

    def __init__(self, app: ASGIApp, metrics: HttpMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = os.urandom(16).hex()  # a uuid4 without its object: ids need only be unique
        token = request_id_var.set(rid)
        trace_headers = {
            k.decode(): v.decode("latin-1") for k, v in scope.get("headers", []) if k in _TRACE_HEADERS
        }
        trace_token = trace_var.set(parse_trace(trace_headers) if trace_headers else {})
        start = time.perf_counter()
        status = 500
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal status, started
            if message["type"] == "http.response.start":
                started = True
                status = message["status"]
                out: list[Any] = list(message.get("headers", []))
                out.append((REQUEST_ID_HEADER.encode(), rid.encode()))
                message = {**message, "headers": out}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            log.exception("unhandled error on %s", scope.get("path"))
            if not started:
                response = error_response(500, "Internal error in the gateway; quote the request id.")
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
            trace_var.reset(trace_token)
            request_id_var.reset(token)
