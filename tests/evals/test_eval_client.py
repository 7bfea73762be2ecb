"""`dgemma eval` against the real gateway app over the scripted engine: the request fan-out per
policy and order, the reduction, the outputs and the exit codes. The stand-in's numbers mean
nothing; tests/deploy/models/test_toy_model.py scores the trained toy on the real engine."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.gateway.main import create_app
from deploy.cli import main
from evals import data, report
from evals.run import evaluate
from tests.helpers.gateway import ScriptedEngine, gateway_settings, serving

pytestmark = pytest.mark.inprocess

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "evals" / "data" / "example.jsonl"


@pytest.fixture(scope="module")
def gateway() -> Iterator[tuple[str, ScriptedEngine]]:
    engine = ScriptedEngine()
    with serving(create_app(gateway_settings(), engine=engine)) as url:
        yield url, engine


def test_every_item_is_asked_per_policy_and_order_and_reduced_per_question(
    gateway: tuple[str, ScriptedEngine], tmp_path: Path
) -> None:
    url, engine = gateway
    items = data.load(EXAMPLE)
    before = len(engine.calls)
    result = evaluate(url, items, ("single", "debias"), data="example", headers={"Authorization": "Bearer x"})
    bodies = engine.calls[before:]
    assert result.model == "dgemma" and result.items == len(items)
    # single: one read per question; debias: 3 per question (a noul's 3 readings too); both orders.
    questions = sum(len(i.request["questions"]) for i in items)
    assert sum(len(b["questions"]) for b in bodies) == 2 * questions * (1 + 3)
    rows = {(r.policy, r.question): r for r in result.rows}
    assert set(rows) == {(p, q) for p in ("single", "debias") for q in ("page", "team", "severity", "ticket")}
    assert rows[("single", "team")].items == 3 and rows[("single", "ticket")].items == 1
    assert rows[("debias", "team")].reads == 3 and rows[("single", "team")].reads == 1
    # The stand-in is order-sensitive like a model; debias reads canonical orders, so it cannot flip.
    assert rows[("debias", "team")].flip_rate == 0 and rows[("debias", "severity")].flip_rate == 0
    assert rows[("single", "page")].flip_rate is None
    for row in result.rows:
        assert 0 <= row.accuracy <= 1 and 0 <= row.ece <= 1 and 0 <= row.brier <= 2
        assert row.baseline >= 1 / 3
    data_path, plot = report.write(result, tmp_path)
    assert json.loads(data_path.read_text())["rows"][0]["bins"][0].keys() >= {"low", "count", "accuracy"}
    assert plot.read_bytes()[:4] == b"\x89PNG"


def test_the_command_exits_1_when_the_service_cannot_be_reached(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["eval", "--data", str(EXAMPLE), "--url", "http://127.0.0.1:9", "--out", str(tmp_path)])
    assert code == 1
    assert "eval: http://127.0.0.1:9 cannot be reached" in capsys.readouterr().err


def test_a_refused_decision_stops_the_eval_naming_the_item(
    gateway: tuple[str, ScriptedEngine], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = gateway
    bad = tmp_path / "d.jsonl"
    item = {"request": {"state": "x", "questions": {"q": {"type": "noul"}}}, "expected": {"q": True}}
    bad.write_text(json.dumps(item) + "\n")
    code = main(["eval", "--data", str(bad), "--url", url, "--out", str(tmp_path)])
    assert code == 1
    err = capsys.readouterr().err
    assert "line 1 (" in err and "order): the service answered 400" in err
    assert "Noul question must have criteria or instructions" in err
