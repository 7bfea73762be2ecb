"""The routing policy (a TOML file): the questions asked about an alert, the thresholds that turn the
answers into page / ticket / drop, the uncertain band, teams and their routes, and the sinks.

`Policy.request(alert)` is the Jev request for one alert; `Policy.decide(alert, answers)` the page
(or the drop) for its answers; `Policy.fallback(alert, reason)` the page that goes out unclassified.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, model_validator

from app.alerts.records import Action, Alert, Page, Severity
from app.alerts.sinks import SinkConfig, SinkConfigError, parse_sink_configs
from app.core.config import ConfigError
from app.core.errors import InvalidRequest
from app.core.models import StrictModel
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


class PolicyFile(StrictModel):
    fallback_route: str
    thresholds: Thresholds = Thresholds()
    questions: Questions
    severity: SeverityScale
    teams: dict[str, Team] = Field(min_length=1)
    routes: dict[str, Route] = Field(min_length=1)
    sinks: dict[str, dict[str, Any]] = Field(min_length=1)  # each a sink config (app.alerts.sinks)

    @model_validator(mode="after")
    def _references(self) -> PolicyFile:
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
            problems = []
            for err in e.errors():
                where = ".".join(str(p) for p in err["loc"])
                msg = err["msg"].removeprefix("Value error, ")
                problems.append(f"{where}: {msg}" if where else msg)
            raise PolicyError(f"{path}: " + "; ".join(problems)) from e

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

    def decide(
        self, alert: Alert, answers: dict[str, Any], *, calibrated: frozenset[str] = frozenset()
    ) -> Page:
        """The action, route and severity for an alert's answers (the thresholds, the uncertain band).
        `calibrated`: the questions whose probabilities the gateway scaled by its calibration file;
        the reason says which thresholds met calibrated numbers."""
        t = self.spec.thresholds
        levels = self.spec.severity.levels
        p_page = float(answers["page"]["noul"])
        team = str(answers["team"]["choice"])
        p_team = float(answers["team"]["probabilities"][team])
        # Half up (round() would take 2.5 to 2): the expected level, nearest first.
        nearest = math.floor(float(answers["severity"]["score"]) + 0.5)
        level = levels[min(len(levels) - 1, max(0, nearest))]
        severe = levels.index(level) >= levels.index(t.page_severity)
        action: Action
        low_confidence = False
        if p_page >= t.page or severe:
            action, reason = (
                "page",
                f"p(page) {p_page:.2f} >= {t.page}" if p_page >= t.page else f"severity {level}",
            )
        elif p_page >= t.uncertain:
            action, low_confidence = "page", True
            reason = f"p(page) {p_page:.2f} in the uncertain band [{t.uncertain}, {t.page})"
        elif p_page >= t.ticket:
            action, reason = "ticket", f"p(page) {p_page:.2f} in [{t.ticket}, {t.uncertain})"
        else:
            action, reason = "drop", f"p(page) {p_page:.2f} < {t.ticket}"
        if "page" in calibrated:
            reason += " (calibrated)"
        route = self.spec.teams[team].route
        if p_team < t.team_confidence and action != "drop":
            route, low_confidence = self.fallback_route, True
            reason += f"; team {team} only {p_team:.2f} < {t.team_confidence}: the fallback route"
            if "team" in calibrated:
                reason += " (calibrated)"
        return Page(
            alert=alert,
            action=action,
            route=route,
            severity=level,
            classified=True,
            low_confidence=low_confidence,
            answers=answers,
            reason=reason,
            calibrated="page" in calibrated,
        )

    def fallback(self, alert: Alert, reason: str) -> Page:
        """The page that goes out before (or without) the model's answer: never lost, never silent."""
        return Page(
            alert=alert,
            action="page",
            route=self.fallback_route,
            severity="error",
            classified=False,
            reason=reason,
        )
