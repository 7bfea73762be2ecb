"""Rules around the model: label matchers that decide before the model is asked (never classify)
and override what it answers (always page, route to a team), and the floor the sender's own
severity label puts under the action. Each rule that acts is named in the page's reason.

Matchers are Alertmanager's (`name="value"`, `!=`, `=~`, `!~`; a regex matches the whole value),
so that a rule reads like the routes a team already writes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from pydantic import Field, PrivateAttr, field_validator, model_validator

from app.alerts.records import Action, Alert
from app.core.models import StrictModel

ACTIONS: tuple[Action, ...] = ("drop", "ticket", "page")  # least first: a floor takes the larger

_MATCHER = re.compile(r'^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*(?:"((?:[^"\\]|\\.)*)"|(\S.*?))\s*$')


@dataclass(frozen=True)
class Matcher:
    """One Alertmanager matcher over an alert's labels (a missing label reads as empty)."""

    name: str
    op: Literal["=", "!=", "=~", "!~"]
    value: str
    pattern: re.Pattern[str] | None

    @classmethod
    def parse(cls, text: str) -> Matcher:
        found = _MATCHER.match(text)
        if found is None:
            raise ValueError(f'{text!r} is not a matcher (name="value", with =, !=, =~ or !~)')
        name, op, quoted, bare = found.groups()
        value = bytes(quoted, "utf-8").decode("unicode_escape") if quoted is not None else bare
        pattern = None
        if op in ("=~", "!~"):
            try:
                pattern = re.compile(f"(?:{value})\\Z")  # anchored at both ends, as Alertmanager's
            except re.error as e:
                raise ValueError(f"{text!r}: the regex does not compile ({e})") from e
        return cls(name, op, value, pattern)  # type: ignore[arg-type]

    def matches(self, labels: dict[str, str]) -> bool:
        got = labels.get(self.name, "")
        if self.pattern is not None:
            hit = self.pattern.match(got) is not None
            return hit if self.op == "=~" else not hit
        return (got == self.value) if self.op == "=" else (got != self.value)


def labels_of(alert: Alert) -> dict[str, str]:
    """The labels a matcher reads: the alert's own, with `alertname` its title when absent (Cloud
    Monitoring's policy name)."""
    return {"alertname": alert.title, **alert.labels}


class Rule(StrictModel):
    """`matchers` all match: then `action` replaces the model's (always page: "page"), `team`
    replaces its team, and `classify = false` skips the model (so `action` is required)."""

    name: str = Field(min_length=1)
    matchers: list[str] = Field(min_length=1)
    action: Action | None = None
    team: str | None = None
    classify: bool = True
    _parsed: list[Matcher] = PrivateAttr(default_factory=list)

    @model_validator(mode="after")
    def _acts(self) -> Rule:
        self._parsed = [Matcher.parse(text) for text in self.matchers]
        if self.action is None and self.team is None:
            raise ValueError(f"rule {self.name!r} sets neither action nor team")
        if not self.classify and self.action is None:
            raise ValueError(f"rule {self.name!r}: classify = false needs an action (the model is not asked)")
        return self

    def matches(self, alert: Alert) -> bool:
        labels = labels_of(alert)
        return all(m.matches(labels) for m in self._parsed)


def _critical_pages() -> dict[str, Action]:
    return {"critical": "page"}


class Floor(StrictModel):
    """The least action an alert gets from its sender's own severity label (`label`'s value,
    case-insensitive, looked up in `actions`). The default: a source-critical alert pages."""

    label: str = "severity"
    actions: dict[str, Action] = Field(default_factory=_critical_pages)

    @field_validator("actions")
    @classmethod
    def _lower(cls, value: dict[str, Action]) -> dict[str, Action]:
        return {k.lower(): v for k, v in value.items()}

    def of(self, alert: Alert) -> tuple[Action, str] | None:
        """(the least action, the label's value) for `alert`, or None when no floor applies."""
        value = alert.labels.get(self.label, "").strip()
        action = self.actions.get(value.lower())
        return (action, value) if action is not None else None


def at_least(action: Action, floor: Action) -> Action:
    return action if ACTIONS.index(action) >= ACTIONS.index(floor) else floor
