"""The records the router's parts share: one normalised alert, and the page that goes out for it
(the model's answers about it are app/alerts/answers.py's).

Standard library only: the toy's training builds the states it trains on with `Alert.state()`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # not at run time: this module stays standard library only
    from app.alerts.answers import RouterAnswers

Source = Literal["alertmanager", "grafana", "cloud-monitoring"]
SOURCES: tuple[Source, ...] = ("alertmanager", "grafana", "cloud-monitoring")
Status = Literal["firing", "resolved"]
Action = Literal["page", "ticket", "drop"]
Severity = Literal["critical", "error", "warning", "info"]  # PagerDuty Events v2's four


@dataclass(frozen=True)
class Alert:
    """One alert, whatever sent it. `key` is stable for the alert's whole life (Alertmanager's and
    Grafana's fingerprint, Cloud Monitoring's incident id, prefixed by the source): every delivery
    about it (the page, its update with the classification, its resolution) carries it, so a sink
    deduplicates on it (PagerDuty's `dedup_key`)."""

    source: Source
    key: str
    status: Status
    title: str  # alertname, rule or policy name
    summary: str  # the one-line description a person reads first
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    started_at: dt.datetime | None = None
    url: str | None = None  # where to look: generatorURL, the incident's URL

    def state(self) -> dict[str, Any]:
        """What the model reads about the alert (the Jev request's `state`)."""
        out: dict[str, Any] = {"alert": self.title, "summary": self.summary, "source": self.source}
        if self.labels:
            out["labels"] = self.labels
        if self.annotations:
            out["annotations"] = {k: v for k, v in self.annotations.items() if k != "summary"}
        if self.started_at is not None:
            out["started_at"] = self.started_at.isoformat()
        return out


def labels_fingerprint(labels: Mapping[str, str]) -> str:
    """Prometheus's label-set fingerprint (`model.LabelSet.Fingerprint`), which Alertmanager sends
    as `fingerprint`: FNV-1a 64 over the names in byte order, each name and value followed by a
    0xff byte, as 16 hex digits."""
    h = 0xCBF29CE484222325
    for name in sorted(labels):  # code-point order is UTF-8 byte order
        for part in (name.encode(), b"\xff", labels[name].encode(), b"\xff"):
            for byte in part:
                h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def summary_of(title: str, annotations: Mapping[str, str]) -> str:
    """An Alertmanager-shaped alert's summary: its `summary` annotation, else its `description`,
    else its title."""
    for key in ("summary", "description"):
        text = annotations.get(key, "").strip()
        if text:
            return text
    return title


@dataclass(frozen=True)
class Page:
    """What goes out for a firing alert: the action and route the policy chose (or the fallback),
    with the answers behind them."""

    alert: Alert
    action: Action
    route: str  # a route name of the policy (one team's sinks), or its fallback route
    severity: Severity
    classified: bool  # False: paged on the fallback route before (or without) the model's answer
    low_confidence: bool = False  # in the policy's uncertain band: paged rather than dropped
    answers: dict[str, Any] = field(default_factory=dict)  # the Jev answers, probabilities included
    reason: str = ""  # why this action (thresholds met, budget missed, service not ready...)
    calibrated: bool = False  # p(page) was calibrated by the gateway (DGEMMA_CALIBRATION_FILE)
    rules: tuple[str, ...] = ()  # the policy's rules that acted on it (and "floor" for the severity floor)
    # What the policy decided on, for this process's audit record. Not kept in the ledger (`answers`
    # is): a page read back from it is delivered again, never recorded again.
    router_answers: RouterAnswers | None = field(default=None, compare=False)
