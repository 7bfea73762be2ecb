"""The gateway's own orchestration, in process with the scripted engine: read plans, fan-out,
weighted admission, cancellation when the client goes away, and the response shape. The stand-in's
numbers mean nothing; the real engine judges the answers (the tests marked `engine`)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from app.core.errors import EngineUnavailable
from app.core.polling import wait_until
from app.gateway.decisions.decide import CALLS_IN_FLIGHT
from app.gateway.main import create_app
from app.jev.client import JevClient
from app.jev.wire import TIMEOUT_HEADER, SystemOneResponse
from tests.helpers.gateway import (
    ALERT_QUESTIONS,
    NOUL,
    AppFactory,
    ScriptedEngine,
    decision,
    gateway_settings,
    serving,
)

pytestmark = pytest.mark.inprocess


async def _decide(gw: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    r = await gw.post("/v1/systemone", json=body)
    assert r.status_code == 200, r.text
    data: dict[str, Any] = r.json()
    return data


async def test_answers_match_the_documented_response_and_echo_the_policy(
    make_app: AppFactory,
) -> None:
    _, gw = make_app(mode="debias", debias_reads=4)
    got = await _decide(gw, decision(ALERT_QUESTIONS, read_policy={"extra_reads": 5}))
    SystemOneResponse.model_validate(got)  # what the OpenAPI document promises
    assert got["read_policy"] == {
        "mode": "debias",
        "reread_entropy": 0.9,
        "extra_reads": 5,
        "debias_reads": 4,
    }
    assert list(got["answers"]) == list(ALERT_QUESTIONS)


@pytest.mark.parametrize(
    ("policy", "reads"),
    [
        ({"mode": "single"}, 3),
        ({"mode": "debias", "debias_reads": 3}, 9),  # noul 3 readings, choice 3 orders, score 3 orders
        ({"mode": "adaptive", "reread_entropy": 0.0, "extra_reads": 2}, 9),  # every question re-read
        ({"mode": "adaptive", "reread_entropy": 1.0}, 3),  # normalised entropy never exceeds 1
    ],
)
async def test_reads_per_policy(
    gw: httpx.AsyncClient, scripted: ScriptedEngine, policy: dict[str, Any], reads: int
) -> None:
    got = await _decide(gw, decision(ALERT_QUESTIONS, read_policy=policy))
    assert scripted.reads == reads == sum(d["engine_reads"] for d in got["diagnostics"].values())


def _reversed(questions: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for name, q in questions.items():
        crit = q.get("criteria")
        if q["type"] == "choice":
            crit = dict(reversed(list(crit.items())))
        elif q["type"] == "score":
            crit = list(reversed(crit))
        out[name] = {**q, "criteria": crit} if crit is not None else q
    return out


def _by_identity(answer: dict[str, Any]) -> dict[str, float]:
    """Probabilities keyed by what an option is (a choice's name, a score level's text)."""
    if answer["type"] == "noul":
        return {"yes": answer["noul"]}
    if answer["type"] == "score":
        return {answer["legend"][k]: p for k, p in answer["probabilities"].items()}
    return dict(answer["probabilities"])


@pytest.mark.parametrize(("mode", "invariant"), [("debias", True), ("single", False), ("adaptive", False)])
async def test_debias_answers_the_same_whatever_order_the_options_came_in(
    gw: httpx.AsyncClient, mode: str, invariant: bool
) -> None:
    # The stand-in's numbers hash the prompt, options order included: like a model, it is order-biased.
    questions = {**ALERT_QUESTIONS, "team": {"type": "choice", "criteria": dict.fromkeys("abcdefg")}}
    policy = {"mode": mode, "reread_entropy": 0.0}
    forward = await _decide(gw, decision(questions, read_policy=policy))
    backward = await _decide(gw, decision(_reversed(questions), read_policy=policy))
    for name in ("team", "severity"):
        same = _by_identity(forward["answers"][name]) == _by_identity(backward["answers"][name])
        assert same is invariant, name
    assert _by_identity(forward["answers"]["page"]) == _by_identity(backward["answers"]["page"])


async def test_a_large_choice_is_read_in_chunks_then_a_final(
    gw: httpx.AsyncClient, scripted: ScriptedEngine
) -> None:
    names = [f"svc-{i:02d}" for i in range(40)]
    got = await _decide(
        gw,
        decision(
            {"svc": {"type": "choice", "criteria": dict.fromkeys(names)}}, read_policy={"mode": "single"}
        ),
    )
    assert got["diagnostics"]["svc"]["engine_reads"] == 3
    chunk_sizes = [len(q["criteria"]) for call in scripted.calls for q in call["questions"].values()]
    assert chunk_sizes == [20, 20, 26]  # two chunks, then the top 13 of each in the final read
    assert sum(got["answers"]["svc"]["probabilities"].values()) == pytest.approx(1.0)


async def test_engine_calls_are_bounded_per_decision(make_app: AppFactory, scripted: ScriptedEngine) -> None:
    _, gw = make_app(engine_max_questions=8, max_reads_per_decision=4096)
    scripted.delay_s = 0.005
    questions = {f"q{i}": {"type": "noul", "instructions": f"check {i}?"} for i in range(256)}
    await _decide(gw, decision(questions, read_policy={"mode": "single"}))
    assert len(scripted.calls) == 32  # 256 reads in calls of 8
    assert scripted.peak == CALLS_IN_FLIGHT, "never all 32 calls at once"
    assert all(len(c["questions"]) <= 8 for c in scripted.calls)


async def test_a_heavy_decision_takes_more_admission(make_app: AppFactory, scripted: ScriptedEngine) -> None:
    app, gw = make_app(max_concurrent_decisions=2, max_queued_decisions=4, engine_max_questions=64)
    scripted.hold = asyncio.Event()
    heavy = {f"q{i}": {"type": "noul", "instructions": "?"} for i in range(100)}  # 100 reads: 2 units
    first = asyncio.create_task(
        gw.post("/v1/systemone", json=decision(heavy, read_policy={"mode": "single"}))
    )
    await scripted.called.wait()
    light = asyncio.create_task(gw.post("/v1/systemone", json=decision(NOUL, read_policy={"mode": "single"})))
    metrics = app.state.metrics.registry
    for _ in range(500):  # until the light one has reached admission (and waits there)
        if metrics.get_sample_value("dgemma_decisions_queued"):
            break
        await asyncio.sleep(0.01)
    assert metrics.get_sample_value("dgemma_decisions_queued") == 1, "one decision counts two units"
    assert metrics.get_sample_value("dgemma_admission_units_in_use") == 2
    scripted.hold.set()
    assert [(await t).status_code for t in (first, light)] == [200, 200]
    assert metrics.get_sample_value("dgemma_admission_units_in_use") == 0


async def test_a_client_that_hangs_up_cancels_its_decision(
    make_app: AppFactory, scripted: ScriptedEngine
) -> None:
    """Straight ASGI: the body, then `http.disconnect` while the engine is still reading."""
    app, _ = make_app(max_concurrent_decisions=1)
    scripted.hold = asyncio.Event()
    body = json.dumps(decision(ALERT_QUESTIONS, read_policy={"mode": "single"})).encode()
    hang_up = asyncio.Event()
    inbox = [{"type": "http.request", "body": body, "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if inbox:
            return inbox.pop(0)
        await hang_up.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/v1/systemone", "raw_path": b"/v1/systemone", "query_string": b"",
        "root_path": "", "headers": [(b"content-type", b"application/json"), (b"authorization", b"Bearer x")],
        "client": ("127.0.0.1", 1), "server": ("gateway", 80),
    }  # fmt: skip
    call = asyncio.create_task(app(scope, receive, send))
    await scripted.called.wait()
    hang_up.set()
    await asyncio.wait_for(call, 5)
    assert scripted.cancelled == 1 and scripted.in_flight == 0
    assert sent[0]["status"] == 499
    registry = app.state.metrics.registry
    assert registry.get_sample_value("dgemma_decisions_cancelled_total") == 1
    assert registry.get_sample_value("dgemma_admission_units_in_use") == 0, "the slot is free again"


async def test_past_the_deadline_the_line_is_turned_away_and_a_stated_timeout_cuts_the_reads(
    make_app: AppFactory, scripted: ScriptedEngine
) -> None:
    """The one being read, whose client stated 0.5 s, gets 503 then, its reads cancelled; the one
    waiting behind it (the default deadline, 0.5 s here) gets 429 before then: neither is answered
    after its client has given up."""
    app, gw = make_app(max_concurrent_decisions=1, decision_deadline_s=0.5)
    scripted.hold = asyncio.Event()  # the engine never answers
    body = decision(NOUL, read_policy={"mode": "single"})
    loop = asyncio.get_running_loop()
    started = loop.time()
    first = asyncio.create_task(gw.post("/v1/systemone", json=body, headers={TIMEOUT_HEADER: "0.5"}))
    await scripted.called.wait()
    second = await gw.post("/v1/systemone", json=body)
    answered = await first
    assert (answered.status_code, second.status_code) == (503, 429), (answered.text, second.text)
    assert loop.time() - started < 2.0
    assert "0.5 s the client waits" in answered.json()["detail"] and answered.headers["retry-after"] == "2"
    assert "deadline" in second.json()["detail"] and second.headers["retry-after"] == "2"
    assert scripted.cancelled == 1 and scripted.in_flight == 0
    registry = app.state.metrics.registry
    assert registry.get_sample_value("dgemma_decisions_timed_out_total") == 1
    assert registry.get_sample_value("dgemma_decisions_shed_total", {"reason": "deadline"}) == 1
    assert registry.get_sample_value("dgemma_admission_units_in_use") == 0, "the slot is free again"


async def test_a_client_that_states_its_timeout_is_answered_by_then(
    make_app: AppFactory, scripted: ScriptedEngine
) -> None:
    """`X-Request-Timeout` replaces the default deadline, shorter or longer; the kit's Jev client
    sends its own timeout less 0.5 s, so a decision the engine cannot finish in time ends in a retry
    hint before the client gives up, not in a hang. Without it, the read is never cut: an SDK user
    may wait longer than the SDK's default."""
    app, gw = make_app()  # the default deadline, 9.5 s
    scripted.hold = asyncio.Event()  # the engine never answers
    body = decision(NOUL, read_policy={"mode": "single"})
    loop = asyncio.get_running_loop()
    started = loop.time()
    r = await gw.post("/v1/systemone", json=body, headers={TIMEOUT_HEADER: "0.3"})
    assert r.status_code == 503 and "0.3 s the client waits" in r.json()["detail"], r.text
    assert loop.time() - started < 2.0
    async with JevClient("http://gw", timeout_s=0.9, transport=httpx.ASGITransport(app=app)) as client:
        started = loop.time()
        with pytest.raises(EngineUnavailable, match=r"0\.4 s the client waits"):  # its 0.9 s, less 0.5
            await client.decide(body)
        assert loop.time() - started < 0.9, "answered before the client's own timeout"
    scripted.hold.set()
    scripted.delay_s = 0.2
    app, gw = make_app(decision_deadline_s=0.1)
    r = await gw.post("/v1/systemone", json=body, headers={TIMEOUT_HEADER: "5"})
    assert r.status_code == 200, r.text
    assert (await gw.post("/v1/systemone", json=body)).status_code == 200, "stated none: not cut"


@pytest.mark.parametrize("stated", ["soon", "0", "-1", "nan", "inf", "3601", ""])
async def test_a_timeout_that_is_not_seconds_is_a_clear_400(gw: httpx.AsyncClient, stated: str) -> None:
    r = await gw.post("/v1/systemone", json=decision(NOUL), headers={TIMEOUT_HEADER: stated})
    assert r.status_code == 400 and "X-Request-Timeout must be the seconds" in r.json()["detail"], r.text


def test_a_real_server_cancels_when_the_sdk_times_out() -> None:
    """uvicorn notices the closed connection; the decision stops reading."""
    engine = ScriptedEngine(delay_s=30)
    app = create_app(gateway_settings(), engine=engine)
    with serving(app) as url:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{url}/v1/systemone", json=decision(NOUL), timeout=3)  # the engine takes 30 s
        registry = app.state.metrics.registry
        assert wait_until(
            lambda: registry.get_sample_value("dgemma_decisions_cancelled_total"), 5, interval_s=0.05
        )
        assert engine.cancelled == 1 and len(engine.calls) == 1
