"""The router's decisions on labelled alerts, scored (pure):

- page recall (expected page, paged) and the pages missed;
- noise: pages of alerts that should have been tickets or drops;
- the action counts, team accuracy with its confusion matrix, severity accuracy (exact, within one);
- a sweep of the threshold that decides page vs not. That is `uncertain`, not `page`: the uncertain
  band pages too. Each point is every alert re-decided by `Policy.decide` under the moved threshold;
- with a target, that threshold fitted on one half of the set (a seeded split, stratified by
  expected page) for a page recall, and measured on the other half.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.alerts.policy import Policy
from evals.alerts.classify import Row
from evals.errors import LabelledFileError

# The thresholds the sweep and `suggest` try: 0.00, 0.01, ..., 1.00.
GRID = tuple(i / 100 for i in range(101))

ACTIONS = ("page", "ticket", "drop")


@dataclass(frozen=True)
class Ratio:
    hit: int
    total: int

    @property
    def value(self) -> float | None:
        return self.hit / self.total if self.total else None

    def reaches(self, target: float) -> bool:
        return self.total > 0 and self.hit >= target * self.total - 1e-9

    def __str__(self) -> str:
        return f"{self.hit}/{self.total} ({self.value:.3f})" if self.total else "-"


def page_recall(rows: Sequence[Row]) -> Ratio:
    """Of the alerts expected to page, the share paged (the uncertain band counts: it pages)."""
    expected = [r for r in rows if r.item.expected.page]
    return Ratio(sum(r.paged for r in expected), len(expected))


def missed_pages(rows: Sequence[Row]) -> list[Row]:
    return [r for r in rows if r.item.expected.page and not r.paged]


def noise(rows: Sequence[Row]) -> list[Row]:
    """Pages of alerts that should have been tickets or drops."""
    return [r for r in rows if r.paged and not r.item.expected.page]


def action_counts(rows: Sequence[Row]) -> dict[str, int]:
    counts: Counter[str] = Counter(str(r.page.action) for r in rows)
    return {a: counts.pop(a, 0) for a in ACTIONS} | dict(counts)


def team_accuracy(rows: Sequence[Row]) -> Ratio:
    """The model's team against the expected one, over the alerts the model was asked about."""
    asked = [r for r in rows if r.team is not None]
    return Ratio(sum(r.team == r.item.expected.team for r in asked), len(asked))


def confusion(rows: Sequence[Row], teams: Sequence[str]) -> dict[str, dict[str, int]]:
    """Counts of expected team (outer key) x the model's team (inner key), every team of `teams`,
    over the alerts the model was asked about."""
    table = {e: dict.fromkeys(teams, 0) for e in teams}
    for r in rows:
        if r.team is None:
            continue
        row = table.setdefault(r.item.expected.team, dict.fromkeys(teams, 0))
        row[r.team] = row.get(r.team, 0) + 1
    return table


def severity_accuracy(rows: Sequence[Row], levels: Sequence[str]) -> tuple[Ratio, Ratio]:
    """The page's level (what the router sends: the model's, raised by a floor) against the
    expected one: exactly, and within one level of the policy's scale."""
    distance = [abs(levels.index(r.page.severity) - levels.index(r.item.expected.severity)) for r in rows]
    return Ratio(sum(d == 0 for d in distance), len(rows)), Ratio(sum(d <= 1 for d in distance), len(rows))


def at_threshold(policy: Policy, threshold: float) -> Policy:
    """The policy with p(page) >= `threshold` paging: its `uncertain` moved there (`page` raised and
    `ticket` lowered to it where they would cross). Everything else, rules and floors included, is
    the policy's own."""
    t = policy.spec.thresholds
    moved = t.model_copy(
        update={"uncertain": threshold, "page": max(t.page, threshold), "ticket": min(t.ticket, threshold)}
    )
    spec = policy.spec.model_copy(update={"thresholds": moved})
    return type(policy)(spec, policy.sink_configs, policy.source)


@dataclass(frozen=True)
class Point:
    """The figures of one set of decisions: how many alerts paged, the page recall, the noise."""

    threshold: float
    alerts: int
    paged: int
    recall: Ratio
    noise: int

    @property
    def share(self) -> float:
        return self.paged / self.alerts if self.alerts else 0.0


def operating_point(rows: Sequence[Row], threshold: float) -> Point:
    """The rows' own decisions (`threshold`: the `uncertain` they were made under)."""
    return Point(threshold, len(rows), sum(r.paged for r in rows), page_recall(rows), len(noise(rows)))


