"""The one function that shapes every error response of the kit's services, and the handlers that
route every exception through it."""

from __future__ import annotations

import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.core.errors import Detail, ServiceError


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


def service_error_response(error: ServiceError) -> JSONResponse:
    return error_response(error.status, error.detail, retry_after=error.retry_after, extra=error.extra)


def install_error_handlers(app: FastAPI) -> None:
    """Route every exception through `error_response`; never leak a stack trace."""

    @app.exception_handler(ServiceError)
    async def _service(_: Request, exc: ServiceError) -> JSONResponse:
        return service_error_response(exc)

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
