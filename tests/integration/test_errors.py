"""Every error status the gateway promises, on real servers; and never a 5xx for a client mistake."""

from __future__ import annotations

import gzip
import json
import os
import signal
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import zstandard

from tests.conftest import GatewayFactory, Stack, free_port
from tests.helpers import ALERT_QUESTIONS, decision

pytestmark = pytest.mark.engine
NOUL = {"p": {"type": "noul", "instructions": "Page?"}}


def _post(url: str, body: Any = None, *, content: bytes | None = None, **headers: str) -> httpx.Response:
    hdrs = {"authorization": "Bearer any", "content-type": "application/json", **headers}
    data = content if content is not None else json.dumps(body).encode()
    r = httpx.post(f"{url}/v1/systemone", content=data, headers=hdrs, timeout=60)
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
def test_semantic_limits_are_400(stack: Stack, questions: dict[str, Any], message: str) -> None:
    r = _post(stack.url, decision(questions))
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
        {"state": "x", "questions": NOUL},  # no model
        ["not", "an", "object"],
    ],
)
def test_schema_errors_are_422_with_fastapi_detail(stack: Stack, body: Any) -> None:
    r = _post(stack.url, body)
    assert r.status_code == 422
    detail = _detail(r)
    assert isinstance(detail, list) and detail
    assert all(d["loc"][0] == "body" and isinstance(d["msg"], str) for d in detail)


def test_invalid_json_is_422(stack: Stack) -> None:
    r = _post(stack.url, content=b'{"model": "jev-latest", "state": ')
    assert r.status_code == 422
    assert _detail(r)[0]["type"] == "json_invalid"


def test_unknown_model_is_404(stack: Stack) -> None:
    r = _post(stack.url, {**decision(NOUL), "model": "jev-9"})
    assert r.status_code == 404
    assert "jev-latest" in _detail(r)


def test_unknown_route_is_404_with_request_id(stack: Stack) -> None:
    r = httpx.get(f"{stack.url}/v1/nothing-here")
    assert r.status_code == 404 and r.headers["x-typesafe-request-id"]


def test_unsupported_media_is_415(stack: Stack) -> None:
    r = _post(stack.url, content=b"state=x", **{"content-type": "application/x-www-form-urlencoded"})
    assert r.status_code == 415
    r = _post(stack.url, content=b"\x00\x01", **{"content-encoding": "br"})
    assert r.status_code == 415 and "br" in _detail(r)


@pytest.mark.parametrize("encoding", ["zstd", "gzip", "deflate"])
def test_compressed_bodies_are_read(stack: Stack, encoding: str) -> None:
    raw = json.dumps(decision(NOUL, read_policy={"mode": "single"})).encode()
    packed = {
        "zstd": zstandard.ZstdCompressor().compress,
        "gzip": gzip.compress,
        "deflate": zlib.compress,
    }[encoding](raw)
    r = _post(stack.url, content=packed, **{"content-encoding": encoding})
    assert r.status_code == 200, r.text
    assert set(r.json()["answers"]) == {"p"}


def test_corrupt_compressed_body_is_400(stack: Stack) -> None:
    r = _post(stack.url, content=b"definitely not zstd", **{"content-encoding": "zstd"})
    assert r.status_code == 400 and "zstd" in _detail(r)


def test_body_too_large_is_413_before_and_after_decompression(gateway_factory: GatewayFactory) -> None:
    url = gateway_factory(max_body_bytes=4096)
    big = decision(NOUL, state="x" * 5000)
    assert _post(url, big).status_code == 413
    # A small zstd body that inflates past the limit (a decompression bomb) is refused too.
    bomb = zstandard.ZstdCompressor().compress(json.dumps(big).encode())
    assert len(bomb) < 4096
    r = _post(url, content=bomb, **{"content-encoding": "zstd"})
    assert r.status_code == 413 and "decompressed" in _detail(r)


def test_assets_and_multipart_are_a_clear_400(stack: Stack) -> None:
    body = decision({"b": {"type": "noul", "instructions": "Is <image:1> red?"}})
    body["assets"] = {"<image:1>": {"type": "image", "format": "png", "data_base64": "iVBORw0KGgo="}}
    r = _post(stack.url, body)
    assert r.status_code == 400 and "text-only" in _detail(r)
    # What typesafe-sdk sends with images: a `request` JSON part plus the image bytes.
    boundary = "b0undary"
    request_part = json.dumps({**body, "assets": {"<image:1>": {"type": "image", "part": "asset-0"}}})
    form = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="request"\r\n'
        f"Content-Type: application/json\r\n\r\n{request_part}\r\n"
        f'--{boundary}\r\nContent-Disposition: form-data; name="asset-0"; filename="asset-0"\r\n'
        f"Content-Type: image/png\r\n\r\n\x89PNG\r\n\x1a\n\r\n--{boundary}--\r\n"
    ).encode("latin-1")
    r = _post(stack.url, content=form, **{"content-type": f"multipart/form-data; boundary={boundary}"})
    assert r.status_code == 400 and "text-only" in _detail(r)
    r = _post(stack.url, content=b"--x--\r\n", **{"content-type": "multipart/form-data; boundary=x"})
    assert r.status_code == 400 and "request" in _detail(r)


