"""The error contract, in process: every status the gateway promises, with the scripted engine.
A client's mistake never gets a 5xx; the engine's failures do, with Retry-After where retryable."""

from __future__ import annotations

import asyncio
import gzip
import json
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import zstandard

from app.core.config import ConfigError
from app.core.errors import EngineBadAnswer, EngineUnavailable, InputTooLong
from app.gateway.main import create_app
from app.jev.wire import MAX_DEPTH
from tests.helpers.gateway import (
    ALERT_QUESTIONS,
    NOUL,
    AppFactory,
    ScriptedEngine,
    decision,
    gateway_settings,
)

pytestmark = pytest.mark.inprocess


async def _post(
    gw: httpx.AsyncClient, body: Any = None, *, content: bytes | None = None, **headers: str
) -> httpx.Response:
    hdrs = {"content-type": "application/json", **headers}
    data = content if content is not None else json.dumps(body).encode()
    r = await gw.post("/v1/systemone", content=data, headers=hdrs)
    assert len(r.headers["x-typesafe-request-id"]) == 32, "every response carries a request id"
    return r


def _detail(r: httpx.Response) -> Any:
    return r.json()["detail"]


@pytest.mark.parametrize(
    ("questions", "message"),
    [
        ({"c": {"type": "choice", "criteria": {f"o{i}": None for i in range(256)}}}, "at most 255 choices"),
        ({"s": {"type": "score", "criteria": [str(i) for i in range(11)]}}, "at most 10 levels"),
        ({"n": {"type": "noul"}}, "Noul question must have criteria or instructions: n"),
        ({"n": {"type": "noul", "criteria": {"true": None}}}, "must have criteria or instructions"),
        ({f"q{i}": {"type": "noul", "instructions": "?"} for i in range(257)}, "at most 256 questions"),
        ({"b": {"type": "box", "instructions": "the dog"}}, "box question"),
    ],
)
async def test_semantic_limits_are_400(
    gw: httpx.AsyncClient, questions: dict[str, Any], message: str
) -> None:
    r = await _post(gw, decision(questions))
    assert r.status_code == 400
    assert message in _detail(r)


@pytest.mark.parametrize(
    "body",
    [
        {"model": "jev-latest", "questions": NOUL},  # no state
        {"model": "jev-latest", "state": 42, "questions": NOUL},  # numbers are not content
        {"model": "jev-latest", "state": "x", "questions": {}},  # at least one question
        {"model": "jev-latest", "state": "x", "questions": {"q": {"type": "rank"}}},
        {"model": "jev-latest", "state": "x", "questions": {"q": {"type": "noul", "instruction": "typo"}}},
        {"model": "jev-latest", "state": "x", "questions": {"q": {"type": "choice", "criteria": {}}}},
        {"model": "jev-latest", "state": "x", "questions": NOUL, "read_policy": {"mode": "sometimes"}},
        {"model": "jev-latest", "state": "x", "questions": NOUL, "read_policy": {"debias_reads": 0}},
        {"model": "jev-latest", "state": "x", "questions": NOUL, "read_policy": {"typo": 1}},
        {"state": "x", "questions": NOUL},  # no model
        ["not", "an", "object"],
    ],
)
async def test_schema_errors_are_422_with_fastapi_detail(gw: httpx.AsyncClient, body: Any) -> None:
    r = await _post(gw, body)
    assert r.status_code == 422
    detail = _detail(r)
    assert isinstance(detail, list) and detail
    assert all(d["loc"][0] == "body" and isinstance(d["msg"], str) for d in detail)


async def test_invalid_json_is_422(gw: httpx.AsyncClient) -> None:
    r = await _post(gw, content=b'{"model": "jev-latest", "state": ')
    assert r.status_code == 422 and _detail(r)[0]["type"] == "json_invalid"


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 100_000])
async def test_deep_nesting_is_400_not_a_recursion_error(gw: httpx.AsyncClient, depth: int) -> None:
    deep = b"[" * depth + b"]" * depth
    body = b'{"model": "jev-latest", "questions": {"p": {"type": "noul", "instructions": "?"}}, "state": '
    r = await _post(gw, content=body + deep + b"}")
    assert r.status_code == 400 and f"at most {MAX_DEPTH} levels" in _detail(r)


