"""Read planning: rendering, option orders, chunks and the hierarchical combination."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from app.gateway.decisions.orders import option_order
from app.gateway.decisions.plan import (
    ChunkResult,
    Hierarchy,
    Read,
    Spec,
    chunks,
    combine_hierarchical,
    first_stage_reads,
    render,
)
from app.jev.wire import ChoiceQuestion, NoulQuestion, ScoreQuestion

pytestmark = pytest.mark.unit


def test_render_uses_json_not_python_repr() -> None:
    assert render("as is") == "as is"
    assert render({"a": None, "ü": [True]}) == '{"a": null, "ü": [true]}'
    assert render(None) is None


def test_orders_are_deterministic_distinct_and_start_with_request_then_reverse() -> None:
    assert option_order(4, 0) == (0, 1, 2, 3)
    assert option_order(4, 1) == (3, 2, 1, 0)
    orders = [option_order(4, k) for k in range(24)]
    assert len(set(orders)) == 24  # every permutation of 4, none repeated
    assert all(sorted(o) == [0, 1, 2, 3] for o in orders)
    assert option_order(40, 5) == option_order(40, 5)
    with pytest.raises(ValueError):
        option_order(2, 2)


def _sequences(spec: Spec, canonical: bool, orders: int = 3) -> list[list[str]]:
    """The option sequences the model is shown for orders 0..orders-1, by option identity."""
    text = spec.options if spec.kind == "choice" else spec.descriptions
    return [
        [str(text[o]) for o in first_stage_reads(0, spec, k, 26, canonical=canonical)[0].options]
        for k in range(orders)
    ]


@pytest.mark.parametrize(
    "question",
    [
        ChoiceQuestion(type="choice", criteria=dict.fromkeys(["network", "app", "database", "dns"])),
        ScoreQuestion(type="score", criteria=["low", "medium", "high", "critical"]),
    ],
)
def test_canonical_orders_do_not_depend_on_the_request_order(question: Any) -> None:
    spec = Spec.from_question("q", question)
    if isinstance(question, ChoiceQuestion):
        shuffled = question.model_copy(update={"criteria": dict(reversed(list(question.criteria.items())))})
    else:
        shuffled = question.model_copy(update={"criteria": list(reversed(question.criteria))})
    other = Spec.from_question("q", shuffled)
    assert _sequences(spec, True) == _sequences(other, True)
    assert _sequences(spec, True)[0] == sorted(_sequences(spec, True)[0])
    # Request-relative orders differ: that is what made `debias` flip before.
    assert _sequences(spec, False) != _sequences(other, False)


@pytest.mark.parametrize(
    ("n", "size", "expected"), [(40, 26, [20, 20]), (255, 26, [26] * 5 + [25] * 5), (26, 26, [26])]
)
def test_chunks_are_fewest_and_even(n: int, size: int, expected: list[int]) -> None:
    parts = chunks(tuple(range(n)), size)
    assert [len(p) for p in parts] == expected
    assert [o for p in parts for o in p] == list(range(n))


def test_hierarchical_combination_sums_to_one_and_matches_hand_computation() -> None:
    rng = random.Random(1)
    n = 60
    parts = chunks(tuple(range(n)), 26)
    results = []
    for part in parts:
        w = [rng.random() for _ in part]
        results.append(ChunkResult(part, [x / sum(w) for x in w], 0.5))
    tree = Hierarchy(results)
    reps = tree.representatives(26)
    assert [len(r) for r in reps] == [8, 8, 8]  # 26 // 3 per chunk
    for chunk, r in zip(results, reps, strict=True):
        best = sorted(chunk.options, key=lambda o: -chunk.probs[chunk.options.index(o)])[:8]
        assert sorted(r) == sorted(best)
    final_w = [rng.random() for _ in range(24)]
    final = dict(zip([o for r in reps for o in r], [x / sum(final_w) for x in final_w], strict=True))
    probs = combine_hierarchical(n, results, reps, final)
    assert math.isclose(sum(probs), 1.0, abs_tol=1e-12)
    share0 = sum(final[o] for o in reps[0])
    assert probs[3] == pytest.approx(share0 * results[0].probs[3])


def test_noul_reads_native_then_lettered_in_both_orders() -> None:
    spec = Spec.from_question(
        "p", NoulQuestion(type="noul", instructions="Page?", criteria={"true": "outage"})
    )
    (native,) = first_stage_reads(0, spec, 0, 26)
    assert native.engine_question(spec) == {
        "type": "noul",
        "instructions": "Page?",
        "criteria": {"true": "outage"},
    }
    (flipped,) = first_stage_reads(0, spec, 1, 26)
    q = flipped.engine_question(spec)
    assert q["type"] == "choice" and list(q["criteria"].items()) == [("no", None), ("yes", "outage")]
    assert flipped.probabilities(spec, {"probabilities": {"no": 0.3, "yes": 0.7}}) == [0.3, 0.7]
    assert spec.max_orders() == 3


def test_score_reads_reorder_levels_and_map_digits_back() -> None:
    spec = Spec.from_question("s", ScoreQuestion(type="score", criteria=["low", {"x": 1}, "high"]))
    read = Read(0, 1, option_order(3, 1))
    assert read.engine_question(spec)["criteria"] == ["high", '{"x": 1}', "low"]
    # vLLM keys a score's probabilities by the read position's digit
    assert read.probabilities(spec, {"probabilities": {"0": 0.5, "1": 0.3, "2": 0.2}}) == [0.5, 0.3, 0.2]
    assert spec.legend == ("low", {"x": 1}, "high")


def test_choice_descriptions_are_rendered() -> None:
    q = ChoiceQuestion(type="choice", instructions=["a", 1], criteria={"db": {"owns": "pg"}, "net": None})
    spec = Spec.from_question("c", q)
    assert spec.instructions == '["a", 1]'
    assert spec.descriptions == ('{"owns": "pg"}', None)
    assert spec.max_orders() == 2
    assert [first_stage_reads(0, spec, k, 26)[0].options for k in range(2)] == [(0, 1), (1, 0)]
