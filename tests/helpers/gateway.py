"""Test code of the gateway and its clients: request builders, gateway settings for tests, a
scripted stand-in of the engine client, and real servers in a thread."""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import uvicorn

from app.core.net import free_port
from app.core.polling import wait_until
from app.gateway.settings import GatewaySettings

SCRIPTED_MODEL = "scripted-stand-in"


ALERT_QUESTIONS: dict[str, Any] = {
    "page": {"type": "noul", "instructions": "Should on-call be paged?"},
    "team": {"type": "choice", "criteria": {"db": None, "network": None, "app": None}},
    "severity": {"type": "score", "criteria": ["low", "medium", "high"]},
}


NOUL: dict[str, Any] = {"p": {"type": "noul", "instructions": "Page?"}}


GatewayFactory = Callable[..., str]  # the `gateway_factory` fixture: settings overrides -> URL


AppFactory = Callable[..., tuple[Any, httpx.AsyncClient]]  # `make_app`: overrides -> (app, client)


def decision(
    questions: dict[str, Any], state: Any = "Disk usage at 97% on db-1", **extra: Any
) -> dict[str, Any]:
    return {"model": "jev-latest", "state": state, "questions": questions, **extra}


def gateway_settings(**overrides: Any) -> GatewaySettings:
    """Gateway settings for a test: any bearer token accepted unless the test sets keys."""
    values: dict[str, Any] = {"allow_any_key": True, "log_level": "WARNING", **overrides}
    return GatewaySettings(**values)


def answer_probs(answer: dict[str, Any]) -> list[float]:
    """A Jev answer's probabilities in its own order (a noul's as [yes, no])."""
    if answer["type"] == "noul":
        return [answer["noul"], 1 - answer["noul"]]
    return list(answer["probabilities"].values())


class ScriptedEngine:
    """A stand-in of `app.gateway.engine.EngineClient` for in-process tests of the gateway's own
    orchestration (plans, error contract, admission, cancellation). Its probabilities are a
    deterministic hash of the prompt: they mean nothing and prove nothing about answers.

    `hold` makes every call wait until it is set; `fail` is raised by every call; `calls` records
    each call's body; `in_flight`/`peak` count concurrent calls; `cancelled` counts cancellations.
    """

    model = SCRIPTED_MODEL

    def __init__(self, *, fail: Exception | None = None, delay_s: float = 0.0) -> None:
        self.fail = fail
        self.delay_s = delay_s
        self.hold: asyncio.Event | None = None
        self.calls: list[dict[str, Any]] = []
        self.in_flight = 0
        self.peak = 0
        self.cancelled = 0
        self.is_healthy = True
        self.called = asyncio.Event()  # set by the first call

    async def healthy(self) -> bool:
        return self.is_healthy

    async def count_tokens(self, text: str) -> int:
        return max(1, len(text) // 4)

    async def aclose(self) -> None:
        pass

    async def systemone(self, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(body)
        self.called.set()
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            if self.hold is not None:
                await self.hold.wait()
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            if self.fail is not None:
                raise self.fail
            return self._answer(body)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            self.in_flight -= 1

    @property
    def reads(self) -> int:
        return sum(len(b["questions"]) for b in self.calls)

    @staticmethod
    def _answer(body: dict[str, Any]) -> dict[str, Any]:
        state = str(body["state"])
        answers, diagnostics = {}, {}
        for name, q in body["questions"].items():
            if q["type"] == "noul":
                labels = ["yes", "no"]
            elif q["type"] == "score":
                labels = [str(i) for i in range(len(q["criteria"]))]
            else:
                labels = list(q["criteria"])
            weights = [
                1 + int(hashlib.sha256(f"{state}|{q}|{label}".encode()).hexdigest()[:4], 16) / 65536
                for label in labels
            ]
            probs = {label: w / sum(weights) for label, w in zip(labels, weights, strict=True)}
            answers[name] = {"type": q["type"], "probabilities": probs}
            diagnostics[name] = {"label_mass": 0.5}
        n = len(body["questions"])
        usage = {"input_tokens": n * (len(state) // 4 + 10), "output_tokens": n}
        return {"answers": answers, "diagnostics": diagnostics, "usage": usage}


class _ThreadedServer(uvicorn.Server):
    def install_signal_handlers(self) -> None:  # the test process keeps its own handlers
        pass


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """Run an ASGI app under a real uvicorn server in a thread, on a free port; yield its URL."""
    port = free_port()
    server = _ThreadedServer(uvicorn.Config(app, port=port, log_level="warning", log_config=None))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        if not wait_until(lambda: server.started, 20, interval_s=0.05):
            raise RuntimeError("test server did not start")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def in_process(app: Any) -> httpx.AsyncClient:
    """An async client that calls the app in this process (no socket)."""
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://gateway",
        headers={"authorization": "Bearer test"},
        timeout=30,
    )
