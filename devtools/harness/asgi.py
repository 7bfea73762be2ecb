"""The two halves of a bare ASGI app (the stand-ins and proxies of the benchmarks): the whole request
body, and a complete response."""

from __future__ import annotations

from starlette.types import Receive, Send


async def body(receive: Receive) -> bytes:
    raw = bytearray()
    while True:
        message = await receive()
        raw += message.get("body", b"")
        if not message.get("more_body"):
            return bytes(raw)


async def reply(send: Send, status: int, data: bytes, content_type: bytes = b"application/json") -> None:
    headers = [(b"content-type", content_type), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
