"""Temperature scaling: the transform's properties, and the fit recovering a known temperature."""

from __future__ import annotations

import math
import random

import pytest

from app.decisions.calibration import T_MAX, fit_temperature, nll, scaled


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