def test_auth_401_with_keys_from_env_and_file(gateway_factory: GatewayFactory, tmp_path: Path) -> None:
    keys_file = tmp_path / "keys"
    keys_file.write_text("from-file-key\n")
    url = gateway_factory(api_keys="env-key-1,env-key-2", api_keys_file=keys_file)
    body = decision(NOUL, read_policy={"mode": "single"})
    for token, status in [("wrong", 401), ("env-key-2", 200), ("from-file-key", 200), ("env-key", 401)]:
        r = _post(url, body, authorization=f"Bearer {token}")
        assert r.status_code == status, token
    r = httpx.get(f"{url}/v1/models")  # no Authorization header at all
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert httpx.get(f"{url}/healthz").status_code == 200  # probes stay open


def test_saturation_is_429_with_retry_after(gateway_factory: GatewayFactory) -> None:
    url = gateway_factory(max_concurrent_decisions=1, max_queued_decisions=0, retry_after_s=3)
    body = decision(ALERT_QUESTIONS, read_policy={"mode": "single"})
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: _post(url, body), range(4)))
    statuses = sorted(r.status_code for r in results)
    assert 200 in statuses and 429 in statuses, statuses
    limited = next(r for r in results if r.status_code == 429)
    assert limited.headers["retry-after"] == "3"


def test_engine_not_running_is_503_with_retry_after(gateway_factory: GatewayFactory) -> None:
    url = gateway_factory(engine_url=f"http://127.0.0.1:{free_port()}", retry_after_s=5)
    r = _post(url, decision(NOUL))
    assert r.status_code == 503 and r.headers["retry-after"] == "5"
    assert "not reachable" in _detail(r)
    assert httpx.get(f"{url}/readyz").status_code == 503
    assert httpx.get(f"{url}/healthz").status_code == 200


def test_engine_stopped_mid_test_is_503_then_recovers(stack: Stack, gateway_factory: GatewayFactory) -> None:
    url = gateway_factory(engine_timeout_s=3)
    body = decision(NOUL, read_policy={"mode": "single"})
    assert _post(url, body).status_code == 200
    engine_group = stack.engine_pid()  # the engine runs in a session of its own
    os.killpg(engine_group, signal.SIGSTOP)
    try:
        r = _post(url, body)
        assert r.status_code == 503 and "did not answer in time" in _detail(r)
        assert int(r.headers["retry-after"]) > 0
        assert httpx.get(f"{url}/readyz", timeout=10).status_code == 503
    finally:
        os.killpg(engine_group, signal.SIGCONT)
    deadline = time.monotonic() + 30
    while httpx.get(f"{url}/readyz", timeout=10).status_code != 200:
        assert time.monotonic() < deadline, "the engine did not come back"
        time.sleep(0.5)
    assert _post(url, body).status_code == 200


@pytest.mark.parametrize(
    "content",
    [b"", b"null", b"[]", b"{}", b'"x"', b"\xff\xfe", b'{"model": 1}', b'{"questions": {"a": 1}}', b"1e999"],
)
def test_junk_never_gets_a_5xx(stack: Stack, content: bytes) -> None:
    r = _post(stack.url, content=content)
    assert 400 <= r.status_code < 500, (content, r.status_code, r.text)


class _BrokenEngine(BaseHTTPRequestHandler):
    """A real HTTP server that answers like a broken engine: 200 with the wrong body, or a 500."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        status, body = (200, b'{"unexpected": true}') if self.path == "/v1/systemone" else (500, b"boom")
        self.send_response(status)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_engine_errors_are_502_with_a_message(gateway_factory: GatewayFactory) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _BrokenEngine)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = gateway_factory(engine_url=f"http://127.0.0.1:{server.server_address[1]}")
        r = _post(url, decision(NOUL))
        # /tokenize answers 500 and /v1/systemone a body without answers: both are the engine's fault
        assert r.status_code == 502
        assert "engine" in _detail(r) and "Traceback" not in r.text
    finally:
        server.shutdown()
