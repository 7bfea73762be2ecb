"""The Jev wire: request models, body decoding (zstd/gzip/deflate, JSON or multipart), and limits.

Shapes follow `typesafe-sdk` 0.7.5 and the hosted API's observed behaviour (docs/decisions.md).
"""

from __future__ import annotations

import json
import math
import re
import zlib
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

import zstandard
from pydantic import BaseModel, ConfigDict, Field
from python_multipart.multipart import MultipartParser, parse_options_header

from app.core.errors import BodyTooLarge, InvalidBody, InvalidRequest, UnsupportedMedia
from app.core.models import StrictModel

# A JSON value the model reads as text: a string as-is, an object or array as JSON text.
Content = str | dict[str, Any] | list[Any]

# How long the client waits for a decision, in seconds: the gateway answers by then (429 or 503 with
# Retry-After if it cannot), instead of by its default deadline. Not Jev's: the kit's client sends it.
TIMEOUT_HEADER = "X-Request-Timeout"
MAX_TIMEOUT_S = 3600.0  # the longest a Cloud Run request may take
MAX_CHOICES = 255
MAX_SCORE_LEVELS = 10
# Deeper JSON is refused before it reaches recursive code (json's parser, pydantic, renderers).
# Alert payloads nest a handful of levels; 64 leaves room for any real state.
MAX_DEPTH = 64
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")  # \uD800-\uDFFF, paired or not
_SURROGATE = re.compile("[\ud800-\udfff]")


ReadPolicyName = Literal["single", "adaptive", "debias"]


