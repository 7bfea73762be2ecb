"""`dgemma alerts eval`: the router's decisions on labelled alerts, scored.

The file holds one labelled delivery per line (JSON Lines):
`{"source": "alertmanager", "payload": {...}, "expected": [{"page": true, "team": "database",
"severity": "critical"}, ...], "note": "..."}`, one `expected` entry per alert of the payload, in the
order `app.alerts.formats.parse` returns them. Each alert is classified as the router classifies it
(`Policy.request` -> the gateway -> `Policy.decide`, whose action is what the router does), and the
decisions are scored:

- page recall (expected page, paged) and the pages missed;
- noise: pages of alerts that should have been tickets or drops;
- the action counts, team accuracy with its confusion matrix, severity accuracy (exact, within one);
- a sweep of the threshold that decides page vs not. That is `uncertain`, not `page`: the uncertain
  band pages too. Each point is every alert re-decided by `Policy.decide` under the moved threshold;
- with `suggest`, that threshold fitted on one half of the set (a seeded split, stratified by
  expected page) for a page recall, and measured on the other half.

With `strip_severity`, each alert loses its sender's severity label before it is asked (see
`without_severity`): the model decides, not the severity floor.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, StrictBool, ValidationError

from app.alerts.answers import RouterAnswers
from app.alerts.formats import describe, parse
from app.alerts.policy import Policy
from app.alerts.records import Alert, Page, Severity, Source
from app.core.config import ConfigError
from app.core.errors import KitError, ServiceError
from app.core.models import StrictModel
from app.jev.client import JevClient, Retry

if TYPE_CHECKING:
    from rich.console import Console

    from app.alerts.settings import AlertRouterSettings
    from app.core.identity import IdTokens

# On 429/503 and dropped connections: the gateway sheds load, an eval waits its turn.
RETRY = Retry(attempts=6)
# The thresholds the sweep and `suggest` try: 0.00, 0.01, ..., 1.00.
GRID = tuple(i / 100 for i in range(101))
# The sender's severity label (`without_severity` removes it, any case), unless the policy's floor
# names another.
SEVERITY_LABEL = "severity"
ACTIONS = ("page", "ticket", "drop")
LISTED = 20  # noise rows shown on the terminal and in report.md (report.json has every row)


class LabelledFileError(ConfigError):
    """The labelled file is not usable; the message names the file and the line."""


class AlertEvalError(KitError, RuntimeError):
    """The decision service did not answer an alert; the message names its line and what it said."""

    exit_code = 1
    label = "alerts eval"


# -- the labelled file --------------------------------------------------------------------------


class _ExpectedEntry(StrictModel):
    page: StrictBool
    team: str = Field(min_length=1)
    severity: Severity


class _LabelledLine(StrictModel):
    source: Source
    payload: Any
    expected: list[_ExpectedEntry]
    note: str | None = None


@dataclass(frozen=True)
class Expected:
    page: bool
    team: str
    severity: Severity


@dataclass(frozen=True)
class Labelled:
    """One alert of the file with its labels; `where` is `file:line`, `index` its place in the payload."""

    where: str
    index: int
    alert: Alert
    expected: Expected
    note: str | None = None


def read_labelled(path: Path) -> list[Labelled]:
    """Every alert of every labelled delivery in the file; a bad line is named by its number."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise LabelledFileError(f"{path}: {e}") from e
    items: list[Labelled] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = _LabelledLine.model_validate(json.loads(line))
        except ValueError as e:  # not JSON (json's ValueError), or not a labelled delivery
            problem = describe(e) if isinstance(e, ValidationError) else f"not JSON ({e})"
            raise LabelledFileError(
                f'{where}: expected {{"source": ..., "payload": ..., "expected": [...]}}: {problem}'
            ) from None
        try:
            alerts = parse(record.source, record.payload).alerts
        except ServiceError as e:
            raise LabelledFileError(f"{where}: payload: {e.detail}") from e
        if len(record.expected) != len(alerts):
            raise LabelledFileError(
                f"{where}: the payload has {len(alerts)} alert(s) and `expected` {len(record.expected)} "
                "entries: one per alert, in the payload's order"
            )
        for index, (alert, label) in enumerate(zip(alerts, record.expected, strict=True)):
            if alert.status != "firing":
                raise LabelledFileError(
                    f"{where}: alert {index} ({alert.title}) is {alert.status}: the router classifies "
                    "firing alerts only"
                )
            expected = Expected(label.page, label.team, label.severity)
            items.append(Labelled(where, index, alert, expected, record.note))
    if not items:
        raise LabelledFileError(f"{path}: no labelled alert")
    return items


