"""Each labelled alert classified as the router classifies it: `Policy.request` -> the gateway ->
`Policy.decide`, whose action is what the router does."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.alerts.answers import RouterAnswers
from app.alerts.policy import Policy
from app.alerts.records import Page
from app.core.errors import ServiceError
from app.jev.client import JevClient
from evals.alerts.labelled import Labelled
from evals.asking import each
from evals.errors import AlertEvalError


@dataclass(frozen=True)
class Row:
    """One alert: its labels, the gateway's answers and the policy's decision (what the router does)."""

    item: Labelled
    answers: RouterAnswers | None  # None: a rule decided without asking the model
    page: Page

    @property
    def p_page(self) -> float | None:
        return None if self.answers is None else self.answers.p_page

    @property
    def team(self) -> str | None:
        """The model's team (its route may still be the fallback one, below `team_confidence`)."""
        return None if self.answers is None else self.answers.team

    @property
    def p_team(self) -> float | None:
        return None if self.answers is None else self.answers.p_team

    @property
    def paged(self) -> bool:
        return self.page.action == "page"

    def under(self, policy: Policy) -> Page:
        """The decision another policy makes on the same answers."""
        return policy.decide(self.item.alert, self.answers)


def decided(item: Labelled, answers: RouterAnswers | None, policy: Policy) -> Row:
    return Row(item, answers, policy.decide(item.alert, answers))


async def classify(
    items: Sequence[Labelled],
    policy: Policy,
    gateway: JevClient,
    *,
    concurrency: int = 4,
    progress: Callable[[], None] = lambda: None,
) -> list[Row]:
    """Each alert decided as the router decides it, `concurrency` at a time, in file order: a rule
    that never classifies decides alone; every other alert is asked, and its answers decided. An
    alert the service does not answer (its retries spent) stops the eval, naming the line."""

    async def one(item: Labelled) -> Row:
        rule = policy.rule_for(item.alert)
        if rule is not None and not rule.classify:  # the model is never asked
            return decided(item, None, policy)
        try:
            answers = RouterAnswers.of(await gateway.response(policy.request(item.alert)))
        except ServiceError as e:
            raise AlertEvalError(f"{item.where} (alert {item.index}, {item.alert.title}): {e}") from None
        return decided(item, answers, policy)

    return await each(items, one, concurrency=concurrency, progress=progress)
