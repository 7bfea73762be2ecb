"""The decision function: a validated Jev request -> engine reads -> Jev answers (+ diagnostics).

`Decider.plan` checks what can be answered and counts the reads the read policy may need (admission
and the per-decision cap use that count); `Decider.decide` reads and combines. Nothing else shapes
answers: the alert router is a Jev client of the gateway over HTTP.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, TypedDict

from app.core.errors import EngineBadAnswer, InvalidRequest, Unsupported
from app.gateway.decisions.calibration import scaled
from app.gateway.decisions.calibration_file import Calibration
from app.gateway.decisions.plan import (
    ChunkResult,
    Hierarchy,
    Read,
    Spec,
    chunk_count,
    combine_hierarchical,
    first_stage_reads,
    render,
)
from app.gateway.decisions.policy import Combined, combine, normalized_entropy
from app.gateway.engine import Engine
from app.jev.wire import BoxQuestion, Content, ReadPolicy, SystemOneRequest

Job = tuple[int, int]  # (spec index, order index)
# Engine calls one decision keeps in flight. vLLM decodes max-num-seqs (32) reads at once, so four
# calls of up to 64 reads keep it busy, while other decisions' calls queue in between, not behind.
CALLS_IN_FLIGHT = 4


# A decision's parts as JSON, typed: the shapes of the wire's response models (app/jev/wire.py), built
# as plain dicts because orjson encodes those as they are, where a model would cost every decision
# its validation and its dump (tests/gateway/test_decision_json.py keeps the two in step).


class NoulJson(TypedDict):
    type: Literal["noul"]
    noul: float


class ChoiceJson(TypedDict):
    type: Literal["choice"]
    choice: str
    confidence: float
    probabilities: dict[str, float]


class ScoreJson(TypedDict):
    type: Literal["score"]
    score: float
    confidence: float
    legend: dict[str, Content]
    probabilities: dict[str, float]


AnswerJson = NoulJson | ChoiceJson | ScoreJson


class UsageJson(TypedDict):
    input_tokens: int
    output_tokens: int


class DiagnosticsJson(TypedDict):
    reads: int
    engine_reads: int
    first_read_entropy: NotRequired[float]  # the rest: not for a one-level score (nothing read)
    entropy: NotRequired[float]
    stderr: NotRequired[float | None]
    agreement: NotRequired[float]
    label_mass: NotRequired[float]
    confidence: float
    calibrated: bool
    temperature: NotRequired[float]  # when calibrated


@dataclass(frozen=True)
class Decision:
    answers: dict[str, AnswerJson]
    usage: UsageJson
    diagnostics: dict[str, DiagnosticsJson]
    engine_reads: dict[str, int]  # per question, chunk and final reads included


@dataclass
class _Reading:
    probs: list[float]  # over all options, request order
    label_mass: float
    engine_reads: int


@dataclass
class _Usage:
    state_tokens: int
    input_tokens: int = 0
    output_tokens: int = 0
    calls: list[tuple[int, int, int]] = field(default_factory=list)  # (reads, input, output) per call

    def total(self) -> UsageJson:
        # vLLM counts every read's full prompt; the shared state is billed once, as hosted Jev does.
        overhead = sum(max(0, tokens - reads * self.state_tokens) for reads, tokens, _ in self.calls)
        return {
            "input_tokens": self.state_tokens + overhead,
            "output_tokens": sum(out for _, _, out in self.calls),
        }


@dataclass(frozen=True)
class Plan:
    """A request reduced to what reads need, with the most engine reads its policy may take."""

    specs: list[Spec]
    state: str
    policy: ReadPolicy
    max_reads: int
    cache_salt: str | None = None  # the caller's prefix-cache salt, sent with every engine call


class Decider:
    def __init__(
        self,
        engine: Engine,
        *,
        max_options: int,
        max_questions_per_call: int,
        max_reads: int,
        calibration: Calibration | None = None,
    ) -> None:
        self.engine = engine
        self.max_options = max_options
        self.per_call = max_questions_per_call
        self.max_reads = max_reads
        self.calibration = calibration

    def temperatures(self, plan: Plan) -> list[float | None]:
        """Each question's calibration temperature: none unless a file is served and the request
        is read under the policy it was fitted under (another policy's answers were not fitted)."""
        cal = self.calibration
        if cal is None or plan.policy != cal.read_policy:
            return [None] * len(plan.specs)
        return [cal.temperature(spec.name, spec.kind) for spec in plan.specs]

    def plan(self, request: SystemOneRequest, policy: ReadPolicy, *, cache_salt: str | None = None) -> Plan:
        """What to read; raises Unsupported or InvalidRequest before any read is made."""
        specs = []
        for name, q in request.questions.items():
            if isinstance(q, BoxQuestion):
                raise Unsupported(
                    f"Question {name!r} is a box question, which needs a vision model; this deployment "
                    "serves a text-only model and answers noul, choice and score questions."
                )
            specs.append(Spec.from_question(name, q))
        reads = sum(self._most_reads(spec, policy) for spec in specs)
        if reads > self.max_reads:
            raise InvalidRequest(
                f"This request may need {reads} engine reads (questions x option orders x chunk reads under "
                f"the {policy.mode!r} read policy); this deployment allows {self.max_reads} per request. "
                "Send fewer questions or options, or a lighter read_policy."
            )
        return Plan(specs, render(request.state) or "", policy, reads, cache_salt)

    def _most_reads(self, spec: Spec, policy: ReadPolicy) -> int:
        if spec.kind == "score" and spec.n == 1:
            return 0
        chunks = 1 if spec.kind == "noul" else chunk_count(spec.n, self.max_options)
        per_order = chunks + (1 if chunks > 1 else 0)  # chunk reads, then the final read
        return policy.most_orders(spec.max_orders()) * per_order

    async def decide(self, plan: Plan) -> Decision:
        specs, state, policy = plan.specs, plan.state, plan.policy
        temps = self.temperatures(plan)
        # Counting the state's tokens runs beside the first reads, so it adds no latency.
        state_tokens = asyncio.create_task(self.engine.count_tokens(state))
        try:
            usage = _Usage(state_tokens=0)
            readable = [i for i, s in enumerate(specs) if s.n > 1 or s.kind != "score"]
            first: list[Job] = [
                (i, k) for i in readable for k in range(policy.first_orders(specs[i].max_orders()))
            ]
            readings = await self._readings(plan, first, usage)
            # Re-read decisions see calibrated probabilities, as the answers do.
            first_entropy = {
                i: normalized_entropy(_calibrated(readings[(i, 0)].probs, temps[i])) for i in readable
            }
            extra: list[Job] = [
                (i, k)
                for i in readable
                for k in range(1, 1 + policy.extra_orders(first_entropy[i], specs[i].max_orders()))
            ]
            if extra:
                readings.update(await self._readings(plan, extra, usage))
            usage.state_tokens = await state_tokens
        finally:
            state_tokens.cancel()

        by_spec: dict[int, list[_Reading]] = defaultdict(list)
        for (i, _k), reading in sorted(readings.items(), key=lambda item: item[0]):
            by_spec[i].append(reading)
        answers: dict[str, AnswerJson] = {}
        diagnostics: dict[str, DiagnosticsJson] = {}
        engine_reads: dict[str, int] = {}
        for i, spec in enumerate(specs):
            if i not in by_spec:  # a one-level score: nothing to read
                answers[spec.name] = _answer(spec, combine([[1.0]], [1.0]))
                diagnostics[spec.name] = {
                    "reads": 0,
                    "engine_reads": 0,
                    "confidence": 1.0,
                    "calibrated": False,
                }
                engine_reads[spec.name] = 0
                continue
            rs, temperature = by_spec[i], temps[i]
            combined = combine([r.probs for r in rs], [r.label_mass for r in rs], temperature)
            answers[spec.name] = _answer(spec, combined)
            engine_reads[spec.name] = sum(r.engine_reads for r in rs)
            diagnostics[spec.name] = {
                "reads": combined.reads,
                "engine_reads": engine_reads[spec.name],
                "first_read_entropy": first_entropy[i],
                "entropy": combined.entropy,
                "stderr": combined.stderr,
                "agreement": combined.agreement,
                "label_mass": combined.label_mass,
                "confidence": combined.confidence,
                "calibrated": temperature is not None,
            }
            if temperature is not None:
                diagnostics[spec.name]["temperature"] = temperature
        return Decision(answers, usage.total(), diagnostics, engine_reads)

    async def _readings(self, plan: Plan, jobs: list[Job], usage: _Usage) -> dict[Job, _Reading]:
        """One reading per job: direct reads, or chunk reads then a final read for large choices."""
        specs = plan.specs
        canonical = plan.policy.mode == "debias"
        stage1 = {
            job: first_stage_reads(job[0], specs[job[0]], job[1], self.max_options, canonical=canonical)
            for job in jobs
        }
        results = await self._run(plan, [r for reads in stage1.values() for r in reads], usage)
        out: dict[Job, _Reading] = {}
        pending: dict[Job, tuple[Hierarchy, list[list[int]], Read]] = {}
        pos = 0
        for job, reads in stage1.items():
            spec = specs[job[0]]
            got = results[pos : pos + len(reads)]
            pos += len(reads)
            if len(reads) == 1:
                probs, mass = got[0]
                full = [0.0] * spec.n
                for o, p in zip(reads[0].options, probs, strict=True):
                    full[o] = p
                out[job] = _Reading(full, mass, 1)
                continue
            tree = Hierarchy([ChunkResult(r.options, p, m) for r, (p, m) in zip(reads, got, strict=True)])
            reps = tree.representatives(self.max_options)
            pending[job] = (tree, reps, Read(job[0], job[1], tuple(o for chunk in reps for o in chunk)))
        if pending:
            finals = await self._run(plan, [final for _, _, final in pending.values()], usage)
            for (job, (tree, reps, final)), (probs, mass) in zip(pending.items(), finals, strict=True):
                final_probs = dict(zip(final.options, probs, strict=True))
                full = combine_hierarchical(specs[job[0]].n, tree.chunks, reps, final_probs)
                masses = [c.label_mass for c in tree.chunks] + [mass]
                out[job] = _Reading(full, sum(masses) / len(masses), len(masses))
        return out

    async def _run(self, plan: Plan, reads: list[Read], usage: _Usage) -> list[tuple[list[float], float]]:
        """Send reads to vLLM's native endpoint, at most `per_call` per call, CALLS_IN_FLIGHT at once."""
        groups = [reads[i : i + self.per_call] for i in range(0, len(reads), self.per_call)]
        in_flight = asyncio.Semaphore(CALLS_IN_FLIGHT)

        specs = plan.specs

        async def call(group: list[Read]) -> dict[str, Any]:
            body: dict[str, Any] = {
                "state": plan.state,
                "questions": {f"r{j}": r.engine_question(specs[r.spec_index]) for j, r in enumerate(group)},
            }
            if plan.cache_salt is not None:
                body["cache_salt"] = plan.cache_salt
            async with in_flight:
                return await self.engine.systemone(body)

        if len(groups) == 1:  # most decisions: no task to make, schedule and join
            responses = [await call(groups[0])]
        else:
            # A TaskGroup cancels the other calls as soon as one fails (or the client goes away).
            try:
                async with asyncio.TaskGroup() as tg:
                    tasks = [tg.create_task(call(g)) for g in groups]
            except ExceptionGroup as failed:
                raise failed.exceptions[0] from None  # the first failure says what went wrong
            responses = [t.result() for t in tasks]
        out = []
        for group, resp in zip(groups, responses, strict=True):
            try:
                u = resp["usage"]
                usage.calls.append((len(group), int(u["input_tokens"]), int(u["output_tokens"])))
                for j, read in enumerate(group):
                    probs = read.probabilities(specs[read.spec_index], resp["answers"][f"r{j}"])
                    out.append((probs, float(resp["diagnostics"][f"r{j}"]["label_mass"])))
            except (KeyError, TypeError, ValueError) as e:
                raise EngineBadAnswer(f"The engine's answer lacks an expected field ({e!r}).") from e
        return out


def _calibrated(probs: list[float], temperature: float | None) -> list[float]:
    return probs if temperature is None else scaled(probs, temperature)


def _answer(spec: Spec, c: Combined) -> AnswerJson:
    """The Jev answer shapes: noul has no confidence; choice and score always do."""
    if spec.kind == "noul":
        return {"type": "noul", "noul": c.probs[0]}
    if spec.kind == "choice":
        return {
            "type": "choice",
            "choice": spec.options[c.top],
            "confidence": c.confidence,
            "probabilities": dict(zip(spec.options, c.probs, strict=True)),
        }
    return {
        "type": "score",
        "score": sum(i * p for i, p in enumerate(c.probs)),
        "confidence": c.confidence,
        "legend": {str(i): level for i, level in enumerate(spec.legend)},
        "probabilities": {str(i): p for i, p in enumerate(c.probs)},
    }
