"""Temperature scaling: the transform's properties, and the fit recovering a known temperature."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from app.core.config import ConfigError
from app.gateway.decisions.calibration import T_MAX, fit_temperature, nll, scaled
from app.gateway.decisions.calibration_file import Calibration, Fit
from app.gateway.decisions.policy import combine
from app.jev.wire import ReadPolicy
from evals.calibrate import Answer, answers, figures, fit, is_dev
from evals.data import Item, Scored
from evals.errors import EvalError

pytestmark = pytest.mark.unit


def test_scaling_keeps_the_order_and_sums_to_one() -> None:
    probs = [0.7, 0.2, 0.1]
    assert scaled(probs, 1.0) == pytest.approx(probs)
    soft, sharp = scaled(probs, 2.0), scaled(probs, 0.5)
    # By hand: T = 2 is the normalised square roots, T = 0.5 the normalised squares.
    roots = [math.sqrt(p) for p in probs]
    assert soft == pytest.approx([r / sum(roots) for r in roots])
    assert sharp == pytest.approx([p * p / sum(q * q for q in probs) for p in probs])
    for out in (soft, sharp):
        assert sum(out) == pytest.approx(1.0)
        assert sorted(range(3), key=out.__getitem__) == [2, 1, 0]
    assert scaled([1.0, 0.0], 2.0)[1] > 0  # a zero is floored, not a log error


def _synthetic(temperature: float, n: int, seed: int) -> list[tuple[list[float], int]]:
    """What an over- or under-confident model reports: labels drawn from softmax(z), reported as
    softmax(z / temperature); the fit should find `temperature` back."""
    rng = random.Random(seed)
    samples = []
    for _ in range(n):
        z = [rng.gauss(0, 2.5) for _ in range(3)]
        true = [math.exp(v) for v in z]
        label = rng.choices(range(3), weights=true)[0]
        samples.append((scaled([t / sum(true) for t in true], 1 / temperature), label))
    return samples


@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.5])
def test_the_fit_recovers_a_known_temperature(temperature: float) -> None:
    samples = _synthetic(temperature, 4000, seed=int(temperature * 10))
    fitted = fit_temperature(samples)
    assert fitted == pytest.approx(temperature, rel=0.1)
    assert nll(samples, fitted) <= nll(samples, 1.0) + 1e-9  # never worse than leaving it alone


def test_the_fit_stays_in_bounds_and_refuses_nothing_to_fit() -> None:
    always_wrong = [([0.99, 0.01], 1)] * 50
    assert fit_temperature(always_wrong) == pytest.approx(T_MAX, rel=0.01)
    with pytest.raises(ValueError, match="no samples"):
        fit_temperature([])


# -- the calibration file ------------------------------------------------------------------------


def _fit(kind: Any, t: float) -> Fit:
    return Fit(type=kind, temperature=t, samples=60, nll_before=1.0, nll_after=0.9)


def _calibration(**overrides: object) -> Calibration:
    values: dict[str, object] = {
        "model": "toy",
        "read_policy": ReadPolicy(mode="single"),
        "by_name": {"team": _fit("choice", 2.0)},
        "by_type": {"choice": _fit("choice", 1.5), "noul": _fit("noul", 0.7)},
        "data": {"path": "x.jsonl"},
        **overrides,
    }
    return Calibration.model_validate(values)


def test_a_question_gets_its_own_fit_else_its_types_else_none() -> None:
    cal = _calibration()
    assert cal.temperature("team", "choice") == 2.0
    assert cal.temperature("owner", "choice") == 1.5  # no fit of its own: the type's
    assert cal.temperature("team", "noul") == 0.7  # a "team" of another type is another question
    assert cal.temperature("severity", "score") is None  # nothing fitted for scores


def test_the_gateway_refuses_a_file_of_another_model_or_policy(tmp_path: Path) -> None:
    path = tmp_path / "calibration.json"
    path.write_text(_calibration().model_dump_json())
    single = ReadPolicy(mode="single")
    assert Calibration.load(path, served_model="toy", read_policy=single).by_name["team"].temperature == 2.0
    with pytest.raises(ConfigError, match="fitted on model 'toy'; this gateway serves 'dgemma'"):
        Calibration.load(path, served_model="dgemma", read_policy=single)
    with pytest.raises(
        ConfigError, match=r"fitted under the read policy .*'mode': 'single'.*'mode': 'adaptive'"
    ):
        Calibration.load(path, served_model="toy", read_policy=ReadPolicy())
    # Same mode, another knob: answers read another way, so another fit.
    with pytest.raises(ConfigError, match="read policy"):
        Calibration.load(path, served_model="toy", read_policy=ReadPolicy(mode="single", extra_reads=3))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "cannot be read"),
        ('{"model": "toy"}', "read_policy: Field required"),
        ('{"format": "other/9"}', "format: Input should be 'dgemma-calibration/1'"),
    ],
)
def test_a_broken_file_is_refused_naming_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "calibration.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        Calibration.load(path, served_model="toy", read_policy=ReadPolicy())
    bad = _calibration().model_dump()
    bad["by_type"]["noul"]["temperature"] = 99.0
    path.write_text(json.dumps(bad))
    with pytest.raises(ConfigError, match=r"by_type\.noul\.temperature"):
        Calibration.load(path, served_model="toy", read_policy=ReadPolicy(mode="single"))


def test_combining_with_a_temperature_scales_the_average_and_keeps_the_answer() -> None:
    reads = [[0.6, 0.3, 0.1], [0.4, 0.4, 0.2]]
    raw, cal = combine(reads, [1.0, 0.9]), combine(reads, [1.0, 0.9], 2.0)
    assert cal.probs == pytest.approx(scaled(raw.probs, 2.0))
    assert cal.top == raw.top == 0 and cal.agreement == raw.agreement and cal.reads == 2
    assert cal.entropy > raw.entropy  # T > 1 softens
    assert cal.confidence == pytest.approx(cal.probs[0] * 0.95)


# -- dgemma calibrate's split, fit and figures ---------------------------------------------------


def _item(line: int, state: str) -> Item:
    request = {"state": state, "questions": {"q": {"type": "noul", "instructions": "?"}}}
    return Item(line, request, (Scored("q", "noul", ("true", "false"), 0),))


def test_the_split_is_a_function_of_the_request_alone() -> None:
    items = [_item(i, f"alert {i}") for i in range(400)]
    dev = {it.request["state"] for it in items if is_dev(it, 0.5)}
    moved = [_item(1000 + i, it.request["state"]) for i, it in enumerate(reversed(items))]
    assert {it.request["state"] for it in moved if is_dev(it, 0.5)} == dev  # order and line do not matter
    assert 160 < len(dev) < 240  # about half
    assert {it.request["state"] for it in items if is_dev(it, 0.3)} < dev  # a smaller share is a subset


def _answers(temperature: float, n: int, seed: int, *, dev: bool, name: str = "q") -> list[Answer]:
    return [Answer(name, "choice", tuple(p), y, dev) for p, y in _synthetic(temperature, n, seed)]


def test_the_fit_sees_only_the_dev_split() -> None:
    dev = _answers(2.5, 1500, 1, dev=True)
    names, types = fit([*dev, *_answers(2.5, 500, 2, dev=False)], min_samples=50)
    # Whatever the test split holds, the fit does not move.
    again, _ = fit([*dev, *_answers(0.3, 500, 3, dev=False)], min_samples=50)
    assert names["q"].temperature == again["q"].temperature
    assert names["q"].samples == 1500 and types["choice"].samples == 1500
    assert names["q"].temperature == pytest.approx(2.5, rel=0.15)
    assert names["q"].nll_after < names["q"].nll_before


def test_a_name_with_few_dev_answers_falls_back_to_its_type() -> None:
    answers = [*_answers(2.0, 800, 4, dev=True, name="big"), *_answers(2.0, 20, 5, dev=True, name="small")]
    names, types = fit(answers, min_samples=50)
    assert set(names) == {"big"} and types["choice"].samples == 820
    cal = _calibration(by_name=names, by_type=types)
    rows = {f.question: f for f in figures([*answers, *_answers(2.0, 300, 6, dev=False, name="small")], cal)}
    assert set(rows) == {"small"}  # only questions with test answers are measured
    small = rows["small"]
    assert small.scope == "type" and small.test == 300 and small.dev == 20
    assert small.after["accuracy"] == small.before["accuracy"]  # scaling never changes an answer
    assert small.after["ece"] < small.before["ece"] and small.after["nll"] < small.before["nll"]


def test_answers_already_calibrated_by_the_service_are_refused() -> None:
    item = _item(3, "x")
    response: dict[str, Any] = {
        "answers": {"q": {"type": "noul", "noul": 0.8}},
        "diagnostics": {"q": {"calibrated": True}},
    }
    with pytest.raises(EvalError, match="line 3: the service already applies a calibration file"):
        answers([item], [response], 0.5)
    response["diagnostics"]["q"]["calibrated"] = False
    assert answers([item], [response], 0.5)[0].probs == pytest.approx((0.8, 0.2))
