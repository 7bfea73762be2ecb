"""The labelled file of `dgemma alerts eval`: one labelled delivery per line (JSON Lines),
`{"source": "alertmanager", "payload": {...}, "expected": [{"page": true, "team": "database",
"severity": "critical"}, ...], "note": "..."}`, one `expected` entry per alert of the payload, in the
order `app.alerts.formats.parse` returns them.

With `--without-severity`, each alert loses its sender's severity label before it is asked (see
`without_severity`): the model decides, not the severity floor.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, StrictBool, ValidationError

from app.alerts.formats import describe, parse
from app.alerts.policy import Policy
from app.alerts.records import Alert, Severity, Source
from app.core.errors import ServiceError
from app.core.models import StrictModel
from evals.errors import LabelledFileError

# The sender's severity label (`without_severity` removes it, any case), unless the policy's floor
# names another.
SEVERITY_LABEL = "severity"


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
