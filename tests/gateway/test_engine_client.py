"""The one engine client against real HTTP servers on loopback (no vLLM): every failure becomes a
domain error, never a traceback; the token cache holds digests, not states."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from app.core.errors import EngineBadAnswer, EngineUnavailable, InputTooLong, InvalidRequest, ServiceError
from app.core.net import free_port
from app.gateway.engine import EngineClient
from app.gateway.main import create_app
from devtools.harness.loopback import RecordingServer, Seen, serve
from tests.helpers.gateway import NOUL, decision, gateway_settings, in_process

pytestmark = pytest.mark.inprocess

Reply = tuple[int, bytes, float]  # status, body, delay in seconds


@contextmanager
def fake_engine(replies: dict[str, Reply]) -> Iterator[RecordingServer]:
    """A real HTTP server answering each path with a scripted (status, body, delay)."""

    def answer(seen: Seen) -> tuple[int, dict[str, str], bytes]:
        status, payload, delay = replies.get(seen.path, (404, b"{}", 0.0))
        time.sleep(delay)
        return status, {"content-type": "application/json"}, payload

    with serve(answer) as server:
        yield server


def _error(message: str) -> bytes:
    return json.dumps({"error": {"message": message}}).encode()


@pytest.mark.parametrize(
    ("reply", "error", "message"),
    [
        ((400, _error("prompt has more than max_model_len tokens"), 0), InputTooLong, "Input too long"),
        ((400, _error("bad question"), 0), InvalidRequest, "rejected the request: bad question"),
        ((429, _error("busy"), 0), EngineUnavailable, "saturated: busy"),
        ((503, b"", 0), EngineUnavailable, "saturated"),
        ((500, b"boom", 0), EngineBadAnswer, r"HTTP 500\): boom"),
        ((200, b"not json", 0), EngineBadAnswer, "not JSON"),
        ((200, b"{}", 1.0), EngineUnavailable, "did not answer in time"),
    ],
)
async def test_engine_replies_become_domain_errors(
    reply: Reply, error: type[ServiceError], message: str
) -> None:
    with fake_engine({"/v1/systemone": reply}) as fake:
        client = EngineClient(fake.url, "m", timeout_s=0.2, retry_after_s=7)
        with pytest.raises(error, match=message) as e:
            await client.systemone({"state": "x", "questions": {}})
        await client.aclose()
    assert type(e.value) is error
    if error is EngineUnavailable:
        assert e.value.retry_after == 7


async def test_an_engine_that_is_not_running_is_unavailable() -> None:
    client = EngineClient(f"http://127.0.0.1:{free_port()}", "m", timeout_s=5, retry_after_s=5)
    with pytest.raises(EngineUnavailable, match="not reachable"):
        await client.systemone({})
    assert not await client.healthy()
    await client.aclose()


async def test_a_broken_engine_is_502_through_the_gateway() -> None:
    """/tokenize without a count and /v1/systemone without answers: both are the engine's fault."""
    replies = {"/v1/systemone": (200, b'{"unexpected": true}', 0.0), "/tokenize": (200, b"{}", 0.0)}
    with fake_engine(replies) as fake:
        app = create_app(gateway_settings(engine_url=fake.url))
        async with in_process(app) as gw:
            r = await gw.post("/v1/systemone", json=decision(NOUL))
        await app.state.engine.aclose()  # no lifespan in process: close the engine client here
    assert r.status_code == 502 and "engine" in r.json()["detail"] and "Traceback" not in r.text


async def test_token_counts_are_cached_by_digest() -> None:
    with fake_engine({"/tokenize": (200, b'{"count": 42}', 0.0)}) as fake:
        client = EngineClient(fake.url, "m", timeout_s=5, retry_after_s=1)
        state = "x" * 1_000_000
        assert [await client.count_tokens(state) for _ in range(3)] == [42, 42, 42]
        assert len(fake.requests) == 1, "one /tokenize call for a repeated state"
        (key,) = client._token_counts  # one entry: a 16-byte digest, not the megabyte state
        assert isinstance(key, bytes) and len(key) == 16 and state.encode() not in client._token_counts
        await client.aclose()


