"""Jev-compatible `POST /v1/systemone` and `GET /v1/models`."""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import orjson
from fastapi import APIRouter, Depends, Request, Response
from pydantic import ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from app.core.errors import (
    ClientClosed,
    DeadlinePassed,
    InvalidBody,
    InvalidRequest,
    ModelNotFound,
    ServiceError,
    Unsupported,
    UnsupportedMedia,
)
from app.core.http_errors import service_error_response, validation_detail
from app.gateway.admission import Admission
from app.gateway.api_keys import KeyRing
from app.gateway.decisions.decide import Decider, Decision
from app.gateway.deps import SettingsDep, require_api_key
from app.gateway.metrics import Metrics
from app.gateway.settings import GatewaySettings
from app.jev.wire import (
    MAX_TIMEOUT_S,
    TIMEOUT_HEADER,
    ErrorBody,
    ModelList,
    ReadPolicy,
    SystemOneRequest,
    SystemOneResponse,
    check_limits,
    decode_content,
    parse_json,
    parse_multipart,
    read_limited,
)

T = TypeVar("T")
Handler = Callable[[Request], Awaitable[Response]]
DECISION_PATH = "/v1/systemone"
# Every /v1 route checks the API key first: /v1/models as a dependency, /v1/systemone by calling
# the same function itself (see there).
router = APIRouter(
    prefix="/v1",
    tags=["jev"],
    responses={401: {"model": ErrorBody, "description": "Missing or unknown API key."}},
)
# Every status /v1/systemone can answer, documented in the OpenAPI document.
DECISION_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"model": SystemOneResponse, "description": "Answers, usage, diagnostics, the read policy used."},
    **{
        status: {"model": ErrorBody, "description": why}
        for status, why in {
            400: "A semantic limit or rule (options, levels, questions, planned reads, JSON nesting); "
            "box questions or images on a text-only model; an undecodable body; input too long "
            "(`error_type: max_tokens_exceeded`).",
            404: "Unknown `model`; the message lists the accepted names.",
            413: "Body over the limit, before or after decompression.",
            415: "A content type or Content-Encoding the gateway does not read.",
            422: "Invalid JSON, or a body that does not match the schema (FastAPI's `detail` list).",
            429: "Admission is full (Retry-After).",
            502: "The engine answered with an error or a malformed body.",
            503: "The engine is unreachable, not ready, saturated or too slow (Retry-After).",
        }.items()
    },
}


@router.get("/models", response_model=ModelList, dependencies=[Depends(require_api_key)])
async def list_models(settings: SettingsDep) -> dict[str, Any]:
    """The served model and its aliases, in Jev's format."""
    served = settings.served_model
    models = [
        {
            "name": name,
            "description": settings.model_description
            if name == served
            else f"Alias of {served}: {settings.model_description}",
            "release_date": settings.model_release_date.isoformat(),
        }
        for name in settings.model_names
    ]
    return {"models": models}


@router.post(
    "/systemone",
    responses=DECISION_RESPONSES,
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "JSON, optionally with Content-Encoding zstd, gzip or deflate.",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SystemOneRequest"}}},
        }
    },
)
async def system_one(request: Request) -> Response:
    """Answer typed questions about a state, with probabilities (Jev's System One)."""
    # Declared for the OpenAPI document and the other methods' 405; a POST is served by
    # `DecisionRoute` before the router, with the handler `create_app` built. No dependencies
    # here: they would show in the document and never run (tests/gateway/test_openapi.py).
    handler: Handler = request.app.state.decide
    return await handler(request)