async def test_unknown_model_is_404_and_unknown_route_too(gw: httpx.AsyncClient) -> None:
    r = await _post(gw, {**decision(NOUL), "model": "jev-9"})
    assert r.status_code == 404 and "jev-latest" in _detail(r)
    r = await gw.get("/v1/nothing-here")
    assert r.status_code == 404 and r.headers["x-typesafe-request-id"]


async def test_unsupported_media_is_415(gw: httpx.AsyncClient) -> None:
    r = await _post(gw, content=b"state=x", **{"content-type": "application/x-www-form-urlencoded"})
    assert r.status_code == 415
    r = await _post(gw, content=b"\x00\x01", **{"content-encoding": "br"})
    assert r.status_code == 415 and "br" in _detail(r)


@pytest.mark.parametrize("encoding", ["zstd", "gzip", "deflate"])
async def test_compressed_bodies_are_read(gw: httpx.AsyncClient, encoding: str) -> None:
    raw = json.dumps(decision(NOUL, read_policy={"mode": "single"})).encode()
    pack: dict[str, Callable[[bytes], bytes]] = {
        "zstd": zstandard.ZstdCompressor().compress,
        "gzip": gzip.compress,
        "deflate": zlib.compress,
    }
    r = await _post(gw, content=pack[encoding](raw), **{"content-encoding": encoding})
    assert r.status_code == 200, r.text
    assert set(r.json()["answers"]) == {"p"}


async def test_corrupt_compressed_body_is_400(gw: httpx.AsyncClient) -> None:
    r = await _post(gw, content=b"definitely not zstd", **{"content-encoding": "zstd"})
    assert r.status_code == 400 and "zstd" in _detail(r)


async def test_body_too_large_is_413_before_and_after_decompression(make_app: AppFactory) -> None:
    _, gw = make_app(max_body_bytes=4096)
    big = decision(NOUL, state="x" * 5000)
    assert (await _post(gw, big)).status_code == 413
    bomb = zstandard.ZstdCompressor().compress(json.dumps(big).encode())
    assert len(bomb) < 4096
    r = await _post(gw, content=bomb, **{"content-encoding": "zstd"})
    assert r.status_code == 413 and "decompressed" in _detail(r)


async def test_assets_and_multipart_are_a_clear_400(gw: httpx.AsyncClient) -> None:
    body = decision({"b": {"type": "noul", "instructions": "Is <image:1> red?"}})
    body["assets"] = {"<image:1>": {"type": "image", "format": "png", "data_base64": "iVBORw0KGgo="}}
    r = await _post(gw, body)
    assert r.status_code == 400 and "text-only" in _detail(r)
    boundary = "b0undary"  # what typesafe-sdk sends with images: a `request` part plus the bytes
    request_part = json.dumps({**body, "assets": {"<image:1>": {"type": "image", "part": "asset-0"}}})
    form = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="request"\r\n'
        f"Content-Type: application/json\r\n\r\n{request_part}\r\n"
        f'--{boundary}\r\nContent-Disposition: form-data; name="asset-0"; filename="asset-0"\r\n'
        f"Content-Type: image/png\r\n\r\n\x89PNG\r\n\x1a\n\r\n--{boundary}--\r\n"
    ).encode("latin-1")
    r = await _post(gw, content=form, **{"content-type": f"multipart/form-data; boundary={boundary}"})
    assert r.status_code == 400 and "text-only" in _detail(r)
    r = await _post(gw, content=b"--x--\r\n", **{"content-type": "multipart/form-data; boundary=x"})
    assert r.status_code == 400 and "request" in _detail(r)


async def test_auth_401_with_keys_from_env_and_file(make_app: AppFactory, tmp_path: Path) -> None:
    keys_file = tmp_path / "keys"
    keys_file.write_text("from-file-key\n\n")
    _, gw = make_app(api_keys="env-key-1,env-key-2", api_keys_file=keys_file, allow_any_key=False)
    body = decision(NOUL, read_policy={"mode": "single"})
    for header, status in [
        ("Bearer wrong", 401),
        ("Bearer env-key-2", 200),
        ("Bearer from-file-key", 200),
        ("Bearer env-key", 401),  # a prefix of a key is not a key
        ("Basic env-key-1", 401),
        ("Bearer ", 401),
    ]:
        r = await _post(gw, body, authorization=header)
        assert r.status_code == status, header
    r = await gw.get("/v1/models", headers={"authorization": ""})
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert (await gw.get("/healthz", headers={"authorization": ""})).status_code == 200  # probes stay open


