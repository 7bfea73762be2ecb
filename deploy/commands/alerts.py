"""`dgemma alerts serve|replay`: the alert router, and a dry run of its policy on saved payloads."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.alerts.settings import AlertRouterSettings

NAME = "alerts"
HELP = "the alert router: serve the webhooks, or replay saved payloads through the policy (nothing sent)"
REQUIRES: tuple[str, ...] = ()
SERVICE = True  # `serve` is long-running: refusals are JSON log lines (`replay`'s are plain, below)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True)
    serve = actions.add_parser("serve", help="run the router (its settings: DGEMMA_ALERTS_*)")
    serve.add_argument("--host", help="listen address (default: DGEMMA_ALERTS_HOST)")
    serve.add_argument("--port", type=int, help="port (default: $PORT, DGEMMA_ALERTS_PORT or 8090)")
    serve.add_argument(
        "--drain-seconds",
        type=int,
        default=8,
        help="after SIGTERM, finish in-flight deliveries for this long",
    )
    replay = actions.add_parser(
        "replay",
        help="classify the alerts of a JSON Lines file of payloads and show what the router would do",
    )
    replay.add_argument("file", type=Path, help='one delivery per line: {"source": ..., "payload": ...}')
    replay.add_argument("--gateway", help="decision service URL (default: DGEMMA_ALERTS_GATEWAY_URL)")
    replay.add_argument("--policy", type=Path, help="policy file (default: DGEMMA_ALERTS_POLICY_FILE)")
    replay.set_defaults(logs_json=False)  # a person's command: refusals in red on stderr


def run(args: argparse.Namespace) -> int:
    from app.alerts.settings import AlertRouterSettings
    from app.core.config import load

    if args.action == "serve":
        return _serve(
            load(AlertRouterSettings, alerts_host=args.host, alerts_port=args.port), args.drain_seconds
        )
    settings = load(AlertRouterSettings, alerts_gateway_url=args.gateway, alerts_policy_file=args.policy)
    return _replay(settings, args.file)


def _serve(settings: AlertRouterSettings, drain_s: int) -> int:
    from app.alerts.main import create_router_app
    from app.core.serving import serve

    serve(
        lambda: create_router_app(settings), settings, section="router", host=settings.alerts_host,
        port=settings.alerts_port, drain_s=drain_s,
    )  # fmt: skip
    return 0


def _replay(settings: AlertRouterSettings, file: Path) -> int:
    import asyncio

    from rich.console import Console
    from rich.table import Table

    from app.alerts.policy import Policy
    from app.alerts.replay import Row, read_deliveries, replay
    from app.core.identity import IdTokens
    from app.jev.client import JevClient

    policy = Policy.load(settings.alerts_policy_file)
    alerts = read_deliveries(file)

    async def classify() -> list[Row]:
        gateway = JevClient(
            settings.alerts_gateway_url,
            api_key=settings.gateway_key(),
            id_tokens=IdTokens() if settings.alerts_id_token else None,
        )
        try:
            return await replay(alerts, policy, gateway)
        finally:
            await gateway.aclose()

    table = Table(title=f"{file.name}: {len(alerts)} alert(s) through {policy.source} (nothing sent)")
    for column in ("alert", "status", "p(page)", "team", "severity", "action", "route", "reason"):
        table.add_column(column)
    for row in asyncio.run(classify()):
        a = row.answers
        p_page = f"{a['page']['noul']:.2f}" if a else "-"
        team = f"{a['team']['choice']} ({a['team']['probabilities'][a['team']['choice']]:.2f})" if a else "-"
        table.add_row(
            row.alert.title, row.alert.status, p_page, team, row.severity, row.action, row.route, row.reason
        )
    Console(soft_wrap=True).print(table)
    return 0
