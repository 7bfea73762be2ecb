"""Jev-compatible `POST /v1/systemone` and `GET /v1/models`."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import ValidationError

from app.decisions import Policy
from app.deps import DeciderDep, MetricsDep, SettingsDep, require_api_key
from app.errors import ApiError, validation_detail
from app.settings import Settings
from app.wire import SystemOneRequest, check_limits, decode_content, parse_json, parse_multipart

router = APIRouter(prefix="/v1", tags=["jev"], dependencies=[Depends(require_api_key)])


@router.get("/models")
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


@router.post("/systemone")
async def system_one(
    request: Request, settings: SettingsDep, decider: DeciderDep, metrics: MetricsDep
) -> Any:
    """Answer typed questions about a state, with probabilities (Jev's System One)."""
    start = time.perf_counter()
    data, asset_parts = await _read_body(request, settings)
    try:
        body = SystemOneRequest.model_validate(data)
    except ValidationError as e:
        raise ApiError(422, validation_detail(e.errors(), prefix=("body",))) from e
    if body.model not in settings.model_names:
        raise ApiError(404, f"Model {body.model!r} not found. Available: {', '.join(settings.model_names)}.")
    check_limits(body, settings.max_questions)
    if body.assets or asset_parts:
        raise ApiError(
            400,
            "This deployment serves a text-only model (DiffusionGemma reads through vLLM 0.32 take no "
            "images): send state, instructions and criteria as text or JSON, without assets.",
        )
    policy = _policy(settings, body)
    async with request.app.state.admission.slot():
        decision = await decider.decide(body, policy)
    metrics.decision_seconds.observe(time.perf_counter() - start)
    for reads in decision.engine_reads.values():
        metrics.reads_per_question.observe(reads)
    return {
        "object": "structured_decision",
        "model": settings.served_model,
        "answers": decision.answers,
        "usage": decision.usage,
        "diagnostics": decision.diagnostics,
        "read_policy": {
            "mode": policy.mode,
            "reread_entropy": policy.reread_entropy,
            "extra_reads": policy.extra_reads,
            "debias_reads": policy.debias_reads,
        },
    }


def _policy(settings: Settings, body: SystemOneRequest) -> Policy:
    o = body.read_policy
    return Policy(
        mode=(o and o.mode) or settings.read_policy,
        reread_entropy=settings.reread_entropy if o is None or o.reread_entropy is None else o.reread_entropy,
        extra_reads=settings.extra_reads if o is None or o.extra_reads is None else o.extra_reads,
        debias_reads=settings.debias_reads if o is None or o.debias_reads is None else o.debias_reads,
    )


async def _read_body(request: Request, settings: Settings) -> tuple[Any, dict[str, bytes]]:
    """The request's JSON (and multipart asset parts), decoded, within the size limit."""
    limit = settings.max_body_bytes
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, f"The request body exceeds {limit} bytes.")
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > limit:
            raise ApiError(413, f"The request body exceeds {limit} bytes.")
    content = decode_content(bytes(raw), request.headers.get("content-encoding"), limit)
    ctype = request.headers.get("content-type", "application/json")
    media = ctype.split(";", 1)[0].strip().lower()
    if media == "application/json" or media.endswith("+json"):
        return parse_json(content), {}
    if media == "multipart/form-data":
        return parse_multipart(content, ctype)
    raise ApiError(415, f"Unsupported Content-Type {media!r}: send application/json or multipart/form-data.")
