"""`dgemma loadtest`: the rollout gate (Locust latency + batch@32 phases against a profile)."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "loadtest"
HELP = "the rollout gate: Locust latency + batch@32 phases vs a profile (exit 1 naming missed targets)"
REQUIRES: tuple[str, ...] = ("locust", "matplotlib")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from deploy.cloud.id_tokens import MODES

    parser.add_argument("--host", required=True, help="gateway base URL")
    parser.add_argument("--profile", default="cpu-smoke", help="a profile of loadtest/profiles.toml")
    parser.add_argument("--out", type=Path, default=Path("reports/loadtest"), help="report directory")
    parser.add_argument("--engine-url", help="raw vLLM URL: adds the gateway-overhead phase")
    parser.add_argument(
        "--target", action="append", default=[], metavar="NAME=VALUE", help="override a limit"
    )
    parser.add_argument("--latency-seconds", type=int)
    parser.add_argument("--throughput-seconds", type=int)
    parser.add_argument(
        "--warmup-seconds", type=float, default=900, help="how long to wait for a ready service (cold start)"
    )
    parser.add_argument(
        "--id-token",
        choices=MODES,
        default="off",
        help="also send a Google ID token for the host (a private Cloud Run service): auto = google-auth "
        "(service-account key, metadata server), else `gcloud auth print-identity-token`; gcloud = only "
        "gcloud (default: off)",
    )


def run(args: argparse.Namespace) -> int:
    from app.core.config import ConfigError, load
    from app.core.identity import audience_of
    from deploy.cloud.id_tokens import id_tokens
    from loadtest.gate import GateProfile, Headers
    from loadtest.gate import run as gate
    from loadtest.settings import LoadtestSettings

    profile = GateProfile.load(args.profile).overridden(
        args.target, args.latency_seconds, args.throughput_seconds
    )
    settings = load(LoadtestSettings)
    headers: Headers = settings.headers()
    if args.id_token != "off":
        if settings.loadtest_headers is not None:
            raise ConfigError("DGEMMA_LOADTEST_HEADERS and --id-token both set the headers: use one")
        tokens, audience, key = id_tokens(args.id_token), audience_of(args.host), settings.api_key()

        def fresh() -> dict[str, str]:
            """Asked again at each phase of the gate: the same token until shortly before it expires."""
            return tokens.headers(audience, key)

        fresh()  # no token, no gate: fail before the warm-up
        headers = fresh
    missed = gate(
        args.host,
        profile,
        args.out,
        headers=headers,
        engine_url=args.engine_url,
        warmup_timeout_s=args.warmup_seconds,
    ).missed
    return 1 if missed else 0
