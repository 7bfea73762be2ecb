"""The eval's math: accuracy, Brier score, reliability bins, ECE, flip rate, baselines."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

BINS = 10


@dataclass(frozen=True)
class Outcome:
    """One answered question: probabilities over its options (request order) and the right index."""

    probs: tuple[float, ...]
    truth: int
    reads: int = 1

    @property
    def answer(self) -> int:
        return max(range(len(self.probs)), key=self.probs.__getitem__)

    @property
    def confidence(self) -> float:
        """The answer's probability: what a user would read as "how sure"."""
        return self.probs[self.answer]

    @property
    def correct(self) -> bool:
        return self.answer == self.truth


@dataclass(frozen=True)
class Bin:
    low: float
    high: float
    count: int
    confidence: float  # mean confidence of the answers in the bin (0 when empty)
    accuracy: float  # share of them that were right (0 when empty)


def accuracy(outcomes: Sequence[Outcome]) -> float:
    return sum(o.correct for o in outcomes) / len(outcomes)


def brier(outcomes: Sequence[Outcome]) -> float:
    """Mean over answers of sum_k (p_k - [k is right])^2: 0 is perfect, 2 the worst."""
    return sum(sum((p - (k == o.truth)) ** 2 for k, p in enumerate(o.probs)) for o in outcomes) / len(
        outcomes
    )


def reliability(outcomes: Sequence[Outcome], bins: int = BINS) -> list[Bin]:
    """Equal-width confidence bins [i/bins, (i+1)/bins), the last one closed at 1."""
    members: list[list[Outcome]] = [[] for _ in range(bins)]
    for o in outcomes:
        members[min(int(o.confidence * bins), bins - 1)].append(o)
    out = []
    for i, group in enumerate(members):
        n = len(group)
        out.append(
            Bin(
                i / bins,
                (i + 1) / bins,
                n,
                sum(o.confidence for o in group) / n if n else 0.0,
                sum(o.correct for o in group) / n if n else 0.0,
            )
        )
    return out


def ece(outcomes: Sequence[Outcome], bins: int = BINS) -> float:
    """Expected calibration error: the count-weighted mean |accuracy - confidence| over the bins."""
    total = len(outcomes)
    return sum(b.count / total * abs(b.accuracy - b.confidence) for b in reliability(outcomes, bins))


def flip_rate(pairs: Sequence[tuple[int, int]]) -> float:
    """Share of items whose answer (an option's identity) differs between two option orders."""
    return sum(a != b for a, b in pairs) / len(pairs)


def baseline(truths: Sequence[Hashable], options: Sequence[int]) -> float:
    """What a model without signal gets: the better of chance (the mean of 1/n over the items, each
    with its option count) and always answering the most common right answer."""
    majority = Counter(truths).most_common(1)[0][1] / len(truths)
    return max(sum(1.0 / n for n in options) / len(options), majority)
