"""The routing policy (a TOML file): the questions asked about an alert, the thresholds that turn the
answers into page / ticket / drop, the uncertain band, the rules and the severity floor around the
model, teams and their routes, and the sinks.

`Policy.request(alert)` is the Jev request for one alert; `Policy.decide(alert, answers)` the one
decision function (answers None: a rule decides without the model): the model's verdict, then small
steps in order (the rule, the severity floor, the route's drop switch, an unsure team), each returning
a new `Verdict`; `Policy.fallback(alert, reason)` the page that goes out unclassified;
`Policy.as_sent(alert)` shadow mode's page.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, model_validator

from app.alerts.answers import RouterAnswers
from app.alerts.records import Action, Alert, Page, Severity
from app.alerts.rules import Floor, Rule, at_least
from app.alerts.sinks import SinkConfig, SinkConfigError, parse_sink_configs
from app.core.config import ConfigError
from app.core.errors import InvalidRequest
from app.core.models import StrictModel, validation_problems
from app.jev.wire import SystemOneRequest, check_limits

SEVERITIES: tuple[Severity, ...] = ("info", "warning", "error", "critical")


class PolicyError(ConfigError):
    """The policy file is not usable; the message names the file and the line or field."""


class Thresholds(StrictModel):
    page: float = Field(0.7, ge=0, le=1)
    uncertain: float = Field(0.4, ge=0, le=1)
    ticket: float = Field(0.15, ge=0, le=1)
    page_severity: Severity = "critical"
    team_confidence: float = Field(0.5, ge=0, le=1)

    @model_validator(mode="after")
    def _ordered(self) -> Thresholds:
        if not self.ticket <= self.uncertain <= self.page:
            raise ValueError(
                f"expected ticket <= uncertain <= page, got {self.ticket}, {self.uncertain}, {self.page}"
            )
        return self


class Questions(StrictModel):
    page: str = Field(min_length=1)
    team: str = Field(min_length=1)
    severity: str = Field(min_length=1)


class SeverityScale(StrictModel):
    levels: list[Severity] = Field(min_length=2)

    @model_validator(mode="after")
    def _increasing(self) -> SeverityScale:
        ranks = [SEVERITIES.index(level) for level in self.levels]
        if ranks != sorted(set(ranks)):
            raise ValueError(f"levels must be distinct and least severe first ({', '.join(SEVERITIES)})")
        return self


class Team(StrictModel):
    description: str = Field(min_length=1)
    route: str


class Route(StrictModel):
    page: list[str] = Field(min_length=1)
    ticket: list[str] = Field(default_factory=list)
    drop: bool = False  # the model may drop this route's alerts (below `ticket`); off: a ticket instead


class PolicyFile(StrictModel):
    fallback_route: str
    thresholds: Thresholds = Thresholds()
    questions: Questions
    severity: SeverityScale
    teams: dict[str, Team] = Field(min_length=1)
    routes: dict[str, Route] = Field(min_length=1)
    sinks: dict[str, dict[str, Any]] = Field(min_length=1)  # each a sink config (app.alerts.sinks)
    floor: Floor = Floor()
    rules: list[Rule] = Field(default_factory=list)

    @model_validator(mode="after")
    def _references(self) -> PolicyFile:
        for i, rule in enumerate(self.rules):
            if rule.team is not None and rule.team not in self.teams:
                known = ", ".join(self.teams)
                raise ValueError(f"rules[{i}] ({rule.name}): unknown team {rule.team!r} ({known})")
        names = [rule.name for rule in self.rules]
        if len(set(names)) != len(names):
            raise ValueError("rules: two rules share a name (a page's reason names its rule)")
        if self.fallback_route not in self.routes:
            raise ValueError(
                f"fallback_route {self.fallback_route!r} is not one of the routes ({', '.join(self.routes)})"
            )
        for name, team in self.teams.items():
            if team.route not in self.routes:
                raise ValueError(
                    f"teams.{name}.route: unknown route {team.route!r} ({', '.join(self.routes)})"
                )
        for name, route in self.routes.items():
            for kind, sinks in (("page", route.page), ("ticket", route.ticket)):
                for i, sink in enumerate(sinks):
                    if sink not in self.sinks:
                        raise ValueError(
                            f"routes.{name}.{kind}[{i}]: unknown sink {sink!r} ({', '.join(self.sinks)})"
                        )
        if self.thresholds.page_severity not in self.severity.levels:
            raise ValueError(
                f"thresholds.page_severity {self.thresholds.page_severity!r} is not a severity level"
            )
        return self


def _beside(policy_path: Path, sink: dict[str, Any]) -> dict[str, Any]:
    """A sink's `*_file` paths, relative ones taken from the policy file's directory."""
    return {
        k: str(policy_path.parent / v)
        if k.endswith("_file") and isinstance(v, str) and not Path(v).is_absolute()
        else v
        for k, v in sink.items()
    }


_PROBE = Alert(source="alertmanager", key="policy-check", status="firing", title="policy check", summary="")


class Policy:
    """A checked policy file and what it decides."""

    def __init__(self, spec: PolicyFile, sinks: dict[str, SinkConfig], source: str = "policy") -> None:
        self.spec = spec
        self.sink_configs = sinks
        self.source = source

    @classmethod
    def load(cls, path: Path) -> Policy:
        try:
            data = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as e:
            raise PolicyError(f"{path}: {e}") from e  # tomllib's message carries the line and column
        except OSError as e:
            raise PolicyError(f"{path}: {e}") from e
        try:
            spec = PolicyFile.model_validate(data)
            # Secret files named relative to the policy file are found beside it.
            sinks = {name: _beside(path, raw) for name, raw in spec.sinks.items()}
            policy = cls(spec, parse_sink_configs(sinks), str(path))
            # The questions as the gateway will check them (its own request model and limits), now
            # rather than as a 400 for every alert.
            check_limits(policy.request(_PROBE), max_questions=3)
            return policy
        except InvalidRequest as e:
            raise PolicyError(f"{path}: the gateway would refuse these questions: {e.detail}") from e
        except SinkConfigError as e:
            raise PolicyError(f"{path}: {e}") from e
        except ValidationError as e:
            raise PolicyError(f"{path}: {validation_problems(e)}") from e

    @property
    def fallback_route(self) -> str:
        return self.spec.fallback_route

    def sinks_of(self, route: str, action: Action) -> list[str]:
        r = self.spec.routes[route]
        return r.page if action == "page" else r.ticket if action == "ticket" else []

    def request(self, alert: Alert) -> SystemOneRequest:
        """The Jev request that classifies `alert`: page now? which team? how severe?"""
        q = self.spec.questions
        return SystemOneRequest.model_validate(
            {
                "model": "jev-latest",
                "state": alert.state(),
                "questions": {
                    "page": {"type": "noul", "instructions": q.page},
                    "team": {
                        "type": "choice",
                        "instructions": q.team,
                        "criteria": {name: team.description for name, team in self.spec.teams.items()},
                    },
                    "severity": {
                        "type": "score",
                        "instructions": q.severity,
                        "criteria": list(self.spec.severity.levels),
                    },
                },
            }
        )

    def rule_for(self, alert: Alert) -> Rule | None:
        """The first rule whose matchers all match (the order of the file), or None."""
        return next((rule for rule in self.spec.rules if rule.matches(alert)), None)

    def source_level(self, alert: Alert) -> Severity | None:
        """The sender's own severity (the floor's label), when it is one of the policy's levels."""
        value = alert.labels.get(self.spec.floor.label, "").strip().lower()
        return next((level for level in self.spec.severity.levels if level == value), None)

    def decide(self, alert: Alert, answers: RouterAnswers | None) -> Page:
        """The action, route and severity for an alert: the model's verdict (`model_verdict`), then
        each of `STEPS` in order. `answers` None: a rule that never classifies decides alone."""
        rule = self.rule_for(alert)
        if answers is None:
            if rule is None or rule.classify or rule.action is None:
                raise ValueError(f"{alert.key}: no answers, and no rule decides without the model")
            verdict = Verdict(
                action=rule.action,
                route=self.spec.teams[rule.team].route if rule.team else self.fallback_route,
                level=self.source_level(alert) or ("error" if rule.action == "page" else "warning"),
                reasons=(f"rule {rule.name}: {rule.action}, not classified",),
                rules=(rule.name,),
            )
            return verdict.page(alert, None)
        case = Case(self, alert, rule, answers)
        verdict = model_verdict(case)
        for step in STEPS:
            verdict = step(case, verdict)
        return verdict.page(alert, answers)

    def fallback(self, alert: Alert, reason: str) -> Page:
        """The page that goes out before (or without) the model's answer: never lost, never silent.
        A rule's team still routes it."""
        rule = self.rule_for(alert)
        team = rule.team if rule is not None else None
        return Page(
            alert=alert,
            action="page",
            route=self.spec.teams[team].route if team else self.fallback_route,
            severity=self.source_level(alert) or "error",
            classified=False,
            reason=reason + (f"; rule {rule.name}: team {team}" if rule is not None and team else ""),
            rules=(rule.name,) if rule is not None and team else (),
        )

    def as_sent(self, alert: Alert) -> Page:
        """Shadow mode's page: every firing alert, as its sender sent it, on the fallback route."""
        return Page(
            alert=alert,
            action="page",
            route=self.fallback_route,
            severity=self.source_level(alert) or "error",
            classified=False,
            reason="shadow mode: paged as sent",
        )


