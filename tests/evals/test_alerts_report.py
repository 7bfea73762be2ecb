"""`dgemma alerts report`: a shadow trial's record read back (from the audit file, the router's own
log, or Cloud Logging's export), and what it counts as avoided and as missed."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from app.alerts.audit import AuditRecord, Would, read_records
from deploy.cli import main
from evals.alerts.render import shadow_markdown as render
from evals.alerts.shadow import summarize

pytestmark = pytest.mark.unit

T0 = dt.datetime(2026, 11, 2, 9, 0, tzinfo=dt.UTC)


def shadow(
    key: str,
    would: str,
    *,
    minutes: float = 0,
    severity: str | None = None,
    team: str = "database",
    labels: dict[str, str] | None = None,
    classified: bool = True,
) -> AuditRecord:
    at = T0 + dt.timedelta(minutes=minutes)
    return AuditRecord(
        at=at, event="decision", mode="shadow", key=key, source="alertmanager", alert=key.title(),
        labels={**({"severity": severity} if severity else {}), **(labels or {})}, action="page",
        route="oncall", severity="error", classified=False, p_page=0.1, team=team, p_team=0.9,
        source_severity=severity, reason="shadow mode: paged as sent", started_at=at,
        would=Would.model_validate(
            {"action": would, "route": "database", "severity": "info", "classified": classified,
             "reason": "p 0.10"}
        ),
    )  # fmt: skip


def resolved(key: str, minutes: float) -> AuditRecord:
    return AuditRecord(at=T0 + dt.timedelta(minutes=minutes), event="resolved", mode="shadow", key=key,
                       source="alertmanager", alert=key.title())  # fmt: skip


def test_avoided_and_missed_pages() -> None:
    records = [
        shadow("blip", "ticket"),
        resolved("blip", 4),  # resolved by itself within minutes: avoided, not missed
        shadow("crit", "drop", minutes=1, severity="critical"),  # the sender said critical: missed
        resolved("crit", 2),
        shadow("long", "ticket", minutes=2),  # still firing at the record's end (60 min on): missed
        shadow("paged", "page", minutes=3, labels={"team": "database"}),
        shadow("wrong", "page", minutes=4, team="network", labels={"team": "database"}),
        shadow("down", "page", minutes=5, classified=False),
        shadow("last", "ticket", minutes=62),
        resolved("last", 63),
    ]
    s = summarize(records, missed_after=dt.timedelta(minutes=30))
    assert (s.decisions, s.sent_pages, dict(s.would)) == (7, 7, {"ticket": 3, "drop": 1, "page": 3})
    assert [r.record.key for r in s.avoided] == ["blip", "crit", "long", "last"]
    assert [r.record.key for r in s.missed] == ["crit", "long"]
    assert s.missed[1].firing_for == dt.timedelta(minutes=61) and not s.missed[1].resolved
    assert (s.team_compared, s.team_agreed, dict(s.disagreements)) == (2, 1, {("database", "network"): 1})
    assert s.unclassified == 1
    text = render(s, missed_after=dt.timedelta(minutes=30), source="trial")
    assert "| **pages avoided** (would be a ticket or a drop) | **4 (57%)** |" in text
    assert (
        "**2** |" in text
        and "| Crit | crit | drop | 0.10 | sender: critical; firing 1 min | p 0.10 |" in text
    )
    assert "| team agreement with the sender's team label | 1/2 (50%) |" in text
    # A longer threshold: only the sender-critical one is missed.
    assert [r.record.key for r in summarize(records, missed_after=dt.timedelta(hours=2)).missed] == ["crit"]


def test_an_earlier_episodes_resolution_does_not_close_a_later_one() -> None:
    records = [resolved("again", 0), shadow("again", "ticket", minutes=10), shadow("x", "page", minutes=70)]
    (row,) = summarize(records, missed_after=dt.timedelta(minutes=30)).missed
    assert row.record.key == "again" and not row.resolved


def _lines(records: list[AuditRecord]) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json", exclude_none=True) for r in records]


def test_the_record_is_read_from_the_file_the_log_or_cloud_logging(tmp_path: Path) -> None:
    records = [shadow("a", "ticket"), resolved("a", 3)]
    plain = tmp_path / "audit.jsonl"
    plain.write_text("".join(json.dumps(r) + "\n" for r in _lines(records)))
    log = tmp_path / "router.log"  # the router's JSON log: other lines beside the records
    other = {"message": "started", "logger": "app", "severity": "INFO"}
    logged = [other, *({"logger": "app.alerts.audit", "audit": r} for r in _lines(records))]
    log.write_text("\n".join(json.dumps(x) for x in logged))
    export = tmp_path / "export.json"  # gcloud logging read --format=json
    export.write_text(
        json.dumps([{"jsonPayload": {"audit": r}} for r in _lines(records)] + [{"textPayload": "x"}])
    )
    for path in (plain, log, export):
        assert [(r.key, r.event) for r in read_records(path)] == [("a", "decision"), ("a", "resolved")], path
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(_lines(records)[0]) + '\n{"at": 1}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:2: not an audit record"):
        read_records(bad)


def test_the_command_prints_writes_and_plots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    audit = tmp_path / "audit.jsonl"
    records = [
        shadow("a", "ticket"),
        shadow("b", "page", minutes=1500, severity="critical"),
        resolved("a", 3),
    ]
    audit.write_text("".join(json.dumps(r) + "\n" for r in _lines(records)))
    assert main(["alerts", "report", str(audit), "--out", str(tmp_path / "out")]) == 0
    assert "pages avoided" in capsys.readouterr().out
    assert (tmp_path / "out" / "report.md").read_text().startswith(f"# Shadow trial: {audit}")
    assert (tmp_path / "out" / "shadow.png").read_bytes()[:4] == b"\x89PNG"
    (tmp_path / "bad.jsonl").write_text("nope\n")
    assert main(["alerts", "report", str(tmp_path / "bad.jsonl")]) == 2
    assert "bad.jsonl:1" in capsys.readouterr().err
    assert main(["alerts", "report", str(tmp_path / "absent.jsonl")]) == 2
    assert main(["alerts", "report", str(audit), "--missed-after", "0"]) == 2
