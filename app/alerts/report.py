"""`dgemma alerts report`: what a shadow trial's record says. In shadow mode every firing alert
paged as it was sent, and the record holds what the policy would have done instead:

- pages avoided: sent as pages, the policy would have made them tickets or drops;
- pages it would have missed: of those, the ones that look like real incidents, since the trial has
  no human verdict: the sender called the alert critical, or it stayed firing for `missed_after`
  or longer (a transient alert resolves by itself: PagerDuty's auto-pause draws the same line);
- team agreement: the model's team against the sender's own team label, where alerts carry one.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field

from app.alerts.audit import AuditRecord


@dataclass(frozen=True)
class Row:
    record: AuditRecord
    firing_for: dt.timedelta  # to its resolution, or to the record's end when still firing
    resolved: bool


@dataclass
class ShadowSummary:
    first: dt.datetime | None = None
    last: dt.datetime | None = None
    decisions: int = 0  # shadow decisions (one per alert episode)
    sent_pages: int = 0
    would: Counter[str] = field(default_factory=Counter)
    unclassified: int = 0  # the service did not answer: would have paged unclassified
    avoided: list[Row] = field(default_factory=list)
    missed: list[Row] = field(default_factory=list)
    team_compared: int = 0
    team_agreed: int = 0
    disagreements: Counter[tuple[str, str]] = field(default_factory=Counter)  # (sender's, model's)
    avoided_by_alert: Counter[str] = field(default_factory=Counter)
    act_decisions: int = 0  # records of act mode in the same file (not summarised)
    sent_by_day: Counter[dt.date] = field(default_factory=Counter)
    would_page_by_day: Counter[dt.date] = field(default_factory=Counter)

    @property
    def team_agreement(self) -> float | None:
        return self.team_agreed / self.team_compared if self.team_compared else None


def summarize(
    records: list[AuditRecord], *, missed_after: dt.timedelta, team_label: str = "team"
) -> ShadowSummary:
    """The shadow trial's summary from its audit records (in any order)."""
    out = ShadowSummary()
    if not records:
        return out
    out.first = min(r.at for r in records)
    out.last = max(r.at for r in records)
    resolved_at: dict[str, dt.datetime] = {}
    for r in records:
        if r.event == "resolved":
            resolved_at[r.key] = max(r.at, resolved_at.get(r.key, r.at))
    for r in sorted(records, key=lambda r: r.at):
        if r.event != "decision":
            continue
        if r.mode != "shadow" or r.would is None:
            out.act_decisions += 1
            continue
        out.decisions += 1
        out.sent_pages += r.action == "page"
        out.would[r.would.action] += 1
        out.sent_by_day[r.at.date()] += r.action == "page"
        out.would_page_by_day[r.at.date()] += r.would.action == "page"
        out.unclassified += not r.would.classified
        start = r.started_at or r.at
        end = resolved_at.get(r.key)
        # An episode's resolution comes after its decision; an earlier one closed an older episode.
        done = end is not None and end >= r.at
        row = Row(r, (end if done and end else out.last) - start, done)
        if r.action == "page" and r.would.action != "page":
            out.avoided.append(row)
            out.avoided_by_alert[r.alert] += 1
            critical = (r.source_severity or "").lower() == "critical"
            if critical or row.firing_for >= missed_after:
                out.missed.append(row)
        sender_team = r.labels.get(team_label)
        if sender_team and r.team:
            out.team_compared += 1
            if sender_team == r.team:
                out.team_agreed += 1
            else:
                out.disagreements[sender_team, r.team] += 1
    return out


def render(summary: ShadowSummary, *, missed_after: dt.timedelta, source: str) -> str:
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


def plot(summary: ShadowSummary, path: str) -> None:
    """Per day: pages sent (the sender's), pages the policy would have sent, and missed pages."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sent, would = summary.sent_by_day, summary.would_page_by_day
    lost: Counter[dt.date] = Counter(row.record.at.date() for row in summary.missed)
    order = sorted(set(sent) | set(would))
    x = range(len(order))
    fig, ax = plt.subplots(figsize=(max(6, len(order) * 0.6), 3.5))
    ax.bar([i - 0.3 for i in x], [sent[d] for d in order], 0.3, label="paged (as sent)")
    ax.bar(list(x), [would[d] for d in order], 0.3, label="the policy would page")
    ax.bar([i + 0.3 for i in x], [lost[d] for d in order], 0.3, label="would have missed", color="tab:red")
    ax.set_xticks(list(x), [f"{d:%m-%d}" for d in order], rotation=45)
    ax.set_ylabel("alerts")
    ax.set_title("Shadow trial, per day")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
