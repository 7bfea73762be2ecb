"""The model's answers about an alert, as the router reads them from the gateway's typed response."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.core.errors import EngineBadAnswer
from app.jev.wire import ChoiceAnswer, NoulAnswer, ScoreAnswer, SystemOneResponse


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