def check(items: Sequence[Labelled], policy: Policy) -> None:
    """Every expected team and severity is one the policy knows (a typo would score as a miss)."""
    teams, levels = policy.spec.teams, policy.spec.severity.levels
    for item in items:
        e = item.expected
        if e.team not in teams:
            raise LabelledFileError(
                f"{item.where}: expected[{item.index}].team {e.team!r} is not a team of {policy.source} "
                f"({', '.join(teams)})"
            )
        if e.severity not in levels:
            raise LabelledFileError(
                f"{item.where}: expected[{item.index}].severity {e.severity!r} is not a level of "
                f"{policy.source} ({', '.join(levels)})"
            )


def without_severity(alert: Alert, label: str = SEVERITY_LABEL) -> Alert:
    """The alert without its sender's severity label (`label`, any case: the one the policy's
    severity floor reads), so the model decides, not the floor. Only that label goes, before the
    request is built: the state the model reads has no such label, and neither the floor nor a rule
    matching on it sees one. The title, summary and annotations stay as they are (a summary that
    says "critical" still says it), as do the alert's key and its other labels."""
    labels = {k: v for k, v in alert.labels.items() if k.lower() != label.lower()}
    return alert if len(labels) == len(alert.labels) else dataclasses.replace(alert, labels=labels)


def severity_label(policy: Policy) -> str:
    """The label the policy's severity floor reads (`[floor] label`), `severity` by default."""
    return policy.spec.floor.label


# -- classifying --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One alert: its labels, the gateway's answers and the policy's decision (what the router does)."""

    item: Labelled
    answers: RouterAnswers | None  # None: a rule decided without asking the model
    page: Page

    @property
    def p_page(self) -> float | None:
        return None if self.answers is None else self.answers.p_page

    @property
    def team(self) -> str | None:
        """The model's team (its route may still be the fallback one, below `team_confidence`)."""
        return None if self.answers is None else self.answers.team

    @property
    def p_team(self) -> float | None:
        return None if self.answers is None else self.answers.p_team

    @property
    def paged(self) -> bool:
        return self.page.action == "page"

    def under(self, policy: Policy) -> Page:
        """The decision another policy makes on the same answers."""
        return policy.decide(self.item.alert, self.answers)


def decided(item: Labelled, answers: RouterAnswers | None, policy: Policy) -> Row:
    return Row(item, answers, policy.decide(item.alert, answers))


async def classify(
    items: Sequence[Labelled],
    policy: Policy,
    gateway: JevClient,
    *,
    concurrency: int = 4,
    progress: Callable[[], None] = lambda: None,
) -> list[Row]:
    """Each alert decided as the router decides it, `concurrency` at a time, in file order: a rule
    that never classifies decides alone; every other alert is asked, and its answers decided. An
    alert the service does not answer (its retries spent) stops the eval, naming the line."""
    gate = asyncio.Semaphore(concurrency)

    async def one(item: Labelled) -> Row:
        rule = policy.rule_for(item.alert)
        if rule is not None and not rule.classify:  # the model is never asked
            progress()
            return decided(item, None, policy)
        async with gate:
            try:
                answers = RouterAnswers.of(await gateway.response(policy.request(item.alert)))
            except ServiceError as e:
                raise AlertEvalError(f"{item.where} (alert {item.index}, {item.alert.title}): {e}") from None
        progress()
        return decided(item, answers, policy)

    tasks = [asyncio.ensure_future(one(item)) for item in items]
    try:
        return list(await asyncio.gather(*tasks))
    finally:
        for task in tasks:  # the first failure ends the eval: no request left running
            task.cancel()


# -- scoring (pure) -----------------------------------------------------------------------------


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


# -- the report ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Report:
    file: str
    policy: str
    gateway: str
    without_severity: str | None  # the label removed from every alert (--without-severity), or None
    severity_labels_removed: int  # alerts that had it
    seconds: float
    thresholds: dict[str, Any]  # the policy's, as the rows were decided
    figures: Figures
    rows: list[Row]


def _ratio(r: Ratio) -> dict[str, Any]:
    return {"hit": r.hit, "total": r.total, "value": r.value}


def _point(p: Point) -> dict[str, Any]:
    return {"threshold": p.threshold, "alerts": p.alerts, "paged": p.paged, "share": p.share,
            "recall": _ratio(p.recall), "noise": p.noise}  # fmt: skip


