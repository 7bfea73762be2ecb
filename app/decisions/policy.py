"""Read policy: the one model of its four knobs, and the math of entropy, re-reads and averaging."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.decisions.calibration import scaled

ReadPolicyName = Literal["single", "adaptive", "debias"]


class ReadPolicy(BaseModel):
    """How many reads each question gets. The deployment's defaults (settings), a request's
    `read_policy` override and the policy echoed in the answer are all this model."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    mode: ReadPolicyName = "adaptive"
    """`single`: one read per question. `adaptive`: questions whose first read's normalised
    entropy exceeds `reread_entropy` get `extra_reads` more reads in other option orders.
    `debias`: always `debias_reads` reads in different option orders."""
    reread_entropy: float = Field(0.9, ge=0.0, le=1.0)
    """Normalised entropy (0 = certain, 1 = uniform) above which `adaptive` re-reads a question."""
    extra_reads: int = Field(2, ge=0, le=16)
    """Extra reads `adaptive` gives an uncertain question."""
    debias_reads: int = Field(3, ge=1, le=16)
    """Reads per question in `debias` mode, each in a different option order."""

    def overridden(self, override: ReadPolicy | None) -> ReadPolicy:
        """This policy with the fields a request set explicitly replaced."""
        if override is None or not override.model_fields_set:
            return self
        return self.model_copy(update=override.model_dump(include=override.model_fields_set))

    def first_orders(self, max_orders: int) -> int:
        """How many option orders every question gets in the first round."""
        return min(self.debias_reads, max_orders) if self.mode == "debias" else 1

    def extra_orders(self, first_entropy: float, max_orders: int) -> int:
        """How many more orders a question gets after its first read (adaptive only)."""
        if self.mode != "adaptive" or first_entropy <= self.reread_entropy:
            return 0
        return max(0, min(self.extra_reads, max_orders - 1))

    def most_orders(self, max_orders: int) -> int:
        """The most option orders a question can get under this policy, whatever it reads."""
        if self.mode == "adaptive":
            return min(max_orders, 1 + self.extra_reads)
        return self.first_orders(max_orders)


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
        """Averaged probability of the answer x mean label mass (see README, "Confidence")."""
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
