"""Domain errors, the one table that maps them to HTTP statuses, and the one function that shapes
every error response.

The decision layer, the engine client and the wire raise these exceptions and know nothing of
HTTP; a Jev client of the gateway (the alert router) can map statuses back to the same classes.
"""

from __future__ import annotations

import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

Detail = str | list[dict[str, Any]]


class GatewayError(Exception):
    """A request the gateway cannot answer; `detail` says why, for the client."""

    def __init__(
        self, detail: Detail, *, retry_after: int | None = None, extra: dict[str, Any] | None = None
    ):
        super().__init__(detail if isinstance(detail, str) else "validation error")
        self.detail = detail
        self.retry_after = retry_after
        self.extra = extra or {}


class InvalidRequest(GatewayError):
    """The request breaks a semantic limit or rule (too many options, a noul with no text...)."""


class InputTooLong(InvalidRequest):
    """The prompt does not fit the engine's context; Jev marks it `max_tokens_exceeded`."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail, extra={"error_type": "max_tokens_exceeded"})


class Unsupported(GatewayError):
    """Valid Jev that this deployment cannot answer (images, box questions on a text-only model)."""


class InvalidBody(GatewayError):
    """The body is not JSON, or does not match the schema: a FastAPI-style `detail` list."""


class Unauthorized(GatewayError):
    """No bearer token, or not one of the accepted keys."""


class ModelNotFound(GatewayError):
    """The request names a model this deployment does not serve."""


class BodyTooLarge(GatewayError):
    """The body exceeds the limit, before or after decompression."""


class UnsupportedMedia(GatewayError):
    """A content type or content coding the gateway does not read."""


class Saturated(GatewayError):
    """Admission is full: retry after `retry_after` seconds."""


class ClientClosed(GatewayError):
    """The client hung up before the answer; the decision was cancelled."""


class EngineBadAnswer(GatewayError):
    """The engine answered with an error or a body the gateway cannot read."""


class EngineUnavailable(GatewayError):
    """The engine is unreachable, not ready, saturated or too slow: retry after `retry_after`."""


class Draining(GatewayError):
    """The service is shutting down (SIGTERM): it finishes what it started and takes nothing new;
    retry after `retry_after` (another instance answers)."""


class DeliveryFailed(GatewayError):
    """The alert router could not deliver a page to a sink: the sender should retry (what was
    delivered is not delivered again)."""


# The one table from domain errors to HTTP statuses (subclasses inherit their parent's status).
STATUS: dict[type[GatewayError], int] = {
    InvalidRequest: 400,
    Unsupported: 400,
    Unauthorized: 401,
    ModelNotFound: 404,
    BodyTooLarge: 413,
    UnsupportedMedia: 415,
    InvalidBody: 422,
    Saturated: 429,
    ClientClosed: 499,  # nginx's "client closed request": logged and counted, never seen by the client
    EngineBadAnswer: 502,
    DeliveryFailed: 502,
    EngineUnavailable: 503,
    Draining: 503,
}


def status_of(error: GatewayError) -> int:
    return next(STATUS[cls] for cls in type(error).__mro__ if cls in STATUS)


def error_response(
    status: int,
    detail: Detail,
    *,
    retry_after: int | None = None,
    extra: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """The one shape of every error: `{"detail": ...}` (+ extras), Retry-After when retryable."""
    headers = dict(headers or {})
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
        headers["retry-after-ms"] = str(retry_after * 1000)
    if status == 401:
        headers.setdefault("WWW-Authenticate", "Bearer")
    return JSONResponse({"detail": detail, **(extra or {})}, status_code=status, headers=headers)


def gateway_error_response(error: GatewayError) -> JSONResponse:
    return error_response(status_of(error), error.detail, retry_after=error.retry_after, extra=error.extra)


def install_error_handlers(app: FastAPI) -> None:
    """Route every exception through `error_response`; never leak a stack trace."""

    @app.exception_handler(GatewayError)
    async def _gateway(_: Request, exc: GatewayError) -> JSONResponse:
        return gateway_error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(422, validation_detail(exc.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error_response(exc.status_code, str(exc.detail), headers=dict(exc.headers or {}))


def validation_detail(errors: Any, prefix: tuple[str | int, ...] = ()) -> list[dict[str, Any]]:
    """Pydantic errors as FastAPI's `detail` list, JSON-safe, with `loc` starting at `body`."""
    out = []
    for e in errors:
        item = {"type": e["type"], "loc": [*prefix, *e["loc"]], "msg": e["msg"]}
        if "input" in e:
            item["input"] = _json_safe(e["input"])
        if e.get("ctx"):
            item["ctx"] = {k: _json_safe(v) for k, v in e["ctx"].items()}
        out.append(item)
    return out


_MAX_ECHO_DEPTH = 8  # an echoed input is for reading, not a copy of the whole body


def _json_safe(value: Any, depth: int = 0) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if depth >= _MAX_ECHO_DEPTH:
        return "..."
    if isinstance(value, dict):
        return {str(k): _json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v, depth + 1) for v in value]
    return str(value)