@dataclass(frozen=True)
class Verdict:
    """A decision as the steps make it: each step returns a new one."""

    action: Action
    route: str
    level: Severity
    low_confidence: bool = False
    reasons: tuple[str, ...] = ()  # each step's clause; the page's reason joins them with "; "
    rules: tuple[str, ...] = ()  # the rules that acted, and "floor"

    def page(self, alert: Alert, answers: RouterAnswers | None) -> Page:
        """The page of this verdict; `answers` None: decided without the model (unclassified)."""
        return Page(
            alert=alert,
            action=self.action,
            route=self.route,
            severity=self.level,
            classified=answers is not None,
            low_confidence=self.low_confidence,
            answers=answers.wire if answers is not None else {},
            reason="; ".join(self.reasons),
            calibrated=answers is not None and "page" in answers.calibrated,
            rules=self.rules,
            router_answers=answers,
        )


@dataclass(frozen=True)
class Case:
    """What the steps read: the policy, the alert, its rule (the first that matches) and the answers."""

    policy: Policy
    alert: Alert
    rule: Rule | None
    answers: RouterAnswers


def model_verdict(case: Case) -> Verdict:
    """p(page) through the thresholds and the uncertain band (a level at or above `page_severity`
    pages whatever p(page)), on the model's team's route, at the expected level."""
    spec, a = case.policy.spec, case.answers
    t, levels = spec.thresholds, spec.severity.levels
    # Half up (round() would take 2.5 to 2): the expected level, nearest first.
    level = levels[min(len(levels) - 1, max(0, math.floor(a.severity_score + 0.5)))]
    action: Action
    low_confidence = False
    if a.p_page >= t.page:
        action, why = "page", f"p(page) {a.p_page:.2f} >= {t.page}"
    elif levels.index(level) >= levels.index(t.page_severity):
        action, why = "page", f"severity {level}"
    elif a.p_page >= t.uncertain:
        action, low_confidence = "page", True
        why = f"p(page) {a.p_page:.2f} in the uncertain band [{t.uncertain}, {t.page})"
    elif a.p_page >= t.ticket:
        action, why = "ticket", f"p(page) {a.p_page:.2f} in [{t.ticket}, {t.uncertain})"
    else:
        action, why = "drop", f"p(page) {a.p_page:.2f} < {t.ticket}"
    if "page" in a.calibrated:
        why += " (calibrated)"
    return Verdict(action, spec.teams[a.team].route, level, low_confidence, (why,))


