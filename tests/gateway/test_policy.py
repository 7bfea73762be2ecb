"""Read-policy math, checked against hand-computed values."""

from __future__ import annotations

import math

import pytest

from app.gateway.decisions.policy import combine, normalized_entropy
from app.jev.wire import ReadPolicy

pytestmark = pytest.mark.unit


def test_normalized_entropy_bounds() -> None:
    assert normalized_entropy([1.0, 0.0, 0.0]) == 0.0
    assert normalized_entropy([0.25] * 4) == pytest.approx(1.0)
    assert normalized_entropy([1.0]) == 0.0
    p = [0.7, 0.2, 0.1]
    assert normalized_entropy(p) == pytest.approx(-sum(x * math.log(x) for x in p) / math.log(3))


def test_combine_averages_in_request_order_with_stderr_and_agreement() -> None:
    reads = [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.5, 0.4, 0.1]]
    c = combine(reads, [0.9, 0.8, 0.7])
    assert c.probs == pytest.approx([13 / 30, 12 / 30, 5 / 30])
    assert c.top == 0
    tops = [0.6, 0.2, 0.5]
    mean = sum(tops) / 3
    sd = math.sqrt(sum((t - mean) ** 2 for t in tops) / 2)
    assert c.stderr == pytest.approx(sd / math.sqrt(3))
    assert c.agreement == pytest.approx(2 / 3)  # the second read's argmax is option 1
    assert c.label_mass == pytest.approx(0.8)
    assert c.confidence == pytest.approx(13 / 30 * 0.8)
    assert sum(c.probs) == pytest.approx(1.0, abs=1e-12)


def test_single_read_has_no_stderr() -> None:
    c = combine([[0.1, 0.9]], [1.0])
    assert c.stderr is None and c.agreement == 1.0 and c.reads == 1


def test_ties_pick_the_first_option() -> None:
    assert combine([[0.5, 0.5]], [1.0]).top == 0


@pytest.mark.parametrize(
    ("mode", "entropy", "max_orders", "first", "extra"),
    [
        ("single", 0.99, 6, 1, 0),
        ("adaptive", 0.95, 6, 1, 2),  # above the 0.9 threshold: two more orders
        ("adaptive", 0.90, 6, 1, 0),  # "exceeds" is strict
        ("adaptive", 0.95, 2, 1, 1),  # a 2-option choice has only one other order
        ("adaptive", 0.95, 1, 1, 0),  # one option: nothing else to read
        ("debias", 0.10, 6, 3, 0),
        ("debias", 0.10, 2, 2, 0),
    ],
)
def test_policy_orders(mode: str, entropy: float, max_orders: int, first: int, extra: int) -> None:
    policy = ReadPolicy(mode=mode, reread_entropy=0.9, extra_reads=2, debias_reads=3)
    assert policy.first_orders(max_orders) == first
    assert policy.extra_orders(entropy, max_orders) == extra


def test_a_request_overrides_only_the_fields_it_sets() -> None:
    deployment = ReadPolicy(mode="debias", debias_reads=5)
    override = ReadPolicy.model_validate({"extra_reads": 4})
    assert deployment.overridden(override) == ReadPolicy(mode="debias", debias_reads=5, extra_reads=4)
    assert deployment.overridden(ReadPolicy.model_validate({})) is deployment
    assert deployment.overridden(None) is deployment


@pytest.mark.parametrize(
    ("mode", "max_orders", "most"),
    [("single", 6, 1), ("adaptive", 6, 3), ("adaptive", 2, 2), ("debias", 6, 3), ("debias", 2, 2)],
)
def test_most_orders_bounds_what_the_policy_can_read(mode: str, max_orders: int, most: int) -> None:
    policy = ReadPolicy(mode=mode, extra_reads=2, debias_reads=3)
    assert policy.most_orders(max_orders) == most
    # never below what the two rounds can actually take
    assert most >= policy.first_orders(max_orders) + policy.extra_orders(1.0, max_orders)
