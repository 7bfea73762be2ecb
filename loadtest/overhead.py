"""Gateway overhead: the same decisions sent to vLLM's native endpoint and through the gateway.

Requests alternate between the two paths (and which goes first alternates each round), so both
see the same machine state; the output is p50/p95 of each and the overhead ratio, measured side by
side in one run. Without --gateway/--engine it starts the local stack itself (`dgemma dev`).

    python -m loadtest.overhead [--rounds 40] [--gateway URL --engine URL] [--plot reports/overhead.png]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from deploy.localstack import local_stack
from loadtest.corpus import ALERTS, QUESTIONS, decision_body

console = Console()


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, round(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def run(gateway: str, engine: str, model: str, rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"engine": [], "gateway": []}
    headers = {"authorization": f"Bearer {os.environ.get('DGEMMA_BENCH_KEY', 'bench')}"}
    with httpx.Client(timeout=120, headers=headers) as http, Progress(console=console) as progress:
        task = progress.add_task("alternating requests", total=rounds)

        def send(path: str, alert: dict[str, Any]) -> None:
            # The gate's own requests; the gateway reads once per question, as the engine does.
            body = decision_body(alert, "throughput", read_policy="single")
            if path == "engine":
                url, body = f"{engine}/v1/systemone", {"model": model, "state": alert, "questions": QUESTIONS}
            else:
                url = f"{gateway}/v1/systemone"
            start = time.perf_counter()
            r = http.post(url, json=body)
            elapsed = time.perf_counter() - start
            r.raise_for_status()
            times[path].append(elapsed)

        for alert in ALERTS[:2]:  # warm-up, not measured: first reads fill caches on both paths
            for path in ("engine", "gateway"):
                send(path, alert)
        times = {"engine": [], "gateway": []}
        for i in range(rounds):
            alert = ALERTS[i % len(ALERTS)]
            order = ("engine", "gateway") if i % 2 == 0 else ("gateway", "engine")
            for path in order:
                send(path, alert)
            progress.advance(task)
    return times


def report(times: dict[str, list[float]], plot: Path | None) -> None:
    table = Table(title="3-question alert decisions (same requests, alternating)")
    for col in ("path", "n", "p50 ms", "p95 ms", "mean ms"):
        table.add_column(col, justify="right")
    for path, values in times.items():
        table.add_row(
            path,
            str(len(values)),
            f"{percentile(values, 50) * 1000:.1f}",
            f"{percentile(values, 95) * 1000:.1f}",
            f"{statistics.fmean(values) * 1000:.1f}",
        )
    console.print(table)
    e, g = times["engine"], times["gateway"]
    console.print(
        f"gateway/engine ratio: p50 {percentile(g, 50) / percentile(e, 50):.3f}, "
        f"p95 {percentile(g, 95) / percentile(e, 95):.3f}; "
        f"median added latency {(percentile(g, 50) - percentile(e, 50)) * 1000:+.1f} ms"
    )
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4))
        for path, values in times.items():
            xs = sorted(v * 1000 for v in values)
            ax.step(xs, [(i + 1) / len(xs) for i in range(len(xs))], where="post", label=path)
        ax.set_xlabel("latency (ms)")
        ax.set_ylabel("fraction of requests")
        ax.set_title("Decision latency: raw vLLM vs through the gateway")
        ax.legend()
        ax.grid(alpha=0.3)
        plot.parent.mkdir(parents=True, exist_ok=True)
        fig.tight_layout()
        fig.savefig(plot, dpi=120)
        console.print(f"plot: {plot}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--gateway", help="gateway base URL (default: start the local stack)")
    parser.add_argument("--engine", help="vLLM base URL")
    parser.add_argument("--model", default="dgemma-tiny-random", help="vLLM's served model name")
    parser.add_argument("--plot", type=Path, default=Path("reports/overhead.png"))
    args = parser.parse_args(argv)
    if bool(args.gateway) != bool(args.engine):
        parser.error("--gateway and --engine go together")
    if args.gateway:
        report(run(args.gateway, args.engine, args.model, args.rounds), args.plot)
        return 0
    with ExitStack() as cleanup:
        with console.status("starting the local stack (about 45 s)"):
            stack = cleanup.enter_context(local_stack(Path(".cache/bench-engine.log")))
        report(run(stack.url, stack.engine_url, stack.served_model, args.rounds), args.plot)
    return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
