"""A proxy that holds every request for `--delay-s` before passing it to the upstream (vLLM): a slow
engine, for the fault runs of `make reliability`. A bare ASGI app on uvicorn.

    python -m devtools.bench.reliability.slowproxy --port 8200 --upstream http://127.0.0.1:8100 --delay-s 10
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

import httpx
from starlette.types import Receive, Scope, Send

from devtools.harness import asgi


def make_app(upstream: str, delay_s: float) -> Any:
    client = httpx.AsyncClient(base_url=upstream, timeout=None)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        raw = await asgi.body(receive)
        await asyncio.sleep(delay_s)
        headers = [(k.decode(), v.decode()) for k, v in scope["headers"] if k.lower() != b"host"]
        r = await client.request(scope["method"], scope["path"], content=raw, headers=headers)
        await asgi.reply(
            send, r.status_code, r.content, r.headers.get("content-type", "application/json").encode()
        )

    return app


def main(argv: list[str] | None = None) -> int:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--delay-s", type=float, required=True)
    args = parser.parse_args(argv)
    app = make_app(args.upstream, args.delay_s)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
