"""The Jev wire: request models, body decoding (zstd/gzip/deflate, JSON or multipart), and limits.

Shapes follow `typesafe-sdk` 0.7.5 and the hosted API's observed behaviour (see README, "Jev wire").
"""

from __future__ import annotations

import json
import math
import zlib
from typing import Annotated, Any, Literal

import zstandard
from pydantic import BaseModel, ConfigDict, Field
from python_multipart.multipart import MultipartParser, parse_options_header

from app.errors import ApiError
from app.settings import ReadPolicyName

# A JSON value the model reads as text: a string as-is, an object or array as JSON text.
Content = str | dict[str, Any] | list[Any]

MAX_CHOICES = 255
MAX_SCORE_LEVELS = 10


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NoulCriteria(_Strict):
    true: Content | None = None
    false: Content | None = None


class NoulQuestion(_Strict):
    type: Literal["noul"]
    instructions: Content | None = None
    criteria: NoulCriteria | None = None


class ChoiceQuestion(_Strict):
    type: Literal["choice"]
    instructions: Content | None = None
    criteria: dict[str, Content | None] = Field(min_length=1)


class ScoreQuestion(_Strict):
    type: Literal["score"]
    instructions: Content | None = None
    criteria: list[Content] = Field(min_length=1)


class BoxQuestion(_Strict):
    type: Literal["box"]
    instructions: Content | None = None


Question = Annotated[NoulQuestion | ChoiceQuestion | ScoreQuestion | BoxQuestion, Field(discriminator="type")]


class Asset(_Strict):
    type: Literal["image"]
    format: Literal["png", "jpg", "jpeg"] | None = None
    data_base64: str | None = None
    part: str | None = None


class ReadPolicy(_Strict):
    """Extension (`read_policy` at the top level): override the deployment's read policy."""

    mode: ReadPolicyName | None = None
    reread_entropy: float | None = Field(None, ge=0.0, le=1.0)
    extra_reads: int | None = Field(None, ge=0, le=16)
    debias_reads: int | None = Field(None, ge=1, le=16)


class SystemOneRequest(BaseModel):
    # Unknown top-level keys are ignored: the SDK's `extra_body` may add any.
    model_config = ConfigDict(extra="ignore")

    model: str
    state: Content
    questions: dict[str, Question] = Field(min_length=1)
    assets: dict[str, Asset] | None = Field(None, min_length=1)
    read_policy: ReadPolicy | None = None


def check_limits(request: SystemOneRequest, max_questions: int) -> None:
    """The hosted API's semantic limits, as 400 `{"detail": ...}` with its own messages."""
    if len(request.questions) > max_questions:
        raise ApiError(400, f"Too many questions. Must have at most {max_questions} questions.")
    for name, q in request.questions.items():
        if isinstance(q, NoulQuestion):
            sides = q.criteria is not None and (q.criteria.true is not None or q.criteria.false is not None)
            if not sides and not _has_text(q.instructions):
                raise ApiError(400, f"Noul question must have criteria or instructions: {name}")
        elif isinstance(q, ChoiceQuestion) and len(q.criteria) > MAX_CHOICES:
            raise ApiError(400, f"Too many choices. Must have at most {MAX_CHOICES} choices.")
        elif isinstance(q, ScoreQuestion) and len(q.criteria) > MAX_SCORE_LEVELS:
            raise ApiError(400, f"Too many score levels. Must have at most {MAX_SCORE_LEVELS} levels.")


def _has_text(value: Content | None) -> bool:
    return value is not None and value != "" and value != {} and value != []


# -- body decoding ------------------------------------------------------------------------------


def decode_content(body: bytes, encoding: str | None, limit: int) -> bytes:
    """Undo `Content-Encoding` (zstd, gzip, deflate, identity), refusing output beyond `limit`."""
    codings = [c.strip().lower() for c in (encoding or "").split(",") if c.strip()]
    # Codings are listed in the order they were applied, so undo them from the last.
    for coding in reversed(codings):
        if coding == "identity":
            continue
        if coding == "zstd":
            body = _unzstd(body, limit)
        elif coding in ("gzip", "x-gzip", "deflate"):
            body = _unzlib(body, coding, limit)
        else:
            raise ApiError(415, f"Unsupported Content-Encoding {coding!r}: use zstd, gzip or deflate.")
    return body