class ReadPolicy(BaseModel):
    """How many reads each question gets. The deployment's defaults (settings), a request's
    `read_policy` override and the policy echoed in the answer are all this model."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    mode: ReadPolicyName = "adaptive"
    """`single`: one read per question. `adaptive`: questions whose first read's normalised
    entropy exceeds `reread_entropy` get `extra_reads` more reads in other option orders.
    `debias`: always `debias_reads` reads in different option orders."""
    reread_entropy: float = Field(0.9, ge=0.0, le=1.0)
    """Normalised entropy (0 = certain, 1 = uniform) above which `adaptive` re-reads a question."""
    extra_reads: int = Field(2, ge=0, le=16)
    """Extra reads `adaptive` gives an uncertain question."""
    debias_reads: int = Field(3, ge=1, le=16)
    """Reads per question in `debias` mode, each in a different option order."""

    def overridden(self, override: ReadPolicy | None) -> ReadPolicy:
        """This policy with the fields a request set explicitly replaced."""
        if override is None or not override.model_fields_set:
            return self
        return self.model_copy(update=override.model_dump(include=override.model_fields_set))

    def first_orders(self, max_orders: int) -> int:
        """How many option orders every question gets in the first round."""
        return min(self.debias_reads, max_orders) if self.mode == "debias" else 1

    def extra_orders(self, first_entropy: float, max_orders: int) -> int:
        """How many more orders a question gets after its first read (adaptive only)."""
        if self.mode != "adaptive" or first_entropy <= self.reread_entropy:
            return 0
        return max(0, min(self.extra_reads, max_orders - 1))

    def most_orders(self, max_orders: int) -> int:
        """The most option orders a question can get under this policy, whatever it reads."""
        if self.mode == "adaptive":
            return min(max_orders, 1 + self.extra_reads)
        return self.first_orders(max_orders)


class NoulCriteria(StrictModel):
    true: Content | None = None
    false: Content | None = None


class NoulQuestion(StrictModel):
    type: Literal["noul"]
    instructions: Content | None = None
    criteria: NoulCriteria | None = None


class ChoiceQuestion(StrictModel):
    type: Literal["choice"]
    instructions: Content | None = None
    criteria: dict[str, Content | None] = Field(min_length=1)


class ScoreQuestion(StrictModel):
    type: Literal["score"]
    instructions: Content | None = None
    criteria: list[Content] = Field(min_length=1)


class BoxQuestion(StrictModel):
    type: Literal["box"]
    instructions: Content | None = None


Question = Annotated[NoulQuestion | ChoiceQuestion | ScoreQuestion | BoxQuestion, Field(discriminator="type")]


class Asset(StrictModel):
    type: Literal["image"]
    format: Literal["png", "jpg", "jpeg"] | None = None
    data_base64: str | None = None
    part: str | None = None


class SystemOneRequest(BaseModel):
    # Unknown top-level keys are ignored: the SDK's `extra_body` may add any.
    model_config = ConfigDict(extra="ignore")

    model: str
    state: Content
    questions: dict[str, Question] = Field(min_length=1)
    assets: dict[str, Asset] | None = Field(None, min_length=1)
    read_policy: ReadPolicy | None = Field(
        None,
        description="Extension: override the deployment's read policy; fields left out keep the "
        "deployment's values (the defaults shown are the kit's).",
    )


# -- answers (documentation of the response, and the shapes a Jev client of the gateway reads) -----


class NoulAnswer(BaseModel):
    type: Literal["noul"]
    noul: float = Field(ge=0.0, le=1.0, description="Probability of yes/true.")


class ChoiceAnswer(BaseModel):
    type: Literal["choice"]
    choice: str = Field(description="The option with the highest probability.")
    confidence: float = Field(ge=0.0, le=1.0, description="p(answer) x label mass (docs/decisions.md).")
    probabilities: dict[str, float] = Field(description="Per option, in request order; sums to 1.")


class ScoreAnswer(BaseModel):
    type: Literal["score"]
    score: float = Field(description="Probability-weighted mean level (0-based).")
    confidence: float = Field(ge=0.0, le=1.0)
    legend: dict[str, Content] = Field(description="Level index -> the request's criteria item.")
    probabilities: dict[str, float] = Field(description="Per level index; sums to 1.")


Answer = Annotated[NoulAnswer | ChoiceAnswer | ScoreAnswer, Field(discriminator="type")]


class Usage(BaseModel):
    input_tokens: int = Field(description="The state once, plus every engine read's own tokens.")
    output_tokens: int


class Diagnostics(BaseModel):
    """Extension: how each answer was read (docs/decisions.md, Diagnostics)."""

    reads: int
    engine_reads: int
    confidence: float
    first_read_entropy: float | None = None
    entropy: float | None = None
    stderr: float | None = None
    agreement: float | None = None
    label_mass: float | None = None
    calibrated: bool = False
    """Whether the answer's probabilities were scaled by the deployment's calibration file."""
    temperature: float | None = None
    """The calibration temperature applied, when calibrated."""


class SystemOneResponse(BaseModel):
    object: Literal["structured_decision"]
    model: str = Field(description="The served model's concrete name.")
    answers: dict[str, Answer] = Field(description="Keyed by the request's question names, in request order.")
    usage: Usage
    diagnostics: dict[str, Diagnostics]
    read_policy: ReadPolicy = Field(description="Extension: the read policy this decision used.")


class ModelInfo(BaseModel):
    name: str
    description: str
    release_date: str = Field(description="YYYY-MM-DD")


class ModelList(BaseModel):
    models: list[ModelInfo]


class ValidationItem(BaseModel):
    type: str
    loc: list[str | int]
    msg: str
    input: Any = None
    ctx: dict[str, Any] | None = None


class ErrorBody(BaseModel):
    """Every error: a message, or FastAPI's list for schema errors (422)."""

    detail: str | list[ValidationItem]
    error_type: str | None = Field(None, description="`max_tokens_exceeded` when the input is too long.")


def check_limits(request: SystemOneRequest, max_questions: int) -> None:
    """The hosted API's semantic limits, as 400 `{"detail": ...}` with its own messages."""
    if len(request.questions) > max_questions:
        raise InvalidRequest(f"Too many questions. Must have at most {max_questions} questions.")
    for name, q in request.questions.items():
        if isinstance(q, NoulQuestion):
            sides = q.criteria is not None and (q.criteria.true is not None or q.criteria.false is not None)
            if not sides and not _has_text(q.instructions):
                raise InvalidRequest(f"Noul question must have criteria or instructions: {name}")
        elif isinstance(q, ChoiceQuestion) and len(q.criteria) > MAX_CHOICES:
            raise InvalidRequest(f"Too many choices. Must have at most {MAX_CHOICES} choices.")
        elif isinstance(q, ScoreQuestion) and len(q.criteria) > MAX_SCORE_LEVELS:
            raise InvalidRequest(f"Too many score levels. Must have at most {MAX_SCORE_LEVELS} levels.")


