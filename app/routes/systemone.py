"""Jev-compatible `POST /v1/systemone` and `GET /v1/models`."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

from fastapi import APIRouter, Depends, Request
from pydantic import ValidationError

from app.decisions.decide import Decision
from app.deps import AdmissionDep, DeciderDep, MetricsDep, SettingsDep, require_api_key
from app.errors import (
    ClientClosed,
    InvalidBody,
    ModelNotFound,
    Unsupported,
    UnsupportedMedia,
    validation_detail,
)
from app.observability import Metrics
from app.settings import GatewaySettings
from app.wire import (
    ErrorBody,
    ModelList,
    SystemOneRequest,
    SystemOneResponse,
    check_limits,
    decode_content,
    parse_json,
    parse_multipart,
    read_limited,
)

T = TypeVar("T")
router = APIRouter(
    prefix="/v1",
    tags=["jev"],
    dependencies=[Depends(require_api_key)],
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


@router.get("/models", response_model=ModelList)
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
async def system_one(
    request: Request,
    settings: SettingsDep,
    decider: DeciderDep,
    admission: AdmissionDep,
    metrics: MetricsDep,
) -> Any:
    """Answer typed questions about a state, with probabilities (Jev's System One)."""
    start = time.perf_counter()
    data, asset_parts = await _read_body(request, settings)
    try:
        body = SystemOneRequest.model_validate(data)
    except ValidationError as e:
        raise InvalidBody(validation_detail(e.errors(), prefix=("body",))) from e
    if body.model not in settings.model_names:
        raise ModelNotFound(f"Model {body.model!r} not found. Available: {', '.join(settings.model_names)}.")
    check_limits(body, settings.max_questions)
    if body.assets or asset_parts:
        raise Unsupported(
            "This deployment serves a text-only model (DiffusionGemma reads through vLLM 0.32 take no "
            "images): send state, instructions and criteria as text or JSON, without assets."
        )
    plan = decider.plan(body, settings.read_policy.overridden(body.read_policy))
    async with admission.slot(plan.max_reads):
        decision: Decision = await _unless_disconnected(request, decider.decide(plan), metrics)
    metrics.decision_seconds.observe(time.perf_counter() - start)
    for reads in decision.engine_reads.values():
        metrics.reads_per_question.observe(reads)
    return {
        "object": "structured_decision",
        "model": settings.served_model,
        "answers": decision.answers,
        "usage": decision.usage,
        "diagnostics": decision.diagnostics,
        "read_policy": plan.policy.model_dump(),
    }


async def _unless_disconnected(request: Request, work: Awaitable[T], metrics: Metrics) -> T:
    """Await `work`, cancelling it if the client hangs up first (the SDK gives up after 10 s and
    retries: reading on for a gone client would only delay its retry and everyone else)."""
    task = asyncio.ensure_future(work)

    async def client_gone() -> None:
        # The body has been read, so the next message is the disconnect (uvicorn sends it when the
        # connection closes).
        while (await request.receive())["type"] != "http.disconnect":
            pass

    watcher = asyncio.ensure_future(client_gone())
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        if not task.done():
            task.cancel()
            # Let the cancelled reads unwind before admission gives the slot to the next decision.
            await asyncio.gather(task, return_exceptions=True)
        elif not task.cancelled():
            # Retrieved now: when this request is itself cancelled just as the decision failed,
            # the failure must not resurface as "Task exception was never retrieved".
            task.exception()
    if task.cancelled():
        metrics.cancelled.inc()
        raise ClientClosed("The client closed the connection; the decision was cancelled.")
    return task.result()


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