def point(rows: Sequence[Row], policy: Policy, threshold: float) -> Point:
    """Every row re-decided by `Policy.decide` with p(page) >= `threshold` paging."""
    moved = at_threshold(policy, threshold)
    return operating_point([dataclasses.replace(r, page=r.under(moved)) for r in rows], threshold)


def sweep(rows: Sequence[Row], policy: Policy, grid: Sequence[float] = GRID) -> list[Point]:
    return [point(rows, policy, x) for x in grid]


def split(rows: Sequence[Row], seed: int = 0) -> tuple[list[Row], list[Row]]:
    """Two halves, each with half the expected pages and half the others (the fitting half gets the
    odd one), shuffled by `seed`."""
    rng = random.Random(seed)
    fit: list[Row] = []
    held: list[Row] = []
    for label in (True, False):
        group = [r for r in rows if r.item.expected.page is label]
        rng.shuffle(group)
        half = (len(group) + 1) // 2
        fit += group[:half]
        held += group[half:]
    return fit, held


@dataclass(frozen=True)
class Suggestion:
    """The highest threshold of the grid whose page recall on the fitting half reaches `target`,
    and what it does on the held-out half (beside the current policy's figures there). When no
    threshold reaches it (a rule tickets or drops an expected page, whatever p(page) says):
    `reached` is False and the threshold is the highest one with the best recall there is."""

    target: float
    seed: int
    reached: bool
    threshold: float
    thresholds: dict[str, Any]  # the policy's [thresholds] with the threshold moved
    fit: Point
    held_out: Point
    current_held_out: Point


def suggest(
    rows: Sequence[Row], policy: Policy, target: float, seed: int = 0, grid: Sequence[float] = GRID
) -> Suggestion:
    fit, held = split(rows, seed)
    if not page_recall(fit).total or not page_recall(held).total:
        raise LabelledFileError(
            "suggesting thresholds needs at least 2 alerts expected to page (one per half), "
            f"got {page_recall(rows).total}"
        )
    fitted = {x: point(fit, policy, x).recall for x in grid}
    reached = any(r.reaches(target) for r in fitted.values())
    best = max(r.hit for r in fitted.values())
    threshold = max(x for x, r in fitted.items() if (r.reaches(target) if reached else r.hit == best))
    current = policy.spec.thresholds.uncertain
    return Suggestion(
        target=target,
        seed=seed,
        reached=reached,
        threshold=threshold,
        thresholds=at_threshold(policy, threshold).spec.thresholds.model_dump(mode="json"),
        fit=point(fit, policy, threshold),
        held_out=point(held, policy, threshold),
        current_held_out=operating_point(held, current),
    )


def toml_lines(thresholds: dict[str, Any]) -> str:
    """A `[thresholds]` table to paste into the policy (it replaces the one there)."""

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        return repr(v) if isinstance(v, float) else json.dumps(v)

    lines = [f"{k} = {value(v)}" for k, v in thresholds.items() if v is not None]  # TOML has no null
    return "\n".join(["[thresholds]", *lines])


@dataclass(frozen=True)
class Figures:
    alerts: int
    unasked: int  # decided by a rule without asking the model
    recall: Ratio
    missed: list[Row]
    noise: list[Row]
    pages: int
    actions: dict[str, int]
    team: Ratio
    confusion: dict[str, dict[str, int]]
    severity_exact: Ratio
    severity_within_one: Ratio
    current: Point
    sweep: list[Point]
    suggestion: Suggestion | None


def score(rows: Sequence[Row], policy: Policy, *, target: float | None = None, seed: int = 0) -> Figures:
    exact, within_one = severity_accuracy(rows, policy.spec.severity.levels)
    return Figures(
        alerts=len(rows),
        unasked=sum(r.answers is None for r in rows),
        recall=page_recall(rows),
        missed=missed_pages(rows),
        noise=noise(rows),
        pages=sum(r.paged for r in rows),
        actions=action_counts(rows),
        team=team_accuracy(rows),
        confusion=confusion(rows, list(policy.spec.teams)),
        severity_exact=exact,
        severity_within_one=within_one,
        current=operating_point(rows, policy.spec.thresholds.uncertain),
        sweep=sweep(rows, policy),
        suggestion=None if target is None else suggest(rows, policy, target, seed),
    )
