"""The records the router's parts share: one normalised alert, the model's answers about it, and the
page that goes out for it."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Literal

from app.core.errors import EngineBadAnswer
from app.jev.wire import ChoiceAnswer, NoulAnswer, ScoreAnswer, SystemOneResponse

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


@dataclass(frozen=True)
class RouterAnswers:
    """The gateway's answers to the policy's three questions (`Policy.request`: page? team? severity?),
    as the router reads them."""

    p_page: float  # p(yes) of "page now?"
    team: str  # the team the model chose (its most probable)
    p_team: float  # that team's probability
    severity_score: float  # the expected severity level, 0-based (Jev's score: a probability-weighted mean)
    calibrated: frozenset[str] = frozenset()  # the questions whose probabilities the gateway calibrated
    wire: dict[str, Any] = field(default_factory=dict)  # the Jev answers as JSON: what the sinks show

    @classmethod
    def of(cls, response: SystemOneResponse) -> RouterAnswers:
        """Read once from the typed response; EngineBadAnswer if an answer is missing or of another type."""
        page, team, severity = (response.answers.get(name) for name in ("page", "team", "severity"))
        if not (
            isinstance(page, NoulAnswer)
            and isinstance(team, ChoiceAnswer)
            and isinstance(severity, ScoreAnswer)
            and team.choice in team.probabilities
        ):
            raise EngineBadAnswer(
                "the decision service did not answer the policy's questions (a noul `page`, a choice "
                f"`team`, a score `severity`): {sorted(response.answers)}"
            )
        return cls(
            p_page=page.noul,
            team=team.choice,
            p_team=team.probabilities[team.choice],
            severity_score=severity.score,
            calibrated=frozenset(name for name, d in response.diagnostics.items() if d.calibrated),
            wire={name: answer.model_dump(mode="json") for name, answer in response.answers.items()},
        )


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