@pytest.fixture
def fake_slow() -> Iterator[RecordingServer]:
    with fake_engine({"/tokenize": (200, b'{"count": 1}', 0.0), "/v1/systemone": (200, b"{}", 10.0)}) as f:
        yield f


async def test_a_slow_engine_is_503_with_retry_after_not_a_hang(fake_slow: RecordingServer) -> None:
    app = create_app(gateway_settings(engine_url=fake_slow.url, engine_timeout_s=0.2, retry_after_s=9))
    async with in_process(app) as gw:
        started = time.monotonic()
        r = await gw.post("/v1/systemone", json=decision(NOUL))
    await app.state.engine.aclose()
    assert r.status_code == 503 and r.headers["retry-after"] == "9"
    assert "did not answer in time" in r.json()["detail"]
    assert time.monotonic() - started < 5  # the 0.2 s timeout, not the engine's 10 s


async def test_a_pooled_connection_the_engine_closed_is_sent_once_more_on_a_new_one() -> None:
    """vLLM's uvicorn closes idle connections after 5 s; a request on one it closes as the request
    arrives fails at once (a 503 on the H200, after the gate's idle gap). The server here answers
    the first request of each connection and closes on the second without a word."""
    import asyncio

    answered: list[int] = []

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for n in range(2):
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
            await reader.readexactly(length)
            if n == 1:  # the keep-alive timeout, as the second request arrives
                break
            body = b'{"count": 3}'
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                % (len(body), body)
            )
            await writer.drain()
            answered.append(n)
        writer.close()

    server = await asyncio.start_server(connection, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = EngineClient(f"http://127.0.0.1:{port}", "m", 5.0, 1)
    try:
        assert await client.count_tokens("one") == 3
        assert await client.count_tokens("two") == 3  # the pooled connection is closed on it
        assert len(answered) == 2
    finally:
        await client.aclose()
        server.close()


async def test_calls_go_to_the_engine_with_the_fewest_in_flight() -> None:
    """Two engines behind one client (several on one GPU): concurrent calls split between them, one
    at a time they take turns, and a failed call leaves no count behind."""
    import asyncio

    slow = {"/v1/systemone": (200, b'{"answers": {}}', 0.3), "/health": (200, b"{}", 0.0)}
    with fake_engine(slow) as one, fake_engine(slow) as two:
        client = EngineClient(f"{one.url}, {two.url}/", "m", timeout_s=5, retry_after_s=1)
        await asyncio.gather(*(client.systemone({"state": str(i), "questions": {}}) for i in range(6)))
        assert (len(one.requests), len(two.requests)) == (3, 3)
        for i in range(4):
            await client.systemone({"state": f"s{i}", "questions": {}})
        assert (len(one.requests), len(two.requests)) == (5, 5)
        assert client._in_flight == [0, 0]
        assert await client.healthy()
        await client.aclose()


async def test_several_engines_are_healthy_only_together() -> None:
    up = {"/health": (200, b"{}", 0.0), "/v1/systemone": (200, b"{}", 0.0)}
    with fake_engine(up) as one:
        client = EngineClient(f"{one.url},http://127.0.0.1:{free_port()}", "m", timeout_s=5, retry_after_s=1)
        try:
            assert not await client.healthy()
            assert await client.systemone({}) == {}  # the first engine's turn
            with pytest.raises(EngineUnavailable, match="not reachable"):
                await client.systemone({})  # the second's: it is down
            assert client._in_flight == [0, 0]
        finally:
            await client.aclose()


def test_an_engine_url_list_may_not_be_empty() -> None:
    with pytest.raises(ValueError, match="no engine URL"):
        EngineClient(" , ", "m", timeout_s=5, retry_after_s=1)
