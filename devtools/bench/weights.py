"""Download throughput from the real GCS emulator: transfer manager (parallel, sliced) vs one stream.

Both PATHS fetch the same objects, alternating, in one run; prints MB/s of each and the ratio.
Loopback and 2 cores bound what this shows: it measures the client-side machinery, not GCS.

    .venv/bin/python -m devtools.bench.weights [--files 4] [--mib 64] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from deploy.runtime.weights import client_from_env, download, parse_gs, sha256_file, upload
from devtools.harness.gcs import fake_gcs

console = Console()
PATHS = ("single stream", "parallel files", "parallel + sliced")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        with fake_gcs(tmp / "gcs") as url:
            os.environ["STORAGE_EMULATOR_HOST"] = url
            client = client_from_env("bench")
            client.create_bucket("bench")
            src = tmp / "src"
            src.mkdir()
            for i in range(args.files):
                (src / f"model-{i:05d}.safetensors").write_bytes(os.urandom(args.mib * 2**20))
            with console.status(f"uploading {args.files} x {args.mib} MiB"):
                manifest = upload(src, "gs://bench/ckpt", client)
            total = manifest.total_bytes
            bucket_name, prefix = parse_gs("gs://bench/ckpt")
            speeds: dict[str, list[float]] = {name: [] for name in PATHS}
            for r in range(args.rounds):
                for name in PATHS if r % 2 == 0 else PATHS[::-1]:
                    dst = tmp / "dst"
                    shutil.rmtree(dst, ignore_errors=True)
                    dst.mkdir()
                    start = time.perf_counter()
                    if name == "single stream":  # one connection, file after file, same sha256 check
                        for e in manifest.files:
                            target = dst / e.name
                            client.bucket(bucket_name).blob(f"{prefix}/{e.name}").download_to_filename(target)
                            if sha256_file(target) != e.sha256:
                                raise SystemExit(f"{e.name}: sha256 mismatch")
                    else:
                        sliced = 16 * 2**20 if name == "parallel + sliced" else total
                        download("gs://bench/ckpt", dst, client, workers=args.workers, slice_bytes=sliced)
                    speeds[name].append(total / 2**20 / (time.perf_counter() - start))
                    console.print(f"round {r + 1}: {name:16s} {speeds[name][-1]:8.1f} MiB/s")
    table = Table(title=f"{args.files} x {args.mib} MiB from fake-gcs-server on loopback")
    table.add_column("path")
    table.add_column("median MiB/s", justify="right")
    for name, values in speeds.items():
        table.add_row(name, f"{statistics.median(values):.1f}")
    console.print(table)
    base = statistics.median(speeds["single stream"])
    for name in PATHS[1:]:
        console.print(f"{name} / single stream: {statistics.median(speeds[name]) / base:.2f}x")
    console.print("every path verifies each file's sha256 against the manifest")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
