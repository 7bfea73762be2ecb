"""Read policy: the one model of its four knobs, and the math of entropy, re-reads and averaging."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from app.gateway.decisions.calibration import scaled


def normalized_entropy(probs: list[float]) -> float:
    """Shannon entropy divided by log(n): 0 when certain, 1 when uniform; 0 for a single option."""
    if len(probs) < 2:
        return 0.0
    h = -sum(p * math.log(p) for p in probs if p > 0.0)
    return min(1.0, max(0.0, h / math.log(len(probs))))


def argmax(values: list[float]) -> int:
    return max(range(len(values)), key=values.__getitem__)


@dataclass(frozen=True)
class Combined:
    probs: list[float]
    top: int
    reads: int
    stderr: float | None
    agreement: float
    entropy: float
    label_mass: float

    @property
    def confidence(self) -> float:
        """Averaged probability of the answer x mean label mass (docs/decisions.md, "Confidence")."""
        return min(1.0, self.probs[self.top] * self.label_mass)


def combine(
    readings: list[list[float]], label_masses: list[float], temperature: float | None = None
) -> Combined:
    """Average readings (each a distribution in request order) into one answer with diagnostics;
    with a temperature, the average is calibrated (scaling keeps the answer: it keeps the order)."""
    k = len(readings)
    n = len(readings[0])
    mean = [sum(r[i] for r in readings) / k for i in range(n)]
    total = sum(mean)
    mean = [p / total for p in mean]  # removes float drift so the answer sums to 1
    if temperature is not None:
        mean = scaled(mean, temperature)
    top = argmax(mean)
    tops = [r[top] for r in readings]
    stderr = statistics.stdev(tops) / math.sqrt(k) if k > 1 else None
    agreement = sum(1 for r in readings if argmax(r) == top) / k
    return Combined(
        probs=mean,
        top=top,
        reads=k,
        stderr=stderr,
        agreement=agreement,
        entropy=normalized_entropy(mean),
        label_mass=sum(label_masses) / len(label_masses),
    )