def row_json(r: Row) -> dict[str, Any]:
    alert, page = r.item.alert, r.page
    return {
        "where": r.item.where,
        "index": r.item.index,
        "title": alert.title,
        "source": alert.source,
        "key": alert.key,
        "note": r.item.note,
        "expected": dataclasses.asdict(r.item.expected),
        "answers": None  # a rule decided without asking the model
        if r.answers is None
        else {
            "p_page": r.p_page,
            "team": r.team,
            "p_team": r.p_team,
            "severity_score": r.answers.severity_score,
        },
        "calibrated": sorted(r.answers.calibrated) if r.answers is not None else [],
        "action": page.action,
        "route": page.route,
        "severity": page.severity,
        "low_confidence": page.low_confidence,
        "rules": list(getattr(page, "rules", ())),
        "reason": page.reason,
    }


def to_json(report: Report) -> dict[str, Any]:
    f = report.figures
    s = f.suggestion
    noisy = [r.item.where for r in f.noise]
    suggestion = None
    if s is not None:
        suggestion = {
            "target": s.target, "seed": s.seed, "reached": s.reached, "threshold": s.threshold,
            "thresholds": s.thresholds,
            "fit": _point(s.fit), "held_out": _point(s.held_out),
            "current_held_out": _point(s.current_held_out), "toml": toml_lines(s.thresholds),
        }  # fmt: skip
    return {
        "file": report.file,
        "policy": report.policy,
        "gateway": report.gateway,
        "without_severity": report.without_severity,
        "severity_labels_removed": report.severity_labels_removed,
        "seconds": report.seconds,
        "thresholds": report.thresholds,
        "alerts": f.alerts,
        "decided_without_the_model": f.unasked,
        "page_recall": _ratio(f.recall),
        "missed_pages": [r.item.where for r in f.missed],
        "pages": f.pages,
        "noise": {"count": len(f.noise), **_ratio(Ratio(len(f.noise), f.pages)), "rows": noisy},
        "actions": f.actions,
        "team_accuracy": _ratio(f.team),
        "team_confusion": f.confusion,
        "severity_accuracy": {"exact": _ratio(f.severity_exact), "within_one": _ratio(f.severity_within_one)},
        "operating_point": _point(f.current),
        "sweep": [_point(p) for p in f.sweep],
        "suggestion": suggestion,
        "rows": [row_json(r) for r in report.rows],
    }


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def _p(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _where(item: Labelled) -> str:
    """`file.jsonl:3` for a payload's first alert, `file.jsonl:3 #2` for its second..."""
    where = Path(item.where).name
    return f"{where} #{item.index + 1}" if item.index else where


def _team(r: Row) -> str:
    return "- (not asked)" if r.team is None else f"{r.team} ({r.p_team or 0:.2f})"


def headline(report: Report) -> str:
    f = report.figures
    text = (
        f"{f.alerts} alert(s) of {Path(report.file).name} through {report.policy} "
        f"(gateway {report.gateway}, {report.seconds:.0f} s)"
    )
    if report.without_severity:
        text += (
            f"; the senders' `{report.without_severity}` label removed from "
            f"{report.severity_labels_removed} alert(s)"
        )
    if f.unasked:
        text += f"; {f.unasked} alert(s) decided by a rule without the model"
    return text


def summary(report: Report) -> list[tuple[str, str, str]]:
    """(figure, value, what it counts), as the terminal and report.md show them."""
    f = report.figures
    return [
        ("page recall", str(f.recall), "expected page, and paged (the uncertain band pages)"),
        ("noise", f"{len(f.noise)} of {f.pages} page(s) ({_pct(Ratio(len(f.noise), f.pages).value)})",
         "paged, expected a ticket or a drop"),
        ("actions", ", ".join(f"{a} {n}" for a, n in f.actions.items()), "what the router does"),
        ("team accuracy", str(f.team), "the model's team is the expected one"),
        ("severity, exact", str(f.severity_exact), "the decided level is the expected one"),
        ("severity, within one", str(f.severity_within_one), "at most one level off"),
    ]  # fmt: skip


def _sweep_rows(report: Report) -> list[Point]:
    """Every tenth threshold and the policy's own."""
    f = report.figures
    picked = [p for p in f.sweep if round(p.threshold * 100) % 10 == 0 and p.threshold != f.current.threshold]
    return sorted([*picked, f.current], key=lambda p: p.threshold)


def print_report(report: Report, console: Console) -> None:
    from rich.markup import escape
    from rich.table import Table

    f = report.figures
    console.print(escape(headline(report)))
    t = Table(title="the router on labelled alerts")
    for column in ("figure", "value", "what"):
        t.add_column(column)
    for line in summary(report):
        t.add_row(*(escape(c) for c in line))
    console.print(t)

    def listing(title: str, rows: Sequence[Row]) -> None:
        table = Table(title=title)
        for column in ("line", "alert", "expected", "p(page)", "team", "action", "reason"):
            table.add_column(column)
        for r in rows[:LISTED]:
            e = r.item.expected
            table.add_row(
                escape(_where(r.item)), escape(r.item.alert.title),
                f"{'page' if e.page else 'no page'}, {e.team}, {e.severity}", _p(r.p_page),
                escape(_team(r)), r.page.action, escape(r.page.reason),
            )  # fmt: skip
        if len(rows) > LISTED:
            table.caption = f"and {len(rows) - LISTED} more (report.json lists every one)"
        console.print(table)

    if f.missed:
        listing(f"missed pages ({len(f.missed)})", f.missed)
    if f.noise:
        listing(f"noise: paged, expected a ticket or a drop ({len(f.noise)})", f.noise)

    teams = list(f.confusion)
    c = Table(title="teams: expected (rows) x the model's (columns)")
    c.add_column("expected")
    for team in teams:
        c.add_column(escape(team), justify="right")
    for expected, row in f.confusion.items():
        c.add_row(escape(expected), *(str(row.get(team, 0)) for team in teams))
    console.print(c)

    s = Table(title="p(page) threshold sweep (`uncertain`: at or above it pages)")
    for column in ("threshold", "paged", "share", "page recall", "noise"):
        s.add_column(column, justify="right")
    for p in _sweep_rows(report):
        mark = " (policy)" if p is f.current else ""
        s.add_row(f"{p.threshold:.2f}{mark}", str(p.paged), _pct(p.share), str(p.recall), str(p.noise))
    console.print(s)

    if f.suggestion is not None:
        console.print(escape(suggestion_text(f.suggestion)))


def suggestion_lines(s: Suggestion) -> tuple[str, str, str]:
    """What was fitted, what it does on the held-out half, and what the policy does there now."""
    h, c = s.held_out, s.current_held_out
    unreached = "" if s.reached else f"no threshold reaches {s.target} (rules or floors decide), best: "
    return (
        f"suggested for page recall >= {s.target}: {unreached}p(page) >= {s.threshold:.2f} pages "
        f"(`uncertain`), fitted on {s.fit.alerts} alert(s) (recall {s.fit.recall}, seed {s.seed})",
        f"on the other {h.alerts}: recall {h.recall}, {h.paged} page(s) ({_pct(h.share)}), "
        f"{h.noise} of them noise",
        f"the policy now, on the same {c.alerts}: recall {c.recall}, {c.paged} page(s) "
        f"({_pct(c.share)}), {c.noise} of them noise",
    )


def suggestion_text(s: Suggestion) -> str:
    fitted, held, now = suggestion_lines(s)
    return "\n".join(
        [fitted, f"  {held}", f"  {now}", "paste into the policy (it replaces its [thresholds] table):",
         toml_lines(s.thresholds)]
    )  # fmt: skip


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(report: Report, plots: Sequence[Path] = ()) -> str:
    f = report.figures
    out = ["# Alert router eval", "", _md(headline(report)), ""]
    out += ["| figure | value | what |", "| --- | --- | --- |"]
    out += [f"| {a} | {_md(b)} | {c} |" for a, b, c in summary(report)]

    def listing(title: str, rows: Sequence[Row]) -> None:
        out.extend(["", f"## {title}", "", "| line | alert | expected | p(page) | team | action | reason |",
                    "| --- | --- | --- | --- | --- | --- | --- |"])  # fmt: skip
        for r in rows[:LISTED]:
            e = r.item.expected
            out.append(
                f"| {_md(_where(r.item))} | {_md(r.item.alert.title)} | "
                f"{'page' if e.page else 'no page'}, {e.team}, {e.severity} | {_p(r.p_page)} | "
                f"{_md(_team(r))} | {r.page.action} | {_md(r.page.reason)} |"
            )
        if len(rows) > LISTED:
            out.append(f"\nand {len(rows) - LISTED} more (report.json lists every one)")

    listing(f"Missed pages ({len(f.missed)})", f.missed)
    listing(f"Noise: paged, expected a ticket or a drop ({len(f.noise)})", f.noise)
    teams = list(f.confusion)
    out += ["", "## Teams: expected (rows) x the model's (columns)", "",
            "| expected | " + " | ".join(teams) + " |", "| --- |" + " --- |" * len(teams)]  # fmt: skip
    for expected, counts in f.confusion.items():
        out.append(f"| {expected} | " + " | ".join(str(counts.get(t, 0)) for t in teams) + " |")
    out += ["", "## p(page) threshold sweep", ""]
    out += ["`uncertain` moved (at or above it pages), every alert re-decided by the policy.", ""]
    out += ["| threshold | paged | share | page recall | noise |", "| --- | --- | --- | --- | --- |"]
    for p in _sweep_rows(report):
        mark = " (policy)" if p is f.current else ""
        out.append(f"| {p.threshold:.2f}{mark} | {p.paged} | {_pct(p.share)} | {p.recall} | {p.noise} |")
    if f.suggestion is not None:
        fitted, held, now = suggestion_lines(f.suggestion)
        out += ["", "## Suggested thresholds", "", f"{fitted[0].upper()}{fitted[1:]}.", "", f"- {held}",
                f"- {now}", "", "Paste into the policy (it replaces its `[thresholds]` table):", "",
                "```toml", toml_lines(f.suggestion.thresholds), "```"]  # fmt: skip
    if plots:
        out += ["", *(f"![{p.stem}]({p.name})" for p in plots)]
    return "\n".join(out) + "\n"


def plot(report: Report, out: Path) -> list[Path]:
    """sweep.png (page recall against the share of alerts paged as the threshold moves, the
    policy's point marked; p(page) by expected label) and teams.png (the confusion matrix)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    f = report.figures
    t = report.thresholds
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.4))
    curve = [p for p in f.sweep if p.recall.value is not None]
    left.plot([p.share for p in curve], [p.recall.value for p in curve], marker=".", markersize=3,
              label="p(page) threshold swept")  # fmt: skip
    marks: dict[tuple[float, float], list[float]] = {}  # every tenth threshold, by where it lands
    for p in curve:
        if round(p.threshold * 100) % 10 == 0:
            marks.setdefault((p.share, p.recall.value or 0.0), []).append(p.threshold)
    for (x, y), at in marks.items():
        text = f"{at[0]:.1f}" if len(at) == 1 else f"{at[0]:.1f}-{at[-1]:.1f}"
        left.annotate(text, (x, y), textcoords="offset points", xytext=(4, -10), fontsize=7)
    if f.current.recall.value is not None:
        left.scatter([f.current.share], [f.current.recall.value], marker="*", s=160, color="red", zorder=3,
                     label=f"the policy (uncertain = {f.current.threshold})")  # fmt: skip
    if f.suggestion is not None:
        chosen = next(p for p in f.sweep if p.threshold == f.suggestion.threshold)
        if chosen.recall.value is not None:
            left.scatter([chosen.share], [chosen.recall.value], marker="D", s=50, color="green", zorder=3,
                         label=f"suggested ({chosen.threshold:.2f})")  # fmt: skip
    left.set_xlabel("share of alerts paged (labels: the p(page) threshold)")
    left.set_ylabel("page recall")
    left.set_xlim(0, 1.02)
    left.set_ylim(0, 1.02)
    left.legend(loc="lower right", fontsize=8)
    left.set_title("page recall against pages")
    groups = [[r.p_page for r in report.rows if r.item.expected.page is label and r.p_page is not None]
              for label in (True, False)]  # fmt: skip
    labels = [f"expected page ({len(groups[0])})", f"expected no page ({len(groups[1])})"]
    bins = [i / 20 for i in range(21)]
    right.hist(groups, bins=bins, stacked=True, color=["tab:red", "tab:blue"], label=labels)
    for name, style in (("ticket", ":"), ("uncertain", "-"), ("page", "--")):
        if isinstance(t.get(name), float):
            right.axvline(t[name], color="black", linestyle=style, linewidth=1, label=f"{name} = {t[name]}")
    right.set_xlabel("p(page)")
    right.set_ylabel("alerts")
    right.legend(fontsize=8)
    right.set_title("p(page) by expected label")
    fig.suptitle(f"{f.alerts} alerts of {Path(report.file).name}")
    fig.tight_layout()
    sweep_png = out / "sweep.png"
    fig.savefig(sweep_png, dpi=110)
    plt.close(fig)

    teams = list(f.confusion)
    matrix = [[f.confusion[e].get(d, 0) for d in teams] for e in teams]
    fig, ax = plt.subplots(figsize=(1.6 + 1.1 * len(teams), 1.2 + 1.0 * len(teams)))
    ax.imshow(matrix, cmap="Blues")
    most = max((n for row in matrix for n in row), default=0)
    for i, row in enumerate(matrix):
        for j, n in enumerate(row):
            color = "white" if n > most / 2 else "black"
            ax.text(j, i, str(n), ha="center", va="center", fontsize=9, color=color)
    ax.set_xticks(range(len(teams)), teams, rotation=30, ha="right")
    ax.set_yticks(range(len(teams)), teams)
    ax.set_xlabel("the model's team")
    ax.set_ylabel("expected team")
    ax.set_title(f"teams: accuracy {f.team}", fontsize=10)
    fig.tight_layout()
    teams_png = out / "teams.png"
    fig.savefig(teams_png, dpi=110)
    plt.close(fig)
    return [sweep_png, teams_png]


def write(report: Report, out: Path) -> tuple[list[Path], str | None]:
    """report.json, report.md and the plots in `out`; the paths written, and why there are no plots
    when matplotlib is not installed (the router's image has none)."""
    import importlib.util

    out.mkdir(parents=True, exist_ok=True)
    plots: list[Path] = []
    skipped = None
    if importlib.util.find_spec("matplotlib") is None:
        skipped = "no plots: matplotlib is not installed (pip install 'dgemma-kit[loadtest]')"
    else:
        plots = plot(report, out)
    data, md = out / "report.json", out / "report.md"
    data.write_text(json.dumps(to_json(report), indent=1) + "\n")
    md.write_text(markdown(report, plots))
    return [data, md, *plots], skipped


# -- the command --------------------------------------------------------------------------------


def run(
    settings: AlertRouterSettings,
    file: Path,
    *,
    out: Path,
    strip_severity: bool = False,
    target: float | None = None,
    seed: int = 0,
    concurrency: int = 4,
    id_tokens: IdTokens | None = None,
) -> int:
    """`dgemma alerts eval`: read, check, classify (a progress bar on stderr), score, print, write;
    `id_tokens` mints the gateway's ID tokens (a private service)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    if target is not None and not 0 < target <= 1:
        raise ConfigError(f"--suggest must be a page recall in (0, 1], got {target}")
    if concurrency < 1:
        raise ConfigError(f"--concurrency must be at least 1, got {concurrency}")
    policy = Policy.load(settings.alerts_policy_file)
    items = read_labelled(file)
    check(items, policy)
    removed, label = 0, severity_label(policy)
    if strip_severity:
        stripped = [dataclasses.replace(i, alert=without_severity(i.alert, label)) for i in items]
        removed = sum(a.alert is not b.alert for a, b in zip(items, stripped, strict=True))
        items = stripped
    if target is not None and sum(i.expected.page for i in items) < 2:
        raise LabelledFileError(f"{file}: --suggest needs at least 2 alerts expected to page (one per half)")

    async def go() -> list[Row]:
        gateway = JevClient(
            settings.alerts_gateway_url,
            api_key=settings.gateway_key(),
            id_tokens=id_tokens,
            timeout_s=300.0,
            retry=RETRY,
        )
        columns = (TextColumn("alerts eval"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        try:
            with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
                task = bar.add_task("classify", total=len(items))
                return await classify(
                    items, policy, gateway, concurrency=concurrency, progress=lambda: bar.advance(task)
                )
        finally:
            await gateway.aclose()

    started = time.monotonic()
    rows = asyncio.run(go())
    report = Report(
        file=str(file),
        policy=policy.source,
        gateway=settings.alerts_gateway_url,
        without_severity=label if strip_severity else None,
        severity_labels_removed=removed,
        seconds=round(time.monotonic() - started, 1),
        thresholds=policy.spec.thresholds.model_dump(mode="json"),
        figures=score(rows, policy, target=target, seed=seed),
        rows=rows,
    )
    console = Console(width=None if sys.stdout.isatty() else 120, soft_wrap=False)
    print_report(report, console)
    written, skipped = write(report, out)
    if skipped:
        console.print(skipped)
    console.print(escape(f"wrote {out}: {', '.join(p.name for p in written)}"))
    return 0