def decision_handler(
    settings: GatewaySettings,
    keys: KeyRing,
    decider: Decider,
    admission: Admission,
    metrics: Metrics,
    read_policy: ReadPolicy,
) -> Handler:
    """`POST /v1/systemone` with what it needs bound once, at build: the key check, the body, the
    plan, a slot, the reads, the answer already encoded."""

    async def decide(request: Request) -> Response:
        start = time.perf_counter()
        arrived = asyncio.get_running_loop().time()  # the deadline's clock: the loop's, as admission's
        caller = keys.check(request.headers.get("authorization", ""))
        data, asset_parts = await _read_body(request, settings)
        try:
            # Strict: a JSON "2" or 2.0 or true is not an integer (the schema says so; found by fuzzing).
            body = SystemOneRequest.model_validate(data, strict=True)
        except ValidationError as e:
            raise InvalidBody(validation_detail(e.errors(), prefix=("body",))) from e
        if body.model not in settings.model_names:
            names = ", ".join(settings.model_names)
            raise ModelNotFound(f"Model {body.model!r} not found. Available: {names}.")
        check_limits(body, settings.max_questions)
        if body.assets or asset_parts:
            raise Unsupported(
                "This deployment serves a text-only model (DiffusionGemma reads through vLLM 0.32 take "
                "no images): send state, instructions and criteria as text or JSON, without assets."
            )
        salt = keys.cache_salt(caller) if settings.cache_isolation else None
        plan = decider.plan(body, read_policy.overridden(body.read_policy), cache_salt=salt)
        stated = _stated_timeout_s(request)
        limit = settings.decision_deadline_s if stated is None else stated
        deadline = None if limit is None else arrived + limit
        # A wait in line ends in time for the read (429). The read itself is cut only at a timeout
        # the client stated: the SDK states none, and one that set a longer timeout than its default
        # 10 s still waits (one that gave up has hung up, which cancels the read).
        cut_at = None if stated is None else deadline
        async with admission.slot(plan.max_reads, deadline):
            try:
                async with asyncio.timeout_at(cut_at) as cut:
                    decision: Decision = await _unless_disconnected(request, decider.decide(plan), metrics)
            except TimeoutError:
                if not cut.expired():
                    raise
                metrics.timed_out.inc()
                raise DeadlinePassed(
                    f"The decision was not answered within the {limit:g} s the client waits "
                    f"({TIMEOUT_HEADER}), and its reads were cancelled; retry after the indicated delay.",
                    retry_after=settings.retry_after_s,
                ) from None
        metrics.decision_seconds.observe(time.perf_counter() - start)
        for reads in decision.engine_reads.values():
            metrics.reads_per_question.observe(reads)
        answer = {
            "object": "structured_decision",
            "model": settings.served_model,
            "answers": decision.answers,
            "usage": decision.usage,
            "diagnostics": decision.diagnostics,
            "read_policy": plan.policy.model_dump(),
        }
        try:
            payload = orjson.dumps(answer)
        except orjson.JSONEncodeError:
            # A score's legend echoes the client's levels, which JSON lets carry integers beyond the 64
            # bits orjson writes (found by fuzzing: a 500); the standard encoder writes any integer.
            payload = json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode()
        return Response(payload, media_type="application/json")

    return decide


class DecisionRoute:
    """ASGI middleware that serves `POST /v1/systemone` by calling its handler itself, past
    FastAPI's exception middleware, exit stack, router and route: those layers were a fifth of the
    gateway's CPU per decision (py-spy against the instant stand-in; `make bench-cost`). The route
    above stays declared: it is what the OpenAPI document shows, and what answers other methods.
    Errors take the same path as through FastAPI: domain errors become `service_error_response`,
    anything else reaches the request middleware, which logs it and answers 500."""

    def __init__(self, app: ASGIApp, handler: Handler) -> None:
        self.app = app
        self.handler = handler
        # The declared route, set in the scope as the router would: metrics and logs name it.
        self.route = next(r for r in router.routes if getattr(r, "path", None) == DECISION_PATH)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != DECISION_PATH:
            await self.app(scope, receive, send)
            return
        scope["route"] = self.route
        try:
            response = await self.handler(Request(scope, receive))
        except ServiceError as e:
            response = service_error_response(e)
        await response(scope, receive, send)


async def _unless_disconnected(request: Request, work: Coroutine[Any, Any, T], metrics: Metrics) -> T:
    """Await `work`, cancelling it if the client hangs up first (the SDK gives up after 10 s and
    retries: reading on for a gone client would only delay its retry and everyone else)."""
    loop = asyncio.get_running_loop()
    task = loop.create_task(work)
    gone = False

    async def client_gone() -> None:
        nonlocal gone
        # The body has been read, so the next message is the disconnect (uvicorn sends it when the
        # connection closes).
        while (await request.receive())["type"] != "http.disconnect":
            pass
        gone = True
        task.cancel()

    watcher = loop.create_task(client_gone())
    try:
        # A cancelled task raises here only once its reads have unwound, so admission gives the
        # slot to the next decision after them, not beside them. If this request is cancelled
        # itself, the await cancels the task first, the same way.
        return await task
    except asyncio.CancelledError:
        if not gone:
            raise
        metrics.cancelled.inc()
        raise ClientClosed("The client closed the connection; the decision was cancelled.") from None
    finally:
        watcher.cancel()


def _stated_timeout_s(request: Request) -> float | None:
    """The seconds the client says it waits (TIMEOUT_HEADER), if it says."""
    stated = request.headers.get(TIMEOUT_HEADER)
    if stated is None:
        return None
    try:
        seconds = float(stated)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds <= MAX_TIMEOUT_S:  # NaN included
        raise InvalidRequest(
            f"{TIMEOUT_HEADER} must be the seconds the client waits, above 0 and at most "
            f"{MAX_TIMEOUT_S:g}; got {stated[:40]!r}."
        )
    return seconds


async def _read_body(request: Request, settings: GatewaySettings) -> tuple[Any, dict[str, bytes]]:
    """The request's JSON (and multipart asset parts), decoded, within the size limit."""
    limit = settings.max_body_bytes
    raw = await read_limited(request.headers.get("content-length"), request.stream(), limit)
    content = decode_content(raw, request.headers.get("content-encoding"), limit)
    ctype = request.headers.get("content-type", "application/json")
    media = ctype.split(";", 1)[0].strip().lower()
    if media == "application/json" or media.endswith("+json"):
        return parse_json(content), {}
    if media == "multipart/form-data":
        return parse_multipart(content, ctype)
    raise UnsupportedMedia(
        f"Unsupported Content-Type {media!r}: send application/json or multipart/form-data."
    )
