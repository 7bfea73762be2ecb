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
