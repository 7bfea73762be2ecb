"""Ask the gateway every item under each read policy, in the request's option order and reversed,
and reduce the answers to per-question figures."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.core.errors import ServiceError
from app.jev.client import JevClient
from evals.asking import RETRY, each, progress_bar
from evals.data import Item, Scored
from evals.errors import EvalError
from evals.metrics import Bin, Outcome, accuracy, baseline, brier, ece, flip_rate, reliability

ORDERS = ("canonical", "reversed")


@dataclass(frozen=True)
class Row:
    """One question under one read policy, over every item that scores it."""

    policy: str
    question: str
    kind: str
    items: int
    accuracy: float  # options in the request's order
    accuracy_reversed: float  # options reversed
    baseline: float  # max(chance, majority answer's share)
    ece: float
    brier: float
    reads: float  # mean reads per question
    flip_rate: float | None  # None for noul: it has no option order
    bins: list[Bin] = field(repr=False)


async def ask_all(
    client: JevClient,
    items: Sequence[Item],
    model: str,
    policies: Sequence[str | None],
    *,
    orders: Sequence[str] = ORDERS,
    concurrency: int = 4,
    progress: Callable[[], None] = lambda: None,
) -> dict[tuple[str | None, str], list[dict[str, Any]]]:
    """Responses keyed by (policy, order), in item order; policy None is the deployment's default."""

    async def one(job: tuple[Item, str | None, str]) -> dict[str, Any]:
        item, policy, order = job
        body = item.body(model, policy, reverse=order == "reversed")
        try:
            return await client.decide(body)
        except ServiceError as e:
            raise EvalError(f"line {item.line} ({policy or 'default'}, {order} order): {e}") from None

    jobs = [(p, o) for p in policies for o in orders]
    results = await each(
        [(item, p, o) for p, o in jobs for item in items], one, concurrency=concurrency, progress=progress
    )
    n = len(items)
    return {job: results[i * n : (i + 1) * n] for i, job in enumerate(jobs)}


def probabilities(scored: Scored, answer: dict[str, Any], *, reversed_order: bool) -> tuple[float, ...]:
    """The answer as probabilities over the question's options in the file's (canonical) order."""
    if scored.kind == "noul":
        p = float(answer["noul"])
        return (p, 1.0 - p)
    probs = answer["probabilities"]
    if scored.kind == "choice":  # keyed by option name: the order does not matter
        return tuple(float(probs[name]) for name in scored.options)
    n = len(scored.options)  # keyed by level index in the order sent
    return tuple(float(probs[str(n - 1 - i if reversed_order else i)]) for i in range(n))


def reduce(
    items: Sequence[Item],
    responses: dict[tuple[str | None, str], list[dict[str, Any]]],
    policies: Sequence[str],
) -> list[Row]:
    """Per read policy and question: accuracy both ways, baseline, ECE, Brier, reads, flip rate."""
    scoring: dict[str, list[tuple[int, Scored]]] = defaultdict(list)  # question -> (item index, ...)
    for i, item in enumerate(items):
        for scored in item.scored:
            scoring[scored.name].append((i, scored))

    def outcomes(policy: str, order: str, name: str) -> list[Outcome]:
        out = []
        for i, scored in scoring[name]:
            response = responses[(policy, order)][i]
            probs = probabilities(scored, response["answers"][name], reversed_order=order == "reversed")
            out.append(Outcome(probs, scored.truth, int(response["diagnostics"][name]["reads"])))
        return out

    rows = []
    for policy in policies:
        for name, scored_items in scoring.items():
            canonical, backwards = outcomes(policy, "canonical", name), outcomes(policy, "reversed", name)
            kind = scored_items[0][1].kind
            flips = None
            if kind != "noul":
                flips = flip_rate([(a.answer, b.answer) for a, b in zip(canonical, backwards, strict=True)])
            rows.append(
                Row(
                    policy=policy,
                    question=name,
                    kind=kind,
                    items=len(canonical),
                    accuracy=accuracy(canonical),
                    accuracy_reversed=accuracy(backwards),
                    baseline=baseline(
                        [s.options[s.truth] for _, s in scored_items],
                        [len(s.options) for _, s in scored_items],
                    ),
                    ece=ece(canonical),
                    brier=brier(canonical),
                    reads=sum(o.reads for o in canonical) / len(canonical),
                    flip_rate=flips,
                    bins=reliability(canonical),
                )
            )
    return rows


@dataclass(frozen=True)
class Report:
    model: str
    url: str
    data: str
    items: int
    seconds: float
    rows: list[Row]


def evaluate(
    url: str,
    items: Sequence[Item],
    policies: Sequence[str],
    *,
    data: str,
    headers: dict[str, str],
    model: str | None = None,
    concurrency: int = 4,
    timeout_s: float = 300.0,
) -> Report:
    """Every item under every policy, both option orders, with a progress bar on stderr."""
    asked = ask(url, items, policies, ORDERS, "eval", headers=headers, model=model,
                concurrency=concurrency, timeout_s=timeout_s)  # fmt: skip
    rows = reduce(items, asked.responses, policies)
    return Report(asked.model, url, data, len(items), asked.seconds, rows)


@dataclass(frozen=True)
class Asked:
    model: str  # the model name asked for
    responses: dict[tuple[str | None, str], list[dict[str, Any]]]  # as ask_all returns them
    seconds: float


def ask(
    url: str,
    items: Sequence[Item],
    policies: Sequence[str | None],
    orders: Sequence[str],
    label: str,
    *,
    headers: dict[str, str],
    model: str | None,
    concurrency: int,
    timeout_s: float,
) -> Asked:
    """`ask_all` against `url` (the served model unless `model`), with a progress bar on stderr."""

    async def go() -> Asked:
        async with JevClient(url, headers=headers, timeout_s=timeout_s, retry=RETRY) as client:
            served = model or await served_model(client)
            with progress_bar(label, len(items) * len(policies) * len(orders)) as advance:
                loop = asyncio.get_running_loop()
                started = loop.time()
                responses = await ask_all(
                    client, items, served, policies, orders=orders, concurrency=concurrency, progress=advance
                )
                return Asked(served, responses, round(loop.time() - started, 1))

    return asyncio.run(go())


async def served_model(client: JevClient) -> str:
    """The first model `/v1/models` lists: what the eval asks for unless told otherwise."""
    try:
        return (await client.models())[0]
    except ServiceError as e:
        raise EvalError(str(e)) from None
