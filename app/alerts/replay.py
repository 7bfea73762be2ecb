"""`dgemma alerts replay`: webhook payloads from a file through the policy, nothing sent.

The file holds one delivery per line (JSON Lines): `{"source": "alertmanager", "payload": {...}}`
(a payload as the sender posts it). Each alert is classified by the decision service, as the router
would, and the policy's decision is returned as rows: alert, answers, action, route, reason.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path

from app.alerts.answers import RouterAnswers
from app.alerts.formats import parse
from app.alerts.policy import Policy
from app.alerts.records import SOURCES, Alert
from app.core.config import ConfigError
from app.core.errors import ServiceError
from app.jev.client import JevClient


class ReplayFileError(ConfigError):
    """The payload file is not usable; the message names the file and the line."""


@dataclass(frozen=True)
class Row:
    alert: Alert
    action: str
    route: str
    severity: str
    answers: RouterAnswers | None  # None: not classified
    reason: str


def read_deliveries(path: Path) -> list[Alert]:
    """Every alert of every delivery in the file; a bad line is named by its number."""
    alerts: list[Alert] = []
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ReplayFileError(f"{path}: {e}") from e
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            source, payload = record["source"], record["payload"]
        except (ValueError, KeyError, TypeError) as e:
            raise ReplayFileError(f'{path}:{number}: expected {{"source": ..., "payload": ...}} ({e})') from e
        if source not in SOURCES:
            raise ReplayFileError(f"{path}:{number}: source {source!r} is not one of {', '.join(SOURCES)}")
        try:
            alerts += parse(source, payload).alerts
        except ServiceError as e:
            raise ReplayFileError(f"{path}:{number}: {e.detail}") from e
    return alerts


async def replay(alerts: list[Alert], policy: Policy, gateway: JevClient, concurrency: int = 4) -> list[Row]:
    """The policy's decision for each alert; a resolved one needs no read; one the service cannot
    classify shows what the router would do (the fallback page)."""
    gate = asyncio.Semaphore(concurrency)

    async def one(alert: Alert) -> Row:
        if alert.status == "resolved":
            why = "resolved: the sinks that paged it get the resolution"
            return Row(alert, "resolve", "-", "-", None, why)
        rule = policy.rule_for(alert)
        if rule is not None and not rule.classify:  # as the router: the model is never asked
            page = policy.decide(alert, None)
            return Row(alert, page.action, page.route, page.severity, None, page.reason)
        async with gate:
            try:
                answers = RouterAnswers.of(await gateway.response(policy.request(alert)))
            except ServiceError as e:
                page = policy.fallback(alert, str(e))
                return Row(alert, "page (fallback)", page.route, page.severity, None, page.reason)
        page = policy.decide(alert, answers)
        return Row(alert, page.action, page.route, page.severity, answers, page.reason)

    return list(await asyncio.gather(*(one(a) for a in alerts)))
