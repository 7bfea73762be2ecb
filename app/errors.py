"""One function shapes every error response; the exception handlers all call it."""

from __future__ import annotations

import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException


class ApiError(Exception):
    """An error for the client: `detail` is a message (or a FastAPI-style list for 422)."""

    def __init__(
        self,
        status: int,
        detail: str | list[dict[str, Any]],
        *,
        extra: dict[str, Any] | None = None,
        retry_after: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail if isinstance(detail, str) else "validation error")
        self.status = status
        self.detail = detail
        self.extra = extra or {}
        self.retry_after = retry_after
        self.headers = headers or {}


def error_response(error: ApiError) -> JSONResponse:
    """The one shape of every error: `{"detail": ...}` (+ extras), Retry-After when retryable."""
    headers = dict(error.headers)
    if error.retry_after is not None:
        headers["Retry-After"] = str(error.retry_after)
        headers["retry-after-ms"] = str(error.retry_after * 1000)
    return JSONResponse({"detail": error.detail, **error.extra}, status_code=error.status, headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    """Route every exception through `error_response`; never leak a stack trace."""

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(ApiError(422, validation_detail(exc.errors())))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error_response(ApiError(exc.status_code, str(exc.detail), headers=dict(exc.headers or {})))


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


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return str(value)
