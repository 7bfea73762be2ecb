"""Body decoding and limits, without a server."""

from __future__ import annotations

import gzip
import zlib

import pytest
import zstandard

from app.errors import ApiError
from app.settings import Settings
from app.wire import decode_content, parse_json, parse_multipart

PAYLOAD = b'{"state": "x"}' * 10


def _raw_deflate(data: bytes) -> bytes:
    c = zlib.compressobj(wbits=-15)
    return c.compress(data) + c.flush()


@pytest.mark.parametrize(
    ("encoding", "packed"),
    [
        ("zstd", zstandard.ZstdCompressor().compress(PAYLOAD)),
        ("gzip", gzip.compress(PAYLOAD)),
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
    with pytest.raises(ApiError) as e:
        decode_content(packed, encoding, 50_000)
    assert e.value.status == 413


def test_unknown_encoding_is_415() -> None:
    with pytest.raises(ApiError) as e:
        decode_content(b"x", "br", 100)
    assert e.value.status == 415


@pytest.mark.parametrize("raw", [b"NaN", b'{"a": Infinity}', b"1e999", b"{", b"\xff"])
def test_strict_json(raw: bytes) -> None:
    with pytest.raises(ApiError) as e:
        parse_json(raw)
    assert e.value.status == 422 and e.value.detail[0]["type"] == "json_invalid"  # type: ignore[index]


def test_multipart_parts() -> None:
    body = (
        b'--B\r\nContent-Disposition: form-data; name="request"\r\n\r\n{"a": 1}\r\n'
        b'--B\r\nContent-Disposition: form-data; name="asset-0"; filename="asset-0"\r\n'
        b"Content-Type: image/png\r\n\r\n\x89PNG\r\n--B--\r\n"
    )
    data, parts = parse_multipart(body, "multipart/form-data; boundary=B")
    assert data == {"a": 1} and parts == {"asset-0": b"\x89PNG"}
    with pytest.raises(ApiError):
        parse_multipart(body, "multipart/form-data")


def test_settings_port_aliases_and_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    monkeypatch.setenv("DGEMMA_PORT", "9000")
    assert Settings().port == 9000
    monkeypatch.setenv("PORT", "9100")  # Cloud Run's PORT wins
    assert Settings().port == 9100
    monkeypatch.setenv("DGEMMA_MODEL_ALIASES", "jev-1.13.0, prod-decider")
    s = Settings(api_keys="a,b")  # type: ignore[arg-type]
    assert s.model_names == ("dgemma", "jev-latest", "jev-preview", "jev-1.13.0", "prod-decider")
    assert s.accepted_keys == (b"a", b"b")
    assert "a" not in repr(s.api_keys)  # secrets never print
    with pytest.raises(ValueError, match="not a readable file"):
        Settings(api_keys_file="/nonexistent/keys")  # type: ignore[arg-type]
