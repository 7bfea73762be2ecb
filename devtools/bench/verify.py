"""The start-time check of baked weights: a stamped read-only checkpoint (sizes) against hashing
every file (sha256), side by side on the same files, in one run.

    python -m devtools.bench.verify [--gib 2] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console

from deploy.runtime.weights import MANIFEST, build_manifest, verify, write_stamp

console = Console()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--gib", type=float, default=2.0, help="checkpoint size")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        files = max(1, round(args.gib * 2))  # 512 MiB files
        with console.status(f"writing {args.gib:.1f} GiB of random weights"):
            for i in range(files):
                with (d / f"model-{i:05d}.safetensors").open("wb") as f:
                    for _ in range(64):
                        f.write(os.urandom(8 * 2**20))
            (d / MANIFEST).write_text(build_manifest(d).to_json())
            write_stamp(d)
        for p in [*d.rglob("*"), d]:
            p.chmod(p.stat().st_mode & ~0o222)  # as the image leaves baked weights
        times: dict[str, list[float]] = {"stamp (sizes)": [], "full (sha256)": []}
        try:
            for _ in range(args.rounds):
                for name, full in (("stamp (sizes)", False), ("full (sha256)", True)):
                    start = time.perf_counter()
                    assert verify(d, full=full) == []
                    times[name].append(time.perf_counter() - start)
        finally:
            for p in [d, *d.rglob("*")]:
                p.chmod(p.stat().st_mode | 0o200)
    gib = files / 2
    for name, ts in times.items():
        console.print(f"{name:>14}: median {statistics.median(ts) * 1000:9.1f} ms for {gib:.1f} GiB")
    stamp_s, full_s = (statistics.median(ts) for ts in times.values())
    saved = 15.7e9 / 2**30 / (gib / full_s)
    console.print(
        f"full / stamp: x{full_s / stamp_s:,.0f}; sha256 at {gib / full_s:.2f} GiB/s here, so ~{saved:.0f} s "
        "saved per start on a 15.7 GB checkpoint at this speed"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