def test_no_keys_is_refused_unless_any_key_is_explicitly_allowed() -> None:
    with pytest.raises(ConfigError, match="DGEMMA_ALLOW_ANY_KEY=true"):
        create_app(gateway_settings(allow_any_key=False), engine=ScriptedEngine())


async def test_saturation_is_429_with_retry_after(make_app: AppFactory, scripted: ScriptedEngine) -> None:
    _, gw = make_app(max_concurrent_decisions=1, max_queued_decisions=0, retry_after_s=3)
    scripted.hold = asyncio.Event()
    body = decision(ALERT_QUESTIONS, read_policy={"mode": "single"})
    first = asyncio.create_task(_post(gw, body))
    await scripted.called.wait()
    limited = await _post(gw, body)
    assert limited.status_code == 429
    assert limited.headers["retry-after"] == "3" and limited.headers["retry-after-ms"] == "3000"
    scripted.hold.set()
    assert (await first).status_code == 200


@pytest.mark.parametrize(
    ("failure", "status", "retry_after"),
    [
        (EngineUnavailable("The engine is not reachable (ConnectError).", retry_after=5), 503, "5"),
        (EngineBadAnswer("The engine's answer lacks an expected field."), 502, None),
        (InputTooLong("Input too long: more than max_model_len"), 400, None),
    ],
)
async def test_engine_failures_map_to_their_status(
    make_app: AppFactory, failure: Exception, status: int, retry_after: str | None
) -> None:
    _, gw = make_app(engine=ScriptedEngine(fail=failure))
    r = await _post(gw, decision(NOUL))
    assert r.status_code == status and r.headers.get("retry-after") == retry_after
    assert _detail(r) == str(failure) and "Traceback" not in r.text
    if isinstance(failure, InputTooLong):
        assert r.json()["error_type"] == "max_tokens_exceeded"


async def test_readyz_follows_the_engine(make_app: AppFactory, scripted: ScriptedEngine) -> None:
    _, gw = make_app(retry_after_s=4)
    assert (await gw.get("/readyz")).json() == {"status": "ready"}
    scripted.is_healthy = False
    r = await gw.get("/readyz")
    assert r.status_code == 503 and r.headers["retry-after"] == "4"
    assert (await gw.get("/healthz")).status_code == 200


async def test_a_request_planning_too_many_reads_is_400_naming_the_count(
    make_app: AppFactory, scripted: ScriptedEngine
) -> None:
    _, gw = make_app(max_reads_per_decision=50)
    many = {"c": {"type": "choice", "criteria": {f"o{i}": None for i in range(60)}}}  # 3 chunks + final
    r = await _post(gw, decision(many, read_policy={"mode": "debias", "debias_reads": 16}))
    assert r.status_code == 400 and scripted.calls == [], "refused before any read"
    assert "may need 64 engine reads" in _detail(r) and "allows 50 per request" in _detail(r)
    ok = await _post(gw, decision(many, read_policy={"mode": "adaptive", "extra_reads": 2}))  # 3 x 4
    assert ok.status_code == 200 and scripted.reads <= 12


@pytest.mark.parametrize(
    "content",
    [b"", b"null", b"[]", b"{}", b'"x"', b"\xff\xfe", b'{"model": 1}', b'{"questions": {"a": 1}}', b"1e999"],
)
async def test_junk_never_gets_a_5xx(gw: httpx.AsyncClient, content: bytes) -> None:
    r = await _post(gw, content=content)
    assert 400 <= r.status_code < 500, (content, r.status_code, r.text)


@pytest.mark.parametrize("value", ["2", 2.0, True])
async def test_numbers_are_strict_a_string_or_float_is_not_an_integer(
    gw: httpx.AsyncClient, value: Any
) -> None:
    """Found by fuzzing: pydantic's lax mode took "2", 2.0 and true for `extra_reads`."""
    r = await _post(gw, decision(NOUL, read_policy={"mode": "adaptive", "extra_reads": value}))
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == "extra_reads"
