"""The decision record: one line for every decision on a firing alert (page, ticket or drop; the
late classification of a fallback page) and for every resolution, so that no alert is ever handled
without a trace, and so that shadow mode's trial can be read back (`dgemma alerts report`).

Each record is a log line (logger `app.alerts.audit`, the record under its `audit` field: in Cloud
Logging, `jsonPayload.audit`) and, when `DGEMMA_ALERTS_AUDIT_FILE` is set, a line of its own JSON
Lines file: the audit sink.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from app.alerts.records import Action, Alert, Page, Severity
from app.core.models import StrictModel

log = logging.getLogger("app.alerts.audit")

Mode = Literal["act", "shadow"]
Event = Literal["decision", "update", "resolved"]


class Would(StrictModel):
    """Shadow mode: what the policy would have done (nothing of it was sent)."""

    action: Action
    route: str
    severity: Severity
    classified: bool
    reason: str
    rules: list[str] = Field(default_factory=list)


class AuditRecord(StrictModel):
    """One decision (or resolution) about one alert."""

    at: dt.datetime
    event: Event
    mode: Mode
    key: str
    source: str
    alert: str
    labels: dict[str, str] = Field(default_factory=dict)
    action: Action | None = None  # what was sent (None for a resolution)
    route: str | None = None
    severity: Severity | None = None
    classified: bool = False
    low_confidence: bool = False
    p_page: float | None = None
    team: str | None = None
    p_team: float | None = None
    source_severity: str | None = None
    reason: str = ""
    rules: list[str] = Field(default_factory=list)
    would: Would | None = None
    started_at: dt.datetime | None = None

    @classmethod
    def of(
        cls, page: Page, *, event: Event, mode: Mode, would: Page | None = None, source_label: str
    ) -> AuditRecord:
        read = (would or page).router_answers
        return cls(
            **_alert_fields(page.alert, source_label),
            at=dt.datetime.now(dt.UTC),
            event=event,
            mode=mode,
            action=page.action,
            route=page.route,
            severity=page.severity,
            classified=page.classified,
            low_confidence=page.low_confidence,
            p_page=read.p_page if read else None,
            team=read.team if read else None,
            p_team=read.p_team if read else None,
            reason=page.reason,
            rules=list(page.rules),
            would=None
            if would is None
            else Would(
                action=would.action,
                route=would.route,
                severity=would.severity,
                classified=would.classified,
                reason=would.reason,
                rules=list(would.rules),
            ),
        )

    @classmethod
    def resolved(cls, alert: Alert, *, mode: Mode, source_label: str, sinks: list[str]) -> AuditRecord:
        reason = f"resolved: to {', '.join(sinks)}" if sinks else "resolved: no sink had it"
        return cls(
            **_alert_fields(alert, source_label), at=dt.datetime.now(dt.UTC), event="resolved", mode=mode,
            reason=reason,
        )  # fmt: skip


def _alert_fields(alert: Alert, source_label: str) -> dict[str, Any]:
    return {
        "key": alert.key,
        "source": alert.source,
        "alert": alert.title,
        "labels": dict(alert.labels),
        "source_severity": alert.labels.get(source_label) or None,
        "started_at": alert.started_at,
    }


class AuditLog:
    """Writes each record as a log line and, with a file, as a line of that file (appended, flushed
    before the delivery is answered: a record is on disk before the sender hears back)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._lock = threading.Lock()
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("a", encoding="utf-8") if path is not None else None

    def write(self, record: AuditRecord) -> None:
        line = record.model_dump(mode="json", exclude_none=True)
        what = record.action or record.event
        shadow = f" (shadow: would {record.would.action})" if record.would else ""
        log.info("%s %s: %s%s", what, record.alert, record.reason, shadow, extra={"audit": line})
        if self._file is not None:
            text = record.model_dump_json(exclude_none=True) + "\n"
            with self._lock:
                self._file.write(text)
                self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def read_records(path: Path) -> list[AuditRecord]:
    """Records from an audit file (JSON Lines), or from Cloud Logging's export of the router's log
    (`gcloud logging read ... --format=json`: a JSON array of entries, the record under
    `jsonPayload.audit`). Raises ValueError naming the line."""
    import json

    text = path.read_text()
    if text.lstrip().startswith("["):
        entries = json.loads(text)
        rows = [e.get("jsonPayload", {}).get("audit") for e in entries if isinstance(e, dict)]
        return [AuditRecord.model_validate(r) for r in rows if r]
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if "audit" in data:  # a line of the router's own log
                data = data["audit"]
            elif "logger" in data:  # another line of that log
                continue
            records.append(AuditRecord.model_validate(data))
        except ValueError as e:
            raise ValueError(f"{path}:{number}: not an audit record ({str(e)[:300]})") from e
    return records
