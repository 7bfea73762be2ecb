"""Hand-written hostile bodies for `POST /v1/systemone`: what a fuzzer built from the schema rarely
makes (bombs, broken encodings, surrogates, 10,000 questions...). Each case names the statuses it
may get; none may be 5xx, and every 4xx must carry `detail`.

Shared by the in-process test (tests/gateway/test_nasty_bodies.py) and `make reliability`, which sends
them to a real gateway process and reports its peak memory.
"""

from __future__ import annotations

import asyncio
import gzip
import io
import json
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import httpx
import zstandard

PATH = "/v1/systemone"
OK = 200
NOUL = {"type": "noul", "instructions": "Should someone be paged?"}


def body(questions: dict[str, Any] | None = None, state: Any = "disk 91% full", **extra: Any) -> bytes:
    return json.dumps(
        {"model": "jev-latest", "state": state, "questions": questions or {"q": NOUL}, **extra}
    ).encode()


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[int], bytes]  # the body, given the gateway's body limit in bytes
    allowed: frozenset[int]
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "application/json"})


@dataclass(frozen=True)
class Result:
    name: str
    status: int
    seconds: float
    body_bytes: int
    problem: str | None  # why this case failed, or None
    shed: int = 0  # 429s before the answer: the gateway was busy, not the case judged


