"""Temperature scaling of label probabilities: the math `dgemma calibrate` fits and the gateway
applies (the file that carries the temperatures: calibration_file.py).

A reading's probabilities are a softmax over the labels' log-probabilities, so scaling those by 1/T
is `p_i ** (1/T)` renormalised: T > 1 softens an over-confident model, T < 1 sharpens it, T = 1
changes nothing, and the order of the options (hence the answer) never changes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

FLOOR = 1e-12  # a label the engine gave 0 still has a log-probability
T_MIN, T_MAX = 0.05, 20.0

Sample = tuple[Sequence[float], int]  # (probabilities over the options, index of the right one)


def scaled(probs: Sequence[float], temperature: float) -> list[float]:
    """`probs` at temperature T (computed in log space, so tiny probabilities do not underflow)."""
    logs = [math.log(max(p, FLOOR)) / temperature for p in probs]
    top = max(logs)
    weights = [math.exp(x - top) for x in logs]
    total = sum(weights)
    return [w / total for w in weights]


def nll(samples: Sequence[Sample], temperature: float) -> float:
    """Mean negative log-likelihood of the right options at temperature T."""
    return -sum(math.log(max(scaled(p, temperature)[y], FLOOR)) for p, y in samples) / len(samples)


def fit_temperature(samples: Sequence[Sample], iterations: int = 80) -> float:
    """The T in [T_MIN, T_MAX] that minimises the NLL (convex in 1/T: golden-section on log T)."""
    if not samples:
        raise ValueError("no samples to fit a temperature on")
    lo, hi = math.log(T_MIN), math.log(T_MAX)
    ratio = (math.sqrt(5) - 1) / 2
    a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    fa, fb = nll(samples, math.exp(a)), nll(samples, math.exp(b))
    for _ in range(iterations):
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - ratio * (hi - lo)
            fa = nll(samples, math.exp(a))
        else:
            lo, a, fa = a, b, fb
            b = lo + ratio * (hi - lo)
            fb = nll(samples, math.exp(b))
    return math.exp((lo + hi) / 2)
