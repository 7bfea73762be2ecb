"""Decisions on the real engine: determinism, probability arithmetic, the read policy, usage.

Expected values are computed by hand from reads sent straight to vLLM's native endpoint, so these
tests check the gateway's arithmetic and policy, not any "correct" answer (the weights are random).
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.helpers.gateway import ALERT_QUESTIONS, decision

pytestmark = [pytest.mark.integration, pytest.mark.engine]
STATE = "Disk usage at 97% on db-1"


def _engine_read(engine: httpx.Client, question: dict[str, Any], state: str = STATE) -> dict[str, Any]:
    r = engine.post(
        "/v1/systemone", json={"model": _served(engine), "state": state, "questions": {"q": question}}
    )
    r.raise_for_status()
    return dict(r.json())


def _served(engine: httpx.Client) -> str:
    """The engine's served model name (the local stack serves the toy or the random model)."""
    return str(engine.get("/v1/models").json()["data"][0]["id"])


def _decide(client: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    r = client.post("/v1/systemone", json=body)
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_same_request_same_answer_sequential_and_concurrent(client: httpx.Client) -> None:
    body = decision(ALERT_QUESTIONS, read_policy={"mode": "debias", "debias_reads": 3})
    first = _decide(client, body)
    assert _decide(client, body)["answers"] == first["answers"]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: _decide(client, body), range(4)))
    for r in results:
        assert r["answers"] == first["answers"]
        assert r["usage"] == first["usage"]


@pytest.mark.parametrize("mode", ["single", "adaptive", "debias"])
def test_probabilities_sum_to_one(client: httpx.Client, mode: str) -> None:
    questions = {
        **ALERT_QUESTIONS,
        "many": {"type": "choice", "criteria": {f"o{i}": None for i in range(60)}},
    }
    answers = _decide(client, decision(questions, read_policy={"mode": mode}))["answers"]
    for name in ("team", "severity", "many"):
        probs = answers[name]["probabilities"]
        assert math.isclose(sum(probs.values()), 1.0, abs_tol=1e-6), name
        assert all(0.0 <= p <= 1.0 for p in probs.values())
    assert 0.0 <= answers["page"]["noul"] <= 1.0


def test_reread_policy_triggers_exactly_above_threshold(client: httpx.Client) -> None:
    first = _decide(client, decision(ALERT_QUESTIONS, read_policy={"mode": "single"}))["diagnostics"]
    entropies = sorted({d["first_read_entropy"] for d in first.values()})
    assert len(entropies) == 3, "need three distinct entropies to place a threshold between them"
    threshold = (entropies[0] + entropies[1]) / 2
    policy = {"mode": "adaptive", "reread_entropy": threshold, "extra_reads": 2}
    diags = _decide(client, decision(ALERT_QUESTIONS, read_policy=policy))["diagnostics"]
    for name, d in diags.items():
        assert d["first_read_entropy"] == first[name]["first_read_entropy"]
        expected = 3 if d["first_read_entropy"] > threshold else 1
        assert d["reads"] == expected, (name, d, threshold)
    # Bounds: a threshold of 1 never re-reads (normalised entropy <= 1); 0 re-reads everything.
    never = _decide(client, decision(ALERT_QUESTIONS, read_policy={**policy, "reread_entropy": 1.0}))
    assert {d["reads"] for d in never["diagnostics"].values()} == {1}
    always = _decide(client, decision(ALERT_QUESTIONS, read_policy={**policy, "reread_entropy": 0.0}))
    assert {d["reads"] for d in always["diagnostics"].values()} == {3}


