"""Gateway overhead: the same decisions sent to vLLM's native endpoint and through the gateway.

Requests alternate between the two paths (and which goes first alternates each round), so both
see the same machine state; the output is p50/p95 of each and the overhead ratio, measured side by
side in one run. `make bench` starts the local stack and runs this against it.

    python -m loadtest.overhead --gateway URL --engine URL [--rounds 40] [--plot reports/overhead.png]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from loadtest.corpus import ALERTS, QUESTIONS, decision_body
from loadtest.settings import LoadtestSettings

console = Console()
Times = dict[str, list[float]]  # seconds per request, by path ("engine", "gateway")


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, round(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass(frozen=True)
class Overhead:
    """The gateway against the raw engine, on the same requests."""

    p50_ratio: float
    p95_ratio: float
    p50_added_ms: float

    @property
    def gateway_share(self) -> float:
        """The gateway's share of a decision's time at the median (same requests, interleaved)."""
        return 1 - 1 / self.p50_ratio

    def __str__(self) -> str:
        return (
            f"p50 x{self.p50_ratio:.3f}, p95 x{self.p95_ratio:.3f} "
            f"({self.p50_added_ms:+.1f} ms at the median)"
        )


def ratios(times: Times) -> Overhead:
    e, g = times["engine"], times["gateway"]
    return Overhead(
        p50_ratio=percentile(g, 50) / percentile(e, 50),
        p95_ratio=percentile(g, 95) / percentile(e, 95),
        p50_added_ms=(percentile(g, 50) - percentile(e, 50)) * 1000,
    )


def engine_model(engine: str) -> str:
    """The name vLLM serves, from its OpenAI-compatible `/v1/models` (the first is the served name)."""
    r = httpx.get(f"{engine}/v1/models", timeout=10)
    r.raise_for_status()
    return str(r.json()["data"][0]["id"])


def run(gateway: str, engine: str, rounds: int, headers: Mapping[str, str] | None = None) -> Times:
    """`headers` go to the gateway only (default: LoadtestSettings' API-key header); the raw engine
    is reached on an internal address and checks no credentials."""
    model = engine_model(engine)
    times: Times = {"engine": [], "gateway": []}
    gateway_headers = dict(LoadtestSettings().headers() if headers is None else headers)
    with httpx.Client(timeout=120) as http, Progress(console=console) as progress:
        task = progress.add_task("alternating requests", total=rounds)

        def send(path: str, alert: dict[str, Any]) -> None:
            # The gate's own requests; the gateway reads once per question, as the engine does.
            body = decision_body(alert, "throughput", read_policy="single")
            sent: dict[str, str] = {}
            if path == "engine":
                url, body = f"{engine}/v1/systemone", {"model": model, "state": alert, "questions": QUESTIONS}
            else:
                url, sent = f"{gateway}/v1/systemone", gateway_headers
            start = time.perf_counter()
            r = http.post(url, json=body, headers=sent)
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


def report(times: Times, plot: Path | None) -> None:
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
    console.print(f"gateway/engine: {ratios(times)}")
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
    parser.add_argument("--gateway", required=True, help="gateway base URL")
    parser.add_argument("--engine", required=True, help="vLLM base URL")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--plot", type=Path, default=Path("reports/overhead.png"))
    args = parser.parse_args(argv)
    report(run(args.gateway, args.engine, args.rounds), args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
