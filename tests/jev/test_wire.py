"""Body decoding, nesting and limits, without a server."""

from __future__ import annotations

import gzip
import json
import zlib

import pytest
import zstandard

from app.core.errors import BodyTooLarge, InvalidBody, InvalidRequest, UnsupportedMedia
from app.jev.wire import MAX_DEPTH, decode_content, parse_json, parse_multipart

pytestmark = pytest.mark.unit

PAYLOAD = b'{"state": "x"}' * 10


def _raw_deflate(data: bytes) -> bytes:
    c = zlib.compressobj(wbits=-15)
    return c.compress(data) + c.flush()


@pytest.mark.parametrize(
    ("encoding", "packed"),
    [
        ("zstd", zstandard.ZstdCompressor().compress(PAYLOAD)),
        ("gzip", gzip.compress(PAYLOAD, mtime=0)),
        ("deflate", zlib.compress(PAYLOAD)),
        ("deflate", _raw_deflate(PAYLOAD)),  # some clients send deflate without the zlib header
        (None, PAYLOAD),
        ("identity", PAYLOAD),
    ],
)
def test_decode_content(encoding: str | None, packed: bytes) -> None:
    assert decode_content(packed, encoding, 10_000) == PAYLOAD


def test_stacked_encodings_are_undone_in_reverse() -> None:
    packed = zstandard.ZstdCompressor().compress(gzip.compress(PAYLOAD))
    assert decode_content(packed, "gzip, zstd", 10_000) == PAYLOAD


@pytest.mark.parametrize("encoding", ["zstd", "gzip"])
def test_decompression_limit(encoding: str) -> None:
    big = b"a" * 100_000
    packed = zstandard.ZstdCompressor().compress(big) if encoding == "zstd" else gzip.compress(big)
    with pytest.raises(BodyTooLarge):
        decode_content(packed, encoding, 50_000)


def test_unknown_encoding_is_unsupported_media() -> None:
    with pytest.raises(UnsupportedMedia):
        decode_content(b"x", "br", 100)


@pytest.mark.parametrize("raw", [b"NaN", b'{"a": Infinity}', b"1e999", b"{", b"\xff"])
def test_strict_json(raw: bytes) -> None:
    with pytest.raises(InvalidBody) as e:
        parse_json(raw)
    assert e.value.detail[0]["type"] == "json_invalid"  # type: ignore[index]


@pytest.mark.parametrize("opener", [b"[", b'{"a":'])
def test_nesting_is_bounded_before_any_recursion(opener: bytes) -> None:
    closer = b"]" if opener == b"[" else b"}"
    ok = opener * MAX_DEPTH + b"1" + closer * MAX_DEPTH
    assert parse_json(ok) is not None
    for depth in (MAX_DEPTH + 1, 900, 100_000):  # below and far past Python's recursion limit
        with pytest.raises(InvalidRequest, match=f"at most {MAX_DEPTH} levels"):
            parse_json(opener * depth + b"1" + closer * depth)


def test_wide_bodies_are_not_deep() -> None:
    wide = json.dumps({"state": [[i] for i in range(50_000)]}).encode()
    assert len(parse_json(wide)["state"]) == 50_000


def test_multipart_parts() -> None:
    body = (
        b'--B\r\nContent-Disposition: form-data; name="request"\r\n\r\n{"a": 1}\r\n'
        b'--B\r\nContent-Disposition: form-data; name="asset-0"; filename="asset-0"\r\n'
        b"Content-Type: image/png\r\n\r\n\x89PNG\r\n--B--\r\n"
    )
    data, parts = parse_multipart(body, "multipart/form-data; boundary=B")
    assert data == {"a": 1} and parts == {"asset-0": b"\x89PNG"}
    with pytest.raises(InvalidRequest):
        parse_multipart(body, "multipart/form-data")
