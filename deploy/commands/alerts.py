"""`dgemma alerts serve|replay|eval|report`: the alert router, a dry run of its policy on saved
payloads, its score on labelled alerts, and the summary of a shadow trial's record."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.alerts.settings import AlertRouterSettings
    from app.core.identity import IdTokens

# How replay and eval reach a private gateway (deploy/cloud/id_tokens.py): `auto` mints with
# google-auth, else with gcloud (a laptop's user credentials); unset: DGEMMA_ALERTS_ID_TOKEN, as the
# router itself (the metadata server on Cloud Run).
ID_TOKEN_MODES = ("off", "auto", "gcloud")
ID_TOKEN_HELP = (
    "how to call a private (Cloud Run) gateway: off, auto (google-auth, else `gcloud auth "
    "print-identity-token`) or gcloud; default: DGEMMA_ALERTS_ID_TOKEN"
)

NAME = "alerts"
HELP = (
    "the alert router: serve the webhooks; replay saved payloads through the policy (nothing sent); "
    "eval on labelled alerts; report on a shadow trial"
)
REQUIRES: tuple[str, ...] = ()
OPTIONAL = ("matplotlib",)  # eval's and report's plots; the router's image has none
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
    replay.add_argument("--id-token", choices=ID_TOKEN_MODES, help=ID_TOKEN_HELP)
    replay.set_defaults(logs_json=False)  # a person's command: refusals in red on stderr
    evaluate = actions.add_parser(
        "eval",
        help="score the router on labelled alerts: page recall, noise, teams, severity, a threshold sweep",
    )
    evaluate.add_argument(
        "file", type=Path, help='one delivery per line: {"source": ..., "payload": ..., "expected": [...]}'
    )
    evaluate.add_argument("--gateway", help="decision service URL (default: DGEMMA_ALERTS_GATEWAY_URL)")
    evaluate.add_argument("--policy", type=Path, help="policy file (default: DGEMMA_ALERTS_POLICY_FILE)")
    evaluate.add_argument("--id-token", choices=ID_TOKEN_MODES, help=ID_TOKEN_HELP)
    evaluate.add_argument(
        "--without-severity",
        action="store_true",
        help="remove each alert's own severity label (the floor's, `severity` by default) before it is asked",
    )
    evaluate.add_argument(
        "--suggest",
        type=float,
        metavar="RECALL",
        help="fit the p(page) threshold for this page recall on half the set, report it on the other",
    )
    evaluate.add_argument("--seed", type=int, default=0, help="the --suggest split's seed (default: 0)")
    evaluate.add_argument("--concurrency", type=int, default=4, help="alerts asked at once (default: 4)")
    evaluate.add_argument(
        "--out", type=Path, default=Path("reports/alerts-eval"), help="report.json, report.md, plots"
    )
    evaluate.set_defaults(logs_json=False)
    report = actions.add_parser(
        "report",
        help="summarize a shadow trial's record: pages avoided, pages it would have missed, teams",
    )
    report.add_argument(
        "file",
        type=Path,
        help="DGEMMA_ALERTS_AUDIT_FILE, the router's log, or `gcloud logging read --format=json` output",
    )
    report.add_argument(
        "--missed-after",
        type=float,
        default=30.0,
        metavar="MINUTES",
        help="an avoided page still firing this long counts as missed (default: 30)",
    )
    report.add_argument(
        "--team-label", default="team", help="the sender's label to compare teams with (default: team)"
    )
    report.add_argument("--out", type=Path, help="also write report.md and shadow.png here")
    report.set_defaults(logs_json=False)


def run(args: argparse.Namespace) -> int:
    from app.alerts.settings import AlertRouterSettings
    from app.core.config import load

    if args.action == "report":
        return _report(args)
    if args.action == "serve":
        return _serve(
            load(AlertRouterSettings, alerts_host=args.host, alerts_port=args.port), args.drain_seconds
        )
    settings = load(AlertRouterSettings, alerts_gateway_url=args.gateway, alerts_policy_file=args.policy)
    tokens = _id_tokens(settings, args.id_token)
    if args.action == "eval":
        return _eval(settings, args, tokens)
    return _replay(settings, args.file, tokens)


def _id_tokens(settings: AlertRouterSettings, mode: str | None) -> IdTokens | None:
    """What mints the gateway's ID tokens for `--id-token` (None: none are sent)."""
    from app.core.identity import IdTokens

    if mode is None:
        return IdTokens() if settings.alerts_id_token else None
    if mode == "off":
        return None
    from deploy.cloud.id_tokens import id_tokens

    tokens = id_tokens(mode)
    assert isinstance(tokens, IdTokens)  # auto and gcloud mint; only off does not
    return tokens


def _lab() -> ModuleType:
    """The router's eval and report (`evals/alerts`), which the router's image leaves out."""
    from app.core.config import ConfigError

    try:
        from evals.alerts import run as lab
    except ImportError as e:
        raise ConfigError(
            "`dgemma alerts eval` and `dgemma alerts report` need the kit's evals package, which the "
            "alert router's image does not carry: run them from a checkout (make env)"
        ) from e
    return lab


def _eval(settings: AlertRouterSettings, args: argparse.Namespace, tokens: IdTokens | None) -> int:
    evaluate: Callable[..., int] = _lab().evaluate

    return evaluate(
        settings, args.file, out=args.out, strip_severity=args.without_severity, target=args.suggest,
        seed=args.seed, concurrency=args.concurrency, id_tokens=tokens,
    )  # fmt: skip


def _report(args: argparse.Namespace) -> int:
    shadow_report: Callable[..., int] = _lab().shadow_report

    return shadow_report(
        args.file, missed_after_min=args.missed_after, team_label=args.team_label, out=args.out
    )


def _serve(settings: AlertRouterSettings, drain_s: int) -> int:
    from app.alerts.main import create_router_app
    from app.core.serving import serve

    serve(
        lambda: create_router_app(settings), settings, section="router", host=settings.alerts_host,
        port=settings.alerts_port, drain_s=drain_s,
    )  # fmt: skip
    return 0


def _replay(settings: AlertRouterSettings, file: Path, tokens: IdTokens | None) -> int:
    import asyncio

    from rich.console import Console
    from rich.table import Table

    from app.alerts.policy import Policy
    from app.alerts.replay import Row, read_deliveries, replay
    from app.jev.client import JevClient

    policy = Policy.load(settings.alerts_policy_file)
    alerts = read_deliveries(file)

    async def classify() -> list[Row]:
        gateway = JevClient(settings.alerts_gateway_url, api_key=settings.gateway_key(), id_tokens=tokens)
        try:
            return await replay(alerts, policy, gateway)
        finally:
            await gateway.aclose()

    table = Table(title=f"{file.name}: {len(alerts)} alert(s) through {policy.source} (nothing sent)")
    for column in ("alert", "status", "p(page)", "team", "severity", "action", "route", "reason"):
        table.add_column(column)
    for row in asyncio.run(classify()):
        a = row.answers
        p_page = f"{a.p_page:.2f}" if a else "-"
        team = f"{a.team} ({a.p_team:.2f})" if a else "-"
        table.add_row(
            row.alert.title, row.alert.status, p_page, team, row.severity, row.action, row.route, row.reason
        )
    Console(soft_wrap=True).print(table)
    return 0