@cache
def _bomb(coding: str, size: int) -> bytes:
    """A body whose state is `size` zeros, compressed as it streams: a few hundred KB on the wire."""
    if coding == "zstd":
        z: Any = zstandard.ZstdCompressor(level=3).compressobj()
    else:
        z = zlib.compressobj(1, zlib.DEFLATED, 31 if coding == "gzip" else 15)
    out = [z.compress(b'{"model": "jev-latest", "state": "')]
    chunk = b"0" * (1 << 20)
    for _ in range(size // len(chunk)):
        out.append(z.compress(chunk))
    out += [z.compress(b'", "questions": {}}'), z.flush()]
    return b"".join(out)


def _gzip(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9, mtime=0)


def _zstd(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=19).compress(data)


def _nested(depth: int, open_: str, close: str) -> bytes:
    return (
        b'{"model": "jev-latest", "state": '
        + (open_ * depth + close * depth).encode()
        + b', "questions": {}}'
    )


def _multipart(parts: list[tuple[str, bytes]], boundary: str = "b0undary") -> bytes:
    out = io.BytesIO()
    for name, payload in parts:
        out.write(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode())
        out.write(payload + b"\r\n")
    out.write(f"--{boundary}--\r\n".encode())
    return out.getvalue()


MULTIPART = {"content-type": "multipart/form-data; boundary=b0undary"}
_4XX = frozenset(range(400, 500))


def _enc(coding: str) -> dict[str, str]:
    return {"content-type": "application/json", "content-encoding": coding}


CASES: list[Case] = [
    # -- structure ------------------------------------------------------------------------------
    Case("arrays nested 100,000 deep", lambda _: _nested(100_000, "[", "]"), frozenset({400})),
    Case("objects nested 20,000 deep", lambda _: _nested(20_000, '{"a":', "}"), frozenset({400, 422})),
    Case("10,000 questions", lambda _: body({f"q{i}": NOUL for i in range(10_000)}), frozenset({400})),
    Case(
        "a choice of 10,000 options",
        lambda _: body({"c": {"type": "choice", "criteria": {f"o{i}": None for i in range(10_000)}}}),
        frozenset({400}),
    ),
    Case(
        "a score of 1,000 levels",
        lambda _: body({"s": {"type": "score", "criteria": [str(i) for i in range(1000)]}}),
        frozenset({400}),
    ),
    Case("numbers as question names", lambda _: body({"1": NOUL, "2.5": NOUL, "-3": NOUL}), frozenset({OK})),
    Case(
        "empty and control-character names",
        lambda _: body({"": NOUL, "a\u0000b": NOUL, "\n:": NOUL}),
        frozenset({OK, 400}),
    ),
    Case(
        "duplicate keys (the last wins)",
        lambda _: b'{"model": "nope", ' + body()[1:],
        frozenset({OK}),
    ),
    Case(
        "a state of small keys, up to the body limit",
        lambda limit: body(state={f"k{i}": i for i in range(limit // 20)}),
        frozenset({OK, 400}),
    ),
    Case(
        "questions as a list",
        lambda _: b'{"model": "jev-latest", "state": "x", "questions": [1, 2]}',
        frozenset({422}),
    ),
    Case("top-level array", lambda _: b"[" + body() + b"]", frozenset({422})),
    Case("top-level null", lambda _: b"null", frozenset({422})),
    Case(
        "read_policy with absurd numbers",
        lambda _: body(read_policy={"mode": "debias", "debias_reads": 10**9}),
        frozenset({400, 422}),
    ),
    Case("read_policy of the wrong type", lambda _: body(read_policy=[1, 2]), frozenset({422})),
    # -- numbers and text -----------------------------------------------------------------------
    Case("NaN", lambda _: b'{"model": "jev-latest", "state": NaN, "questions": {}}', frozenset({422})),
    Case(
        "Infinity",
        lambda _: b'{"model": "jev-latest", "state": [-Infinity], "questions": {}}',
        frozenset({422}),
    ),
    Case(
        "a number over float range", lambda _: body(state=None).replace(b"null", b"1e999"), frozenset({422})
    ),
    Case(
        "score levels with integers beyond 64 bits (echoed in the legend)",
        lambda _: body({"s": {"type": "score", "criteria": [{"n": 2**70}, {"n": -(2**80)}, "high"]}}),
        frozenset({OK}),
    ),
    Case(
        "an integer of 100,000 digits",
        lambda _: body(state=None).replace(b"null", b"9" * 100_000),
        frozenset({422}),
    ),
    Case(
        "invalid UTF-8",
        lambda _: b'{"model": "jev-latest", "state": "\xff\xfe\xc3", "questions": {}}',
        frozenset({422}),
    ),
    Case(
        "a lone surrogate escape",
        lambda _: body(state="SURROGATE").replace(b"SURROGATE", b"\\ud800"),
        frozenset({422}),
    ),
    Case(
        "a lone surrogate in a name",
        lambda _: body({"SURROGATE": NOUL}).replace(b"SURROGATE", b"\\udfff"),
        frozenset({422}),
    ),
    Case(
        "a paired surrogate escape (an emoji)",
        lambda _: body(state="EMOJI").replace(b"EMOJI", b"\\ud83d\\ude00"),
        frozenset({OK}),
    ),
    Case(
        "NUL and control characters in the state",
        lambda _: body(state="a\u0000b\u0001\u001f"),
        frozenset({OK, 400}),
    ),
    Case("a BOM before the JSON", lambda _: b"\xef\xbb\xbf" + body(), frozenset({OK, 422})),
    # -- size -----------------------------------------------------------------------------------
    Case(
        "a state just under the body limit",
        lambda limit: body(state="x" * (limit - 200)),
        frozenset({OK, 400}),
    ),
    Case("a body over the limit", lambda limit: body(state="x" * limit), frozenset({413})),
    Case("an empty body", lambda _: b"", frozenset({422})),
    # -- content encodings ----------------------------------------------------------------------
    Case("a zstd bomb (1 GiB of zeros)", lambda _: _bomb("zstd", 1 << 30), frozenset({413}), _enc("zstd")),
    Case(
        "a gzip bomb (256 MiB of zeros)", lambda _: _bomb("gzip", 256 << 20), frozenset({413}), _enc("gzip")
    ),
    Case(
        "a deflate bomb (256 MiB of zeros)",
        lambda _: _bomb("deflate", 256 << 20),
        frozenset({413}),
        _enc("deflate"),
    ),
    Case("gzip declared, plain JSON sent", lambda _: body(), frozenset({400}), _enc("gzip")),
    Case("zstd declared, gzip sent", lambda _: _gzip(body()), frozenset({400}), _enc("zstd")),
    Case("an unknown coding", lambda _: body(), frozenset({415}), _enc("br")),
    Case("stacked codings, in order", lambda _: _zstd(_gzip(body())), frozenset({OK}), _enc("gzip, zstd")),
    Case("stacked codings, reversed", lambda _: _zstd(_gzip(body())), frozenset({400}), _enc("zstd, gzip")),
    Case("gzip stacked 64 times", lambda _: _gzip64(body()), frozenset({OK}), _enc(", ".join(["gzip"] * 64))),
    Case("a coding list of commas", lambda _: body(), frozenset({OK}), _enc(",, identity ,,")),
    Case("a truncated zstd frame", lambda _: _zstd(body())[:-7], frozenset({400}), _enc("zstd")),
    Case("a truncated gzip stream", lambda _: _gzip(body())[:-12], frozenset({400}), _enc("gzip")),
    Case(
        "gzip with trailing garbage", lambda _: _gzip(body()) + b"garbage", frozenset({OK, 400}), _enc("gzip")
    ),
    # -- content types and multipart ------------------------------------------------------------
    Case("text/plain", lambda _: body(), frozenset({415}), {"content-type": "text/plain"}),
    Case("no content type (read as JSON)", lambda _: body(), frozenset({OK}), {}),
    Case(
        "multipart without a boundary",
        lambda _: _multipart([("request", body())]),
        frozenset({400}),
        {"content-type": "multipart/form-data"},
    ),
    Case(
        "multipart without a request part", lambda _: _multipart([("asset-0", b"\x89PNG")]), _4XX, MULTIPART
    ),
    Case(
        "multipart, request part not JSON",
        lambda _: _multipart([("request", b"{nope")]),
        frozenset({422}),
        MULTIPART,
    ),
    Case(
        "multipart of 10,000 parts",
        lambda _: _multipart([("request", body())] + [(f"asset-{i}", b"x") for i in range(10_000)]),
        frozenset({400, 413}),
        MULTIPART,
    ),
    Case(
        "multipart with a 1 MB part name",
        lambda _: _multipart([("n" * (1 << 20), b"x"), ("request", body())]),
        frozenset({OK, 400, 413}),
        MULTIPART,
    ),
    Case(
        "multipart, never closed",
        lambda _: _multipart([("request", body())])[:-12],
        frozenset({OK, 400, 422}),
        MULTIPART,
    ),
    Case(
        "multipart with a lying boundary",
        lambda _: _multipart([("request", body())], boundary="other"),
        _4XX,
        MULTIPART,
    ),
]


def _gzip64(data: bytes) -> bytes:
    for _ in range(64):
        data = _gzip(data)
    return data


SHED_RETRIES = 3  # a 429 says the gateway was busy (with others' work), not what it makes of the case


async def send_all(client: httpx.AsyncClient, limit: int) -> list[Result]:
    """Every case once, in order, through `client` (its base URL and credentials). A case shed with
    429 is sent again after its Retry-After, as a client would, up to SHED_RETRIES times."""
    results = []
    for case in CASES:
        content = case.make(limit)
        for shed in range(SHED_RETRIES + 1):
            start = time.perf_counter()
            r = await client.post(PATH, content=content, headers=case.headers)
            seconds = time.perf_counter() - start
            if r.status_code != 429 or shed == SHED_RETRIES:
                break
            await asyncio.sleep(min(10.0, float(r.headers.get("retry-after", "1"))))
        results.append(Result(case.name, r.status_code, seconds, len(content), problem(case, r), shed))
    return results


def problem(case: Case, r: httpx.Response) -> str | None:
    if r.status_code >= 500:
        return f"{r.status_code}: a server error for a client's body ({r.text[:200]})"
    if r.status_code not in case.allowed:
        return f"{r.status_code} is not one of {sorted(case.allowed)} ({r.text[:200]})"
    if r.status_code >= 400:
        try:
            detail = r.json().get("detail")
        except ValueError:
            return f"{r.status_code} without a JSON body"
        if not detail:
            return f"{r.status_code} without a detail"
    return None
