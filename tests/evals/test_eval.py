"""`dgemma eval`'s math against hand-computed values, its data format's errors, and the shipped data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deploy.devstack.stack import toy_task as toy_task_module
from evals import data
from evals.errors import EvalDataError
from evals.metrics import Outcome, accuracy, baseline, brier, ece, flip_rate, reliability
from evals.run import probabilities

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
toy_task = toy_task_module()


def test_accuracy_brier_and_ece_match_hand_computation() -> None:
    outcomes = [
        Outcome((0.9, 0.1), 0),  # right, confidence 0.9
        Outcome((0.8, 0.2), 1),  # wrong, confidence 0.8
        Outcome((0.2, 0.5, 0.3), 1),  # right, confidence 0.5
        Outcome((0.95, 0.05), 0),  # right, confidence 0.95
    ]
    assert accuracy(outcomes) == 0.75
    # (0.01 + 0.01) + (0.64 + 0.64) + (0.04 + 0.25 + 0.09) + (0.0025 + 0.0025), over 4
    assert brier(outcomes) == pytest.approx((0.02 + 1.28 + 0.38 + 0.005) / 4)
    # Bins: [0.5, 0.6) holds 0.5 (acc 1); [0.8, 0.9) holds 0.8 (acc 0); [0.9, 1] holds 0.9, 0.95 (acc 1).
    bins = {b.low: b for b in reliability(outcomes) if b.count}
    assert {k: b.count for k, b in bins.items()} == {0.5: 1, 0.8: 1, 0.9: 2}
    assert bins[0.9].confidence == pytest.approx(0.925)
    expected = (1 * abs(1 - 0.5) + 1 * abs(0 - 0.8) + 2 * abs(1 - 0.925)) / 4
    assert ece(outcomes) == pytest.approx(expected)


def test_a_calibrated_set_has_zero_ece_and_the_top_bin_is_closed() -> None:
    # Confidence 1.0 lands in the last bin, not an eleventh; 0.7 right 7 times out of 10: ECE 0.
    sure = [Outcome((1.0, 0.0), 0)] * 4
    seventy = [Outcome((0.7, 0.3), 0)] * 7 + [Outcome((0.7, 0.3), 1)] * 3
    assert len(reliability(sure)) == 10 and reliability(sure)[-1].count == 4
    assert ece(sure + seventy) == pytest.approx(0.0)


def test_flip_rate_and_baselines() -> None:
    assert flip_rate([(0, 0), (1, 2), (2, 2), (0, 1)]) == 0.5
    assert baseline(["db", "net", "app", "db"], [3] * 4) == 0.5  # the majority beats chance
    assert baseline(["db", "net", "app"], [3] * 3) == pytest.approx(1 / 3)
    assert baseline(["a", "b", "c", "d"], [2, 4, 2, 4]) == pytest.approx(0.375)  # chance per item


def test_reversed_score_answers_are_mapped_back_to_the_files_levels() -> None:
    scored = data.Scored("s", "score", ("0", "1", "2"), 2)
    answer = {"probabilities": {"0": 0.7, "1": 0.2, "2": 0.1}}  # sent reversed: "0" was level 2
    assert probabilities(scored, answer, reversed_order=True) == (0.1, 0.2, 0.7)
    choice = data.Scored("c", "choice", ("db", "net"), 0)
    assert probabilities(choice, {"probabilities": {"net": 0.4, "db": 0.6}}, reversed_order=True) == (
        0.6,
        0.4,
    )
    assert probabilities(
        data.Scored("n", "noul", ("true", "false"), 0), {"noul": 0.25}, reversed_order=False
    ) == (
        0.25,
        0.75,
    )


def _line(**over: Any) -> str:
    item: dict[str, Any] = {
        "request": {
            "state": "disk full on db-1",
            "questions": {
                "team": {"type": "choice", "criteria": {"db": None, "net": None}},
                "sev": {"type": "score", "criteria": ["low", "high"]},
                "page": {"type": "noul", "instructions": "Page?"},
            },
        },
        "expected": {"team": "db", "sev": 1, "page": True},
    }
    item.update(over)
    return json.dumps(item)


def test_an_item_parses_and_reverses_its_options() -> None:
    item = data.parse_line(1, _line())
    assert [(s.name, s.kind, s.truth) for s in item.scored] == [
        ("team", "choice", 0),
        ("sev", "score", 1),
        ("page", "noul", 0),
    ]
    body = item.body("m", "debias", reverse=True)
    assert body["model"] == "m" and body["read_policy"] == {"mode": "debias"}
    assert list(body["questions"]["team"]["criteria"]) == ["net", "db"]
    assert body["questions"]["sev"]["criteria"] == ["high", "low"]
    assert item.body("m", None)["questions"] == item.request["questions"]  # the original is untouched
    with_null = data.parse_line(2, _line(request={**json.loads(_line())["request"], "read_policy": None}))
    assert with_null.body("m", "single")["read_policy"] == {"mode": "single"}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "line 3: not JSON"),
        (
            _line(expected={"team": "dba"}),
            "line 3: expected.team: 'dba' is not one of the options ['db', 'net']",
        ),
        (_line(expected={"sev": 2}), "line 3: expected.sev: a score's expected answer is a level index 0..1"),
        (_line(expected={"sev": True}), "a score's expected answer is a level index"),
        (_line(expected={"page": "yes"}), "line 3: expected.page: a noul's expected answer is true or false"),
        (_line(expected={"owner": "db"}), "line 3: expected.owner: the request has no question 'owner'"),
        (_line(expected={}), '"expected" a non-empty object'),
        (_line(request={"state": "x", "questions": {}}), "line 3: request.questions:"),
        (json.dumps({"request": {}, "expected": {}, "extra": 1}), 'expected an object with "request"'),
    ],
)
def test_bad_lines_are_refused_naming_the_line_and_field(line: str, message: str) -> None:
    with pytest.raises(EvalDataError) as caught:
        data.parse_line(3, line)
    assert message in str(caught.value)


def test_load_skips_blank_lines_honours_the_limit_and_refuses_an_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(_line() + "\n\n" + _line() + "\n" + _line() + "\n")
    assert [i.line for i in data.load(path)] == [1, 3, 4]
    assert len(data.load(path, limit=2)) == 2
    path.write_text("\n")
    with pytest.raises(EvalDataError, match="holds no items"):
        data.load(path)


def test_the_shipped_data_loads_and_the_toy_test_split_is_its_seeds_output() -> None:
    assert len(data.load(ROOT / "evals" / "data" / "example.jsonl")) >= 3
    shipped = (ROOT / "evals" / "data" / "toy-alerts-test.jsonl").read_text()
    assert shipped == toy_task.eval_jsonl("test", 300)
    items = data.load(ROOT / "evals" / "data" / "toy-alerts-test.jsonl")
    assert len(items) == 300
    # Held out: no test alert text is among the dev alerts or the first 20,000 training examples.
    train = toy_task.train_stream(0)
    seen = {next(train)[0] for _ in range(20_000)} | {a["state"] for a in toy_task.alerts("dev", 300)}
    overlap = sum(i.request["state"] in seen for i in items)
    assert overlap == 0, f"{overlap} test alerts also occur in training or dev"


def test_the_shipped_toy_model_verifies_and_a_changed_byte_is_refused(tmp_path: Path) -> None:
    import shutil

    from app.core.config import ConfigError
    from deploy.devstack.stack import verify_toy_model
    from deploy.models import TOY_DIR

    assert verify_toy_model() == TOY_DIR
    log = json.loads((TOY_DIR / "train_log.json").read_text())
    assert log["train_seconds"] <= 1800 and log["threads"] == 2  # the budget: 30 min, 2 cores
    copy = tmp_path / "toy"
    shutil.copytree(TOY_DIR, copy)
    weights = bytearray((copy / "model.safetensors").read_bytes())
    weights[-1] ^= 1
    (copy / "model.safetensors").write_bytes(bytes(weights))
    with pytest.raises(ConfigError, match=r"model.safetensors: sha256 differs from the manifest"):
        verify_toy_model(copy)


def test_toy_data_writes_a_split_as_eval_jsonl(capsys: pytest.CaptureFixture[str]) -> None:
    from deploy.cli import main

    assert main(["toy", "data", "--split", "dev", "-n", "5"]) == 0
    out = capsys.readouterr().out
    assert out == toy_task.eval_jsonl("dev", 5)
    assert [json.loads(line)["request"]["state"] for line in out.splitlines()] == [
        a["state"] for a in toy_task.alerts("dev", 5)
    ]
    assert main(["toy", "data", "-n", "0"]) == 2