def _unzstd(body: bytes, limit: int) -> bytes:
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(body)
        out = reader.read(limit + 1)
    except zstandard.ZstdError as e:
        raise ApiError(400, f"The zstd request body could not be decompressed: {e}") from e
    if len(out) > limit:
        raise ApiError(413, f"The decompressed request body exceeds {limit} bytes.")
    return bytes(out)


def _unzlib(body: bytes, coding: str, limit: int) -> bytes:
    # wbits 47 detects gzip or zlib headers; raw deflate (-15) is tried when a client sends that.
    attempts = (47,) if coding != "deflate" else (47, -zlib.MAX_WBITS)
    for wbits in attempts:
        try:
            inflater = zlib.decompressobj(wbits)
            out = inflater.decompress(body, limit + 1)
        except zlib.error as e:
            if wbits == attempts[-1]:
                raise ApiError(400, f"The {coding} request body could not be decompressed: {e}") from e
            continue
        if len(out) > limit:
            raise ApiError(413, f"The decompressed request body exceeds {limit} bytes.")
        return out
    raise AssertionError("unreachable")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number out of range: {text[:40]}")
    return value


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_json(raw: bytes) -> Any:
    """Strict JSON from bytes (no NaN/Infinity/overflowing numbers), or a FastAPI-style 422."""
    try:
        return json.loads(raw, parse_float=_finite, parse_constant=_no_constants)
    except (UnicodeDecodeError, ValueError) as e:
        pos = getattr(e, "pos", getattr(e, "start", 0))
        raise ApiError(
            422,
            [{"type": "json_invalid", "loc": ["body", pos], "msg": f"JSON decode error: {e}", "input": {}}],
        ) from e


def parse_multipart(raw: bytes, content_type: str) -> tuple[Any, dict[str, bytes]]:
    """The SDK's multipart form: a JSON part named `request` plus binary asset parts by name."""
    _, params = parse_options_header(content_type)
    boundary = params.get(b"boundary")
    if not boundary:
        raise ApiError(400, "multipart/form-data without a boundary.")
    parts: dict[str, bytes] = {}
    current: dict[str, Any] = {}

    def on_header_field(data: bytes, start: int, end: int) -> None:
        current["field"] = current.get("field", b"") + data[start:end]

    def on_header_value(data: bytes, start: int, end: int) -> None:
        current["value"] = current.get("value", b"") + data[start:end]

    def on_header_end() -> None:
        if current.pop("field", b"").lower() == b"content-disposition":
            _, disp = parse_options_header(current.get("value", b""))
            current["name"] = disp.get(b"name", b"").decode()
        current.pop("value", None)

    def on_part_begin() -> None:
        current.clear()
        current["data"] = bytearray()

    def on_part_data(data: bytes, start: int, end: int) -> None:
        current["data"] += data[start:end]

    def on_part_end() -> None:
        name = current.get("name") or ""
        if name in parts:
            raise ApiError(400, f"multipart part {name!r} appears twice.")
        parts[name] = bytes(current["data"])

    parser = MultipartParser(
        boundary,
        {
            "on_part_begin": on_part_begin,
            "on_part_data": on_part_data,
            "on_part_end": on_part_end,
            "on_header_field": on_header_field,
            "on_header_value": on_header_value,
            "on_header_end": on_header_end,
        },
    )
    try:
        parser.write(raw)
        parser.finalize()
    except ApiError:
        raise
    except Exception as e:  # python-multipart raises its own error types for malformed bodies
        raise ApiError(400, f"Malformed multipart body: {e}") from e
    if "request" not in parts:
        raise ApiError(400, "multipart/form-data needs a part named 'request' holding the JSON request.")
    return parse_json(parts.pop("request")), parts
