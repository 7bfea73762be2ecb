"""From Jev questions to engine reads: rendering, option orders, and chunks for large choices.

A *reading* of a question is one probability distribution over all its options, in request order.
An order index k picks the option order the model sees: k = 0 is the base order, k = 1 its
reverse, k >= 2 deterministic shuffles of it (all distinct). The base order is the request's under
`single` and `adaptive` (one read reproduces the engine's own answer), and a canonical order of the
option set itself under `debias`, so that the same question sent with its options in any order is
read through the same option sequences and gets the same answer. A reading of a choice with more options
than the engine labels (26, A-Z) is hierarchical: see `combine_hierarchical`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal

from app.gateway.decisions.orders import option_order
from app.jev.wire import ChoiceQuestion, Content, NoulQuestion, ScoreQuestion

Kind = Literal["noul", "choice", "score"]
# A noul has three readings: vLLM's native yes/no read, then yes/no as lettered options in both
# orders (a different prompt, so different canvas noise, and the yes/no position debiased).
NOUL_ORDERS = 3


def render(value: Content | None) -> str | None:
    """What the model reads: strings as-is, objects and arrays as JSON text (never Python repr)."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True)
class Spec:
    """A question reduced to what reads need. Option names are in request order."""

    name: str
    kind: Kind
    instructions: str | None
    options: tuple[str, ...]
    descriptions: tuple[str | None, ...]
    legend: tuple[Any, ...] = ()

    @classmethod
    def from_question(cls, name: str, q: NoulQuestion | ChoiceQuestion | ScoreQuestion) -> Spec:
        instructions = render(q.instructions)
        if isinstance(q, NoulQuestion):
            c = q.criteria
            descs = (render(c.true), render(c.false)) if c else (None, None)
            return cls(name, "noul", instructions, ("yes", "no"), descs)
        if isinstance(q, ChoiceQuestion):
            return cls(
                name, "choice", instructions, tuple(q.criteria), tuple(render(d) for d in q.criteria.values())
            )
        levels = tuple(render(level) or "" for level in q.criteria)
        return cls(
            name, "score", instructions, tuple(str(i) for i in range(len(levels))), levels, tuple(q.criteria)
        )

    @property
    def n(self) -> int:
        return len(self.options)

    def canonical(self) -> tuple[int, ...]:
        """The options (indices in request order) sorted by what the model reads of them: a choice's
        name, a score level's text. Ties keep request order."""
        if self.kind == "choice":
            key = self.options
        elif self.kind == "score":
            key = tuple(d or "" for d in self.descriptions)
        else:
            return tuple(range(self.n))  # a noul's sides have no order to normalise
        return tuple(sorted(range(self.n), key=lambda i: (key[i], i)))

    def max_orders(self) -> int:
        if self.kind == "noul":
            return NOUL_ORDERS
        return math.factorial(self.n) if self.n < 8 else 10**6


@dataclass(frozen=True)
class Read:
    """One question as sent to vLLM: a subset of a spec's options, in the order the model sees."""

    spec_index: int
    order: int
    options: tuple[int, ...]  # indices into the spec's options, in read order
    as_choice: bool = False  # a noul read through lettered options

    def engine_question(self, spec: Spec) -> dict[str, Any]:
        q: dict[str, Any] = {}
        if spec.instructions is not None:
            q["instructions"] = spec.instructions
        if spec.kind == "noul" and not self.as_choice:
            q["type"] = "noul"
            sides = dict(zip(("true", "false"), spec.descriptions, strict=True))
            crit = {k: v for k, v in sides.items() if v is not None}
            if crit:
                q["criteria"] = crit
        elif spec.kind == "score":
            q["type"] = "score"
            q["criteria"] = [spec.descriptions[i] for i in self.options]
        else:
            q["type"] = "choice"
            q["criteria"] = {spec.options[i]: spec.descriptions[i] for i in self.options}
        return q

    def probabilities(self, spec: Spec, answer: dict[str, Any]) -> list[float]:
        """The engine's answer as probabilities over `self.options`, in read order."""
        probs = answer["probabilities"]
        if spec.kind == "score":
            return [float(probs[str(j)]) for j in range(len(self.options))]
        return [float(probs[spec.options[i]]) for i in self.options]


def first_stage_reads(
    spec_index: int, spec: Spec, order: int, max_options: int, *, canonical: bool = False
) -> list[Read]:
    """Reads that need no other read's result: the whole question, or its chunks. `canonical`:
    orders are taken over the spec's canonical order instead of the request's."""
    if spec.kind == "noul":
        if order == 0:
            return [Read(spec_index, 0, (0, 1))]
        return [Read(spec_index, order, (1, 0) if order == 1 else (0, 1), as_choice=True)]
    base = spec.canonical() if canonical else tuple(range(spec.n))
    perm = tuple(base[i] for i in option_order(spec.n, order))
    return [Read(spec_index, order, chunk) for chunk in chunks(perm, max_options)]


def chunk_count(n: int, size: int) -> int:
    """How many chunks of at most `size` options a read of `n` options takes."""
    return math.ceil(n / size)


def chunks(perm: tuple[int, ...], size: int) -> list[tuple[int, ...]]:
    """Split into the fewest chunks of at most `size`, as even as possible."""
    count = chunk_count(len(perm), size)
    base, extra = divmod(len(perm), count)
    out, start = [], 0
    for c in range(count):
        end = start + base + (1 if c < extra else 0)
        out.append(perm[start:end])
        start = end
    return out


@dataclass
class ChunkResult:
    options: tuple[int, ...]
    probs: list[float]  # within-chunk, read order
    label_mass: float


@dataclass
class Hierarchy:
    """State of one hierarchical reading: chunk results, then the final read among representatives."""

    chunks: list[ChunkResult] = field(default_factory=list)

    def representatives(self, max_options: int) -> list[list[int]]:
        """Per chunk, its top options (by within-chunk probability) to compete in the final read."""
        per_chunk = max(1, max_options // len(self.chunks))
        reps = []
        for c in self.chunks:
            ranked = sorted(range(len(c.options)), key=lambda j: (-c.probs[j], j))[:per_chunk]
            reps.append([c.options[j] for j in sorted(ranked)])
        return reps


def combine_hierarchical(
    n: int, chunk_results: list[ChunkResult], reps: list[list[int]], final_probs: dict[int, float]
) -> list[float]:
    """p(o) = p(o's chunk wins the final) x p(o | its chunk); sums to 1 over all n options.

    A chunk's final share is the summed final probability of its representatives.
    """
    out = [0.0] * n
    for chunk, chunk_reps in zip(chunk_results, reps, strict=True):
        share = sum(final_probs[o] for o in chunk_reps)
        for o, p in zip(chunk.options, chunk.probs, strict=True):
            out[o] = share * p
    return out
