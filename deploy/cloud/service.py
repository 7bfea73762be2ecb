"""The deployed services, over HTTP: a revision's readiness (where a scaled-to-zero one starts), the
smoke decision, and the alert router's readiness with where each sender posts."""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from typing import Any

import httpx

from app.core.polling import wait_until
from deploy.cloud.config import SENDERS, DeployConfig
from deploy.cloud.gcloud import access_latest
from deploy.cloud.shell import Shell
from deploy.errors import DeployError

ROUTER_READY_S = 120.0  # one always-on CPU instance, started by the apply: ready in seconds
SMOKE_QUESTION = {"page": {"type": "noul", "instructions": "Should on-call be paged?"}}


def wait_ready(url: str, headers: Callable[[], dict[str, str]], timeout_s: float) -> float:
    """Seconds until the revision answers /readyz (a scaled-to-zero revision starts here)."""
    start = time.monotonic()

    def ready() -> bool:
        return httpx.get(f"{url}/readyz", headers=headers(), timeout=30).status_code == 200

    if not wait_until(ready, timeout_s, interval_s=2.0, errors=(httpx.HTTPError,)):
        raise DeployError(f"{url} was not ready within {timeout_s:.0f} s")
    return time.monotonic() - start


def smoke(url: str, headers: dict[str, str]) -> None:
    """One decision through the kit's Jev client (a revision just ready may still shed: it waits its
    turn), validated like the gate's."""
    import asyncio

    from app.core.errors import ServiceError
    from app.jev.client import JevClient, Retry
    from loadtest.validate import problem

    body = {"model": "jev-latest", "state": "Disk usage at 97% on db-1", "questions": SMOKE_QUESTION}

    async def ask() -> dict[str, Any]:
        async with JevClient(url, headers=headers, timeout_s=120, retry=Retry(attempts=3)) as client:
            return await client.decide(body)

    try:
        why = problem(asyncio.run(ask()), SMOKE_QUESTION)
    except ServiceError as e:
        why = str(e)
    if why:
        raise DeployError(f"the smoke decision against {url} failed: {why}")


def reveal_token(cfg: DeployConfig, source: str) -> list[str]:
    """The command that prints a sender's token (for the sender's own configuration)."""
    return access_latest(cfg, cfg.sender_secret(source))


def router_ready(cfg: DeployConfig, shell: Shell, outputs: dict[str, Any], revision: str) -> None:
    """The router answers /readyz (it is public: no credentials); then where each sender posts, how
    to read its token, and who the kit's alert policies notify."""
    url = str(outputs["router_url"])

    def ready() -> None:
        try:
            wait_ready(url, lambda: {}, min(cfg.warmup_seconds, ROUTER_READY_S))
        except DeployError as e:
            raise DeployError(
                f"the alert router is not ready: {e} ({revision} serves: the gate passed)"
            ) from e
        shell.console.print(f"alert router ready: {url}")

    shell.call(
        f"wait for {url}/readyz (public), then print each sender's webhook URL and the command that "
        "reads its token:",
        ready,
        None,
    )
    if cfg.alerts_mode != "act":
        shell.console.print(
            f"the alert router runs in {cfg.alerts_mode} mode: it pages every alert as its sender sent it "
            f"and records what it would have done (`dgemma alerts report`); to act on its decisions "
            f"(every other setting stays as deployed, and no GPU revision is made): "
            f"dgemma deploy --project {cfg.project} --region {cfg.region} --service {cfg.service} "
            "--alerts-mode act --allow-paging-change",
            markup=False,
            soft_wrap=True,
        )
    webhooks = outputs["alert_webhooks"]
    for source in SENDERS:
        append = " (append the token)" if source == "cloud-monitoring" else ""
        shell.console.print(f"  {source}: {webhooks[source]}{append}", markup=False, soft_wrap=True)
        shell.console.print(
            f"    token: {shlex.join(reveal_token(cfg, source))}", markup=False, soft_wrap=True
        )
    for line in who_is_notified(cfg):
        shell.console.print(line, markup=False, soft_wrap=True)


def who_is_notified(cfg: DeployConfig) -> list[str]:
    """What the deployed alert policies tell no one, and a dead-man's switch turned off: said at the
    end of each deploy, since a policy without a channel only opens an incident in the console."""
    channel = f"projects/{cfg.project}/notificationChannels/ID"
    deadman, verb = ("the dead-man's switch and the router's uptime alert", "notify")
    if not cfg.deadman_switch:
        deadman, verb = "the router's uptime alert", "notifies"
    lines = []
    if not cfg.notification_channels and not cfg.deadman_channels:
        lines.append(
            "no one will be notified: the kit's alert policies have no notification channel, so they "
            f"open incidents in the Cloud Monitoring console and tell no one; add one with --notify "
            f"{channel}, and for {deadman} --deadman-notify {channel} (one that does not pass through "
            "the router)"
        )
    elif not cfg.notification_channels:
        lines.append(f"the kit's alert policies notify no one: add --notify {channel}")
    elif not cfg.deadman_channels:
        lines.append(
            f"{deadman} {verb} no one: add --deadman-notify {channel}, a channel that does not pass "
            "through the router"
        )
    if not cfg.deadman_switch:
        lines.append(
            "the dead-man's switch is off (--no-deadman-switch): nothing pages when Alertmanager's "
            "Watchdog stops reaching the router; its uptime check still does. --deadman-switch turns it "
            "back on"
        )
    return lines