def _has_text(value: Content | None) -> bool:
    return value is not None and value != "" and value != {} and value != []


# -- body decoding ------------------------------------------------------------------------------


async def read_limited(declared: str | None, chunks: AsyncIterator[bytes], limit: int) -> bytes:
    """A request body (its `Content-Length` header, its stream) read whole, or 413 as soon as it is
    over `limit` bytes: a declared length is refused before reading, a stream as it passes it."""
    if declared and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(f"The request body exceeds {limit} bytes.")
    raw = bytearray()
    async for chunk in chunks:
        raw += chunk
        if len(raw) > limit:
            raise BodyTooLarge(f"The request body exceeds {limit} bytes.")
    return bytes(raw)


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
            raise UnsupportedMedia(f"Unsupported Content-Encoding {coding!r}: use zstd, gzip or deflate.")
    return body


def _unzstd(body: bytes, limit: int) -> bytes:
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(body)
        out = reader.read(limit + 1)
        if len(out) > limit:
            raise BodyTooLarge(f"The decompressed request body exceeds {limit} bytes.")
        # The reader gives what it could of a cut-off frame without a word; decompressing again
        # (at most `limit` bytes, as just seen) tells whether the frame ended.
        whole = zstandard.ZstdDecompressor().decompressobj()
        whole.decompress(body)
    except zstandard.ZstdError as e:
        raise InvalidRequest(f"The zstd request body could not be decompressed: {e}") from e
    if not whole.eof:
        raise InvalidRequest("The zstd request body is truncated: its frame does not end.")
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
                raise InvalidRequest(f"The {coding} request body could not be decompressed: {e}") from e
            continue
        if len(out) > limit:
            raise BodyTooLarge(f"The decompressed request body exceeds {limit} bytes.")
        if not inflater.eof:  # all input read, under the limit, and the stream did not end
            raise InvalidRequest(f"The {coding} request body is truncated: its stream does not end.")
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
    """Strict JSON from bytes (no NaN/Infinity/overflowing numbers), or a FastAPI-style 422;
    nested deeper than MAX_DEPTH: 400."""
    try:
        value = json.loads(raw, parse_float=_finite, parse_constant=_no_constants)
    except RecursionError as e:
        raise _too_deep() from e
    except (UnicodeDecodeError, ValueError) as e:
        pos = getattr(e, "pos", getattr(e, "start", 0))
        raise InvalidBody(
            [{"type": "json_invalid", "loc": ["body", pos], "msg": f"JSON decode error: {e}", "input": {}}]
        ) from e
    if _depth_exceeds(value, MAX_DEPTH):
        raise _too_deep()
    # A \uD800-\uDFFF escape that is not half of a pair decodes to a lone surrogate, which no
    # UTF-8 text can carry: the engine call and the answer could not be encoded (a 500). Only
    # bodies with such an escape are walked.
    if _SURROGATE_ESCAPE.search(raw) and _has_lone_surrogate(value):
        raise InvalidBody(
            [
                {
                    "type": "json_invalid",
                    "loc": ["body"],
                    "msg": "JSON decode error: a \\u escape is an unpaired UTF-16 surrogate, not a character",
                    "input": {},
                }
            ]
        )
    return value


def _has_lone_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if _SURROGATE.search(node):
                return True
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def _too_deep() -> InvalidRequest:
    return InvalidRequest(
        f"The JSON body is nested too deeply: at most {MAX_DEPTH} levels of arrays and objects."
    )


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Whether arrays/objects nest deeper than `limit`; iterative, so any depth is safe to check."""
    stack: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def parse_multipart(raw: bytes, content_type: str) -> tuple[Any, dict[str, bytes]]:
    """The SDK's multipart form: a JSON part named `request` plus binary asset parts by name."""
    _, params = parse_options_header(content_type)
    boundary = params.get(b"boundary")
    if not boundary:
        raise InvalidRequest("multipart/form-data without a boundary.")
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
            raise InvalidRequest(f"multipart part {name!r} appears twice.")
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
    except InvalidRequest:
        raise
    except Exception as e:  # python-multipart raises its own error types for malformed bodies
        raise InvalidRequest(f"Malformed multipart body: {e}") from e
    if "request" not in parts:
        raise InvalidRequest("multipart/form-data needs a part named 'request' holding the JSON request.")
    return parse_json(parts.pop("request")), parts
