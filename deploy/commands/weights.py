"""`dgemma weights upload|download|verify`: a checkpoint to and from GCS with a sha256 manifest."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "weights"
HELP = "checkpoint to/from GCS with a sha256 manifest"
REQUIRES: tuple[str, ...] = ()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True)
    up = actions.add_parser("upload", help="upload a checkpoint directory, manifest last")
    up.add_argument("src", type=Path)
    up.add_argument("url", help="gs://bucket/prefix")
    down = actions.add_parser("download", help="download and verify (skips files that already verify)")
    down.add_argument("url", help="gs://bucket/prefix")
    down.add_argument("dst", type=Path)
    down.add_argument("--workers", type=int, default=8)
    check = actions.add_parser(
        "verify",
        help="check a local checkpoint against its manifest.json (exit 1 on problems); a read-only "
        "checkpoint stamped at its verification (baked weights) is checked by sizes",
    )
    check.add_argument("dir", type=Path)
    check.add_argument("--full", action="store_true", help="hash every file, whatever the stamp says")
    remote = actions.add_parser(
        "verify-remote",
        help="check the objects under a gs:// prefix against its manifest by Cloud Storage's MD5 and "
        "CRC32C, without downloading (exit 1 on problems)",
    )
    remote.add_argument("url", help="gs://bucket/prefix")
    remote.add_argument("--mounted", type=Path, help="a FUSE mount of the prefix: check its files' sizes too")


def run(args: argparse.Namespace) -> int:
    import time

    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    from app.core.config import ConfigError
    from deploy.runtime import weights

    console = Console(stderr=True, soft_wrap=True)
    started = time.monotonic()
    if args.action in ("verify", "verify-remote"):
        if args.action == "verify":
            problems = weights.verify(args.dir, full=args.full)
        else:
            problems = weights.verify_remote(args.url, weights.client_from_env(), mounted=args.mounted)
        for p in problems:
            console.print(p, style="red", markup=False)
        elapsed = time.monotonic() - started
        console.print(f"verified in {elapsed:.1f} s" if not problems else f"{len(problems)} problem(s)")
        return 1 if problems else 0
    if args.action == "upload":
        # What the command names first: a wrong folder or URL is the operator's to fix before any
        # credential matters.
        weights.parse_gs(args.url)
        if not args.src.is_dir():
            raise ConfigError(f"weights upload {args.src}: no such folder (the checkpoint to upload)")
    client = weights.client_from_env()
    if args.action == "upload":
        manifest = weights.upload(args.src, args.url, client)
        console.print(f"uploaded {len(manifest.files)} files, {manifest.total_bytes} bytes, manifest last")
        return 0
    manifest = weights.fetch_manifest(args.url, client)
    columns = (BarColumn(), DownloadColumn(), TransferSpeedColumn())
    with Progress(*columns, console=console) as bar:
        task = bar.add_task("download", total=manifest.total_bytes)
        report = weights.download(
            args.url,
            args.dst,
            client,
            workers=args.workers,
            progress=lambda n: bar.advance(task, n),
            manifest=manifest,
        )
    console.print(
        f"downloaded {len(report.downloaded)} files ({report.bytes_downloaded / 2**30:.2f} GiB), "
        f"skipped {len(report.skipped)} that verified, in {time.monotonic() - started:.1f} s"
    )
    return 0