def test_debias_average_matches_hand_computed_reads(client: httpx.Client, engine: httpx.Client) -> None:
    questions: dict[str, dict[str, Any]] = {
        "team": {"type": "choice", "criteria": {"db": None, "network": "DNS", "app": None}},
        "page": {"type": "noul", "instructions": "Page?", "criteria": {"true": "outage"}},
        "severity": {"type": "score", "criteria": ["low", "medium", "high"]},
    }
    got = _decide(client, decision(questions, read_policy={"mode": "debias", "debias_reads": 2}))

    # choice: debias reads the canonical order (by name) and its reverse, averaged in request order
    a = _engine_read(engine, {"type": "choice", "criteria": {"app": None, "db": None, "network": "DNS"}})
    a = a["answers"]["q"]["probabilities"]
    b = _engine_read(engine, {"type": "choice", "criteria": {"network": "DNS", "db": None, "app": None}})
    b = b["answers"]["q"]["probabilities"]
    for o in ("db", "network", "app"):
        assert got["answers"]["team"]["probabilities"][o] == pytest.approx((a[o] + b[o]) / 2, abs=1e-6)

    # noul: vLLM's native yes/no read, then yes/no as lettered options in the other order
    n0 = _engine_read(engine, questions["page"])["answers"]["q"]["probabilities"]["yes"]
    n1 = _engine_read(
        engine, {"type": "choice", "instructions": "Page?", "criteria": {"no": None, "yes": "outage"}}
    )["answers"]["q"]["probabilities"]["yes"]
    assert got["answers"]["page"]["noul"] == pytest.approx((n0 + n1) / 2, abs=1e-6)

    # score: the levels' canonical order (by text: high, low, medium) and its reverse, mapped back
    s0 = _engine_read(engine, {"type": "score", "criteria": ["high", "low", "medium"]})["answers"]["q"]
    s1 = _engine_read(engine, {"type": "score", "criteria": ["medium", "low", "high"]})["answers"]["q"]
    s0p, s1p = s0["probabilities"], s1["probabilities"]
    expected = [(s0p["1"] + s1p["1"]) / 2, (s0p["2"] + s1p["0"]) / 2, (s0p["0"] + s1p["2"]) / 2]
    probs = got["answers"]["severity"]["probabilities"]
    assert [probs[k] for k in ("0", "1", "2")] == pytest.approx(expected, abs=1e-6)
    assert got["answers"]["severity"]["score"] == pytest.approx(expected[1] + 2 * expected[2], abs=1e-6)

    # diagnostics: standard error of the top probability over the two reads, and agreement
    top = max(("db", "network", "app"), key=got["answers"]["team"]["probabilities"].__getitem__)
    se = abs(a[top] - b[top]) / 2  # stdev of two values / sqrt(2)
    d = got["diagnostics"]["team"]
    assert d["reads"] == 2 and d["stderr"] == pytest.approx(se, abs=1e-6)
    agree = [max(a, key=a.__getitem__) == top, max(b, key=b.__getitem__) == top]
    assert d["agreement"] == sum(agree) / 2


def test_large_choice_is_read_hierarchically(client: httpx.Client, engine: httpx.Client) -> None:
    names = [f"svc-{i:02d}" for i in range(40)]
    question = {"type": "choice", "criteria": dict.fromkeys(names)}
    got = _decide(client, decision({"svc": question}, read_policy={"mode": "single"}))
    # By hand: two chunks of 20 in request order, the top 13 of each (26 // 2) meet in a final read.
    within, reps = {}, []
    for chunk in (names[:20], names[20:]):
        p = _engine_read(engine, {"type": "choice", "criteria": dict.fromkeys(chunk)})["answers"]["q"]
        within.update(p["probabilities"])
        ranked = sorted(chunk, key=lambda n: (-p["probabilities"][n], chunk.index(n)))[:13]
        reps.append([n for n in chunk if n in ranked])
    final = _engine_read(engine, {"type": "choice", "criteria": dict.fromkeys(reps[0] + reps[1])})
    fp = final["answers"]["q"]["probabilities"]
    shares = [sum(fp[n] for n in r) for r in reps]
    expected = {n: (shares[0] if i < 20 else shares[1]) * within[n] for i, n in enumerate(names)}
    assert got["answers"]["svc"]["probabilities"] == pytest.approx(expected, abs=1e-6)
    assert got["diagnostics"]["svc"]["engine_reads"] == 3


def test_usage_counts_the_state_once(client: httpx.Client, engine: httpx.Client) -> None:
    state = "Replication lag on db-1 is 45 s and growing; WAL volume at 91 %. " * 12
    questions = {f"q{i}": {"type": "noul", "instructions": f"Is symptom {i} present?"} for i in range(10)}
    got = _decide(client, decision(questions, state=state, read_policy={"mode": "single"}))["usage"]
    raw = engine.post(
        "/v1/systemone", json={"model": _served(engine), "state": state, "questions": questions}
    ).json()["usage"]
    state_tokens = engine.post(
        "/tokenize", json={"model": _served(engine), "prompt": state, "add_special_tokens": False}
    ).json()["count"]
    assert state_tokens > 300
    assert got["input_tokens"] == raw["input_tokens"] - 9 * state_tokens
    assert got["output_tokens"] == raw["output_tokens"]
    assert isinstance(got["input_tokens"], int) and isinstance(got["output_tokens"], int)


def test_answers_keep_request_order_and_names(client: httpx.Client) -> None:
    questions = {
        "zeta: a name with a colon\nand a newline": {"type": "noul", "instructions": "?"},
        "αλφα 🚨": {"type": "choice", "criteria": {"🔥 fire": None, '{"json": "name"}': None}},
        "": {"type": "score", "criteria": ["a", "b"]},
    }
    got = _decide(client, decision(questions))
    assert list(got["answers"]) == list(questions)
    assert list(got["answers"]["αλφα 🚨"]["probabilities"]) == ["🔥 fire", '{"json": "name"}']


def test_the_supervisors_warm_up_decision_is_one_the_engine_answers(engine: httpx.Client) -> None:
    """The GPU start's warm-up (deploy/runtime/supervisor.py) asks vLLM's native endpoint directly:
    its body must be one the real engine reads, one answer per question type."""
    from deploy.runtime.supervisor import WARMUP_DECISION

    r = engine.post("/v1/systemone", json={"model": _served(engine), **WARMUP_DECISION})
    assert r.status_code == 200, r.text
    assert set(r.json()["answers"]) == set(WARMUP_DECISION["questions"])
