"""An instant stand-in of vLLM's HTTP surface (`/v1/systemone`, `/tokenize`, `/health`, `/v1/models`,
`/metrics`).

It answers at once with flat probabilities in vLLM 0.32's native shapes, so a benchmark of the
gateway in front of it measures the gateway alone. It proves nothing about answers. A bare ASGI app
on uvicorn: no framework between the socket and the reply.

    python -m devtools.harness.instant_engine --port 8100 [--model dgemma] [--delay-s 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from starlette.types import Receive, Scope, Send

from devtools.harness import asgi


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """vLLM's native answer to `body`: every read's labels equally likely."""
    answers, diagnostics = {}, {}
    for name, q in body["questions"].items():
        kind = q["type"]
        labels = _labels(kind, q.get("criteria"))
        probs = {label: 1 / len(labels) for label in labels}
        answers[name] = {"type": kind, "probabilities": probs, "confidence": 1 / len(labels)}
        diagnostics[name] = {"label_mass": 0.9, "argmax_is_label": True}
    n = len(body["questions"])
    usage = {"input_tokens": n * 64, "output_tokens": n}
    return {"object": "structured_decision", "answers": answers, "diagnostics": diagnostics, "usage": usage}


def _labels(kind: str, criteria: Any) -> list[str]:
    if kind == "noul":
        return ["yes", "no"]
    if kind == "score":
        return [str(i) for i in range(len(criteria))]
    return list(criteria)


def metrics(questions: int, running: int) -> str:
    """vLLM's /metrics in its names, with stand-in figures: each question's 64 prompt tokens, half
    of them found in the prefix cache, and the decisions in flight."""
    return (
        "# TYPE vllm:prefix_cache_queries counter\n# TYPE vllm:prefix_cache_hits counter\n"
        "# TYPE vllm:prompt_tokens counter\n"
        f'vllm:prefix_cache_queries_total{{engine="0"}} {questions * 64}\n'
        f'vllm:prefix_cache_hits_total{{engine="0"}} {questions * 32}\n'
        f'vllm:prompt_tokens_total{{engine="0"}} {questions * 64}\n'
        f'vllm:num_requests_running{{engine="0"}} {running}\n'
        f'vllm:num_requests_waiting{{engine="0"}} 0\n'
        f'vllm:kv_cache_usage_perc{{engine="0"}} {min(1.0, running / 32)}\n'
    )


def make_app(model: str, delay_s: float = 0.0) -> Any:
    """The stand-in; `delay_s` holds every `/v1/systemone` answer that long (a slow engine)."""
    served = {"questions": 0, "running": 0}

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        raw = await asgi.body(receive)
        path = scope["path"]
        status, out = 200, {}
        if path == "/v1/systemone":
            served["running"] += 1
            if delay_s:
                await asyncio.sleep(delay_s)
            out = answer(json.loads(raw))
            served["running"] -= 1
            served["questions"] += len(out["answers"])
        elif path == "/metrics":
            text = metrics(served["questions"], served["running"]).encode()
            await asgi.reply(send, 200, text, content_type=b"text/plain; version=0.0.4")
            return
        elif path == "/tokenize":
            out = {"count": max(1, len(json.loads(raw)["prompt"]) // 4)}
        elif path == "/v1/models":
            out = {"object": "list", "data": [{"id": model, "object": "model"}]}
        elif path != "/health":
            status, out = 404, {"error": {"message": f"no route {path}"}}
        await asgi.reply(send, status, json.dumps(out).encode())

    return app


def make_floor(engine_url: str, model: str) -> Any:
    """The least a Python hop can do: read the body, parse it, send it on to the engine (aiohttp,
    as the gateway's client), parse and re-encode the answer. The benchmark's floor, not a gateway."""
    import aiohttp

    session: list[aiohttp.ClientSession] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        raw = await asgi.body(receive)
        if not session:
            session.append(aiohttp.ClientSession(engine_url))
        body = json.loads(raw)
        async with session[0].post(
            "/v1/systemone", json={"model": model, "state": body["state"], "questions": body["questions"]}
        ) as r:
            data = json.dumps(json.loads(await r.read())).encode()
        await asgi.reply(send, 200, data)

    return app


def main(argv: list[str] | None = None) -> int:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model", default="dgemma")
    parser.add_argument("--floor", metavar="ENGINE_URL", help="serve the pass-through floor to this engine")
    parser.add_argument("--delay-s", type=float, default=0.0, help="hold every decision this long")
    args = parser.parse_args(argv)
    app = make_floor(args.floor, args.model) if args.floor else make_app(args.model, args.delay_s)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