def _named(v: Verdict, rule: Rule) -> tuple[str, ...]:
    return v.rules if rule.name in v.rules else (*v.rules, rule.name)


def rule_team(case: Case, v: Verdict) -> Verdict:
    """The rule's team replaces the model's."""
    rule = case.rule
    if rule is None or rule.team is None:
        return v
    return replace(
        v,
        route=case.policy.spec.teams[rule.team].route,
        reasons=(*v.reasons, f"rule {rule.name}: team {rule.team}"),
        rules=_named(v, rule),
    )


def rule_action(case: Case, v: Verdict) -> Verdict:
    """The rule's action replaces the model's (and is sure: it is not the uncertain band's)."""
    rule = case.rule
    if rule is None or rule.action is None:
        return v
    if rule.action == v.action:
        return replace(v, rules=_named(v, rule))
    return replace(
        v,
        action=rule.action,
        low_confidence=False,
        reasons=(*v.reasons, f"rule {rule.name}: {rule.action}"),
        rules=_named(v, rule),
    )


def _rule_acted(case: Case) -> bool:
    return case.rule is not None and case.rule.action is not None


def severity_floor(case: Case, v: Verdict) -> Verdict:
    """At least the action the sender's severity asks for (unless a rule set the action); the page
    then says what its sender said, at least."""
    floor = case.policy.spec.floor
    least = floor.of(case.alert)
    if _rule_acted(case) or least is None or at_least(v.action, least[0]) == v.action:
        return v
    levels, level = case.policy.spec.severity.levels, v.level
    source = case.policy.source_level(case.alert)
    if source is not None and levels.index(source) > levels.index(level):
        level = source
    return replace(
        v,
        action=least[0],
        low_confidence=False,
        level=level,
        reasons=(*v.reasons, f"the sender's {floor.label} {least[1]}: at least {least[0]}"),
        rules=(*v.rules, "floor"),
    )


def route_drop(case: Case, v: Verdict) -> Verdict:
    """A drop on a route that does not drop is a ticket (the owner's route decides; unless a rule
    set the action)."""
    if _rule_acted(case) or v.action != "drop" or case.policy.spec.routes[v.route].drop:
        return v
    return replace(v, action="ticket", reasons=(*v.reasons, f"route {v.route} does not drop: a ticket"))


def unsure_team(case: Case, v: Verdict) -> Verdict:
    """The model's team below `team_confidence` (and no rule's team): what is sent goes to the
    fallback route."""
    a, t = case.answers, case.policy.spec.thresholds
    ruled = case.rule is not None and case.rule.team is not None
    if ruled or v.action == "drop" or not a.p_team < t.team_confidence:  # a NaN is not below
        return v
    why = f"team {a.team} only {a.p_team:.2f} < {t.team_confidence}: the fallback route"
    if "team" in a.calibrated:
        why += " (calibrated)"
    return replace(v, route=case.policy.fallback_route, low_confidence=True, reasons=(*v.reasons, why))


Step = Callable[[Case, Verdict], Verdict]
# In this order: a rule's team before the drop switch reads the route; the floor before the drop
# switch (a floored drop is no drop); an unsure team last, on what will be sent.
STEPS: tuple[Step, ...] = (rule_team, rule_action, severity_floor, route_drop, unsure_team)
