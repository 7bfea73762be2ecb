"""What `dgemma eval` and `dgemma calibrate` share: asking a deployment about labelled JSONL."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The data, the service and how to ask it."""
    from deploy.cloud.id_tokens import MODES

    parser.add_argument(
        "--data",
        type=Path,
        required=True,
        help="labelled JSONL (docs/eval-and-calibration.md)",
    )
    parser.add_argument("--url", required=True, help="gateway base URL")
    parser.add_argument("--limit", type=int, help="only the first N items")
    parser.add_argument("--model", help="model name to ask for (default: the first of /v1/models)")
    parser.add_argument("--concurrency", type=int, default=4, help="decisions in flight (default: 4)")
    parser.add_argument(
        "--id-token",
        choices=MODES,
        default="off",
        help="also send a Google ID token (a private Cloud Run service)",
    )


def headers(args: argparse.Namespace) -> dict[str, str]:
    """The eval's key (EvalSettings) and, for a private service, an ID token. Refuses bad counts."""
    from app.core.config import ConfigError, load
    from app.core.identity import audience_of
    from deploy.cloud.id_tokens import id_tokens
    from evals.settings import EvalSettings

    if (args.limit is not None and args.limit < 1) or args.concurrency < 1:
        raise ConfigError("--limit and --concurrency must be at least 1")
    settings = load(EvalSettings)
    if args.id_token != "off":
        return id_tokens(args.id_token).headers(audience_of(args.url), settings.api_key())
    return {"Authorization": f"Bearer {settings.api_key()}"}
