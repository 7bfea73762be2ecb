"""The eval's and the shadow trial's reports: report.json, the terminal's tables (rich) and
report.md."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.alerts.classify import Row
from evals.alerts.labelled import Labelled
from evals.alerts.score import Figures, Point, Ratio, Suggestion, toml_lines
from evals.alerts.shadow import ShadowSummary

if TYPE_CHECKING:
    from rich.console import Console

LISTED = 20  # noise rows shown on the terminal and in report.md (report.json has every row)


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


def shadow_markdown(summary: ShadowSummary, *, missed_after: dt.timedelta, source: str) -> str:
    """The summary as Markdown (printed, and written as report.md)."""
    s = summary
    if not s.decisions:
        note = f" ({s.act_decisions} act-mode decisions are not a trial)" if s.act_decisions else ""
        return f"# Shadow trial: {source}\n\nNo shadow-mode decisions in the record{note}.\n"
    span = f"{s.first:%Y-%m-%d %H:%M} to {s.last:%Y-%m-%d %H:%M} UTC" if s.first and s.last else ""

    def pct(n: int) -> str:
        return f"{n} ({n / s.decisions:.0%})"

    lines = [
        f"# Shadow trial: {source}",
        "",
        f"{s.decisions} firing alerts, {span}. Each paged as sent; the policy's decision was recorded.",
        "",
        "| | alerts |",
        "| --- | ---: |",
        f"| paged as sent | {pct(s.sent_pages)} |",
        *(f"| the policy would: {a} | {pct(s.would[a])} |" for a in ("page", "ticket", "drop")),
        f"| of which not classified (service down or slow: would page unclassified) | {s.unclassified} |",
        f"| **pages avoided** (would be a ticket or a drop) | **{pct(len(s.avoided))}** |",
        f"| **pages it would have missed** (of those: sender-critical, or firing >= "
        f"{missed_after.total_seconds() / 60:g} min) | **{len(s.missed)}** |",
    ]
    if s.team_compared:
        lines.append(
            f"| team agreement with the sender's team label | {s.team_agreed}/{s.team_compared} "
            f"({s.team_agreement:.0%}) |"
        )
    else:
        lines.append("| team agreement | no alert carried the sender's team label |")
    if s.missed:
        lines += ["", "## Pages it would have missed", ""]
        lines += [
            "| alert | key | would | p(page) | why missed | reason |",
            "| --- | --- | --- | ---: | --- | --- |",
        ]
        for row in s.missed:
            r = row.record
            why = "sender: critical" if (r.source_severity or "").lower() == "critical" else ""
            held = f"firing {row.firing_for.total_seconds() / 60:.0f} min{'' if row.resolved else ' (still)'}"
            why = f"{why}; {held}" if why else held
            p = f"{r.p_page:.2f}" if r.p_page is not None else "-"
            lines.append(f"| {r.alert} | {r.key} | {r.would.action if r.would else '-'} | {p} | {why} | "
                         f"{(r.would.reason if r.would else '').replace('|', '/')} |")  # fmt: skip
    if s.avoided_by_alert:
        lines += ["", "## Pages avoided, by alert", "", "| alert | avoided |", "| --- | ---: |"]
        lines += [f"| {name} | {n} |" for name, n in s.avoided_by_alert.most_common(20)]
    if s.disagreements:
        lines += ["", "## Team disagreements (sender's label, model's team)", ""]
        lines += ["| sender | model | alerts |", "| --- | --- | ---: |"]
        lines += [f"| {a} | {b} | {n} |" for (a, b), n in s.disagreements.most_common(20)]
    return "\n".join(lines) + "\n"
