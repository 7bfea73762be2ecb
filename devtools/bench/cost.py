"""`make bench-cost`: the gateway's own cost per decision, a baseline commit against this tree.

An instant stand-in of vLLM (`devtools.harness.instant_engine`) answers every read at once, so what is
left is the gateway: its CPU seconds per decision (read off its process) and the latency it adds
at the median over calling the stand-in directly. Two gateways run side by side on one stand-in,
the baseline's code (a `git archive` of `--baseline`) and this tree's, and requests rotate between
the direct path, the two gateways and a floor (a bare pass-through proxy on the same client:
the least any Python hop costs here), so all see the same machine state.

    python -m devtools.bench.cost [--baseline REF] [--rounds 400] [--policies single,adaptive]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from io import BytesIO
from pathlib import Path
from typing import Any

import httpx
import psutil
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from devtools.harness.local_stack import ROOT, gateway, instant_engine
from loadtest.corpus import ALERTS, QUESTIONS, decision_body
from loadtest.overhead import percentile

# The gateway before the cost work (issue 12): the "before" of the README's figures.
DEFAULT_BASELINE = "67c2025"
KEY = "bench-cost-key"
MODEL = "dgemma"
console = Console()


@dataclass(frozen=True)
class PathCost:
    """One path's figures for one policy."""

    path: str
    policy: str
    n: int
    p50_ms: float
    p95_ms: float
    added_p50_ms: float  # over the direct call to the stand-in
    cpu_ms: float  # the gateway process's CPU per decision (0 for the direct path)


def baseline_tree(ref: str) -> Path:
    """The tracked files of `ref`, unpacked once under .cache (its sha names the folder)."""
    sha = subprocess.run(
        ["git", "rev-parse", "--verify", f"{ref}^{{commit}}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    tree = ROOT / ".cache" / "bench-cost" / sha[:12]
    if not (tree / "app").is_dir():
        archive = subprocess.run(["git", "archive", sha], cwd=ROOT, capture_output=True, check=True).stdout
        tree.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(tree, filter="data")
    return tree


def start(
    running: ExitStack, baseline: Path, logs: Path, python: str
) -> tuple[dict[str, str], dict[str, int]]:
    """The stand-in, the floor and both gateways, until `running` closes: {path: base URL} and
    {path: pid} of the hops (the hops on `python`, the stand-in on this interpreter)."""
    engine = running.enter_context(instant_engine(logs / "engine.log", model=MODEL))
    hops = {"floor": running.enter_context(
        instant_engine(logs / "floor.log", model=MODEL, floor=engine.url, python=python)
    )}  # fmt: skip
    settings = {"DGEMMA_API_KEYS": KEY, "DGEMMA_LOG_LEVEL": "INFO"}
    for name, tree in (("before", baseline), ("after", ROOT)):
        log = logs / f"gateway-{name}.log"
        hops[name] = running.enter_context(
            gateway(engine.url, log, model=MODEL, cwd=tree, python=python, env=settings)
        )
    urls = {"engine": engine.url, **{name: hop.url for name, hop in hops.items()}}
    return urls, {name: hop.proc.pid for name, hop in hops.items()}


def measure(
    urls: dict[str, str], pids: dict[str, int], policy: str, rounds: int, block: int
) -> list[PathCost]:
    """`rounds` decisions on each path, `block` in a row on one path before the next (rotating
    which goes first); CPU read off each hop's process."""
    hops = {name: psutil.Process(pid) for name, pid in pids.items()}
    paths = ["engine", *hops]
    times: dict[str, list[float]] = {p: [] for p in paths}
    auth = {"authorization": f"Bearer {KEY}"}

    def send(http: httpx.Client, path: str, alert: dict[str, Any], record: bool) -> None:
        headers: dict[str, str] = {}
        if path == "engine":
            body: dict[str, Any] = {"model": MODEL, "state": alert, "questions": QUESTIONS}
        else:
            body, headers = decision_body(alert, "throughput", policy), auth
        start = time.perf_counter()
        r = http.post(f"{urls[path]}/v1/systemone", json=body, headers=headers)
        elapsed = time.perf_counter() - start
        r.raise_for_status()
        if record:
            times[path].append(elapsed)

    with httpx.Client(timeout=30) as http, Progress(console=console, transient=True) as progress:
        for i in range(20):  # warm-up: imports, caches, connection pools
            for path in paths:
                send(http, path, ALERTS[i % len(ALERTS)], record=False)
        cpu0 = {name: _cpu(p) for name, p in hops.items()}
        task = progress.add_task(f"{policy}: rotating requests", total=rounds)
        for r in range(0, rounds, block):
            n = min(block, rounds - r)
            for j in range(len(paths)):
                path = paths[(r // block + j) % len(paths)]
                for i in range(r, r + n):
                    send(http, path, ALERTS[i % len(ALERTS)], record=True)
            progress.advance(task, n)
        cpu = {name: (_cpu(p) - cpu0[name]) / rounds for name, p in hops.items()}
    direct = percentile(times["engine"], 50)
    return [
        PathCost(
            path=p,
            policy=policy,
            n=len(times[p]),
            p50_ms=percentile(times[p], 50) * 1000,
            p95_ms=percentile(times[p], 95) * 1000,
            added_p50_ms=(percentile(times[p], 50) - direct) * 1000,
            cpu_ms=cpu.get(p, 0.0) * 1000,
        )
        for p in paths
    ]


def _cpu(p: psutil.Process) -> float:
    t = p.cpu_times()
    return float(t.user + t.system)


def report(costs: list[PathCost], baseline: str, out: Path | None) -> None:
    table = Table(
        title=f"The gateway's own cost per 3-question decision (before: {baseline}, after: this tree)"
    )
    for col in ("policy", "path", "n", "p50 ms", "p95 ms", "added p50 ms", "hop CPU ms"):
        table.add_column(col, justify="right")
    for c in costs:
        cpu = "-" if c.path == "engine" else f"{c.cpu_ms:.2f}"
        added = "-" if c.path == "engine" else f"{c.added_p50_ms:.2f}"
        table.add_row(c.policy, c.path, str(c.n), f"{c.p50_ms:.2f}", f"{c.p95_ms:.2f}", added, cpu)
    console.print(table)
    for policy in dict.fromkeys(c.policy for c in costs):
        by = {c.path: c for c in costs if c.policy == policy}
        before, after = by["before"], by["after"]
        console.print(
            f"{policy}: after/before CPU x{after.cpu_ms / before.cpu_ms:.2f} "
            f"({before.cpu_ms:.2f} -> {after.cpu_ms:.2f} ms), added p50 "
            f"x{after.added_p50_ms / before.added_p50_ms:.2f} "
            f"({before.added_p50_ms:.2f} -> {after.added_p50_ms:.2f} ms)"
        )
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(
            json.dumps({"baseline": baseline, "costs": [asdict(c) for c in costs]}, indent=2) + "\n"
        )
        console.print(f"figures: {out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--baseline", default=DEFAULT_BASELINE, help="git ref of the 'before' gateway")
    parser.add_argument("--rounds", type=int, default=400, help="decisions per path and policy")
    parser.add_argument("--policies", default="single,adaptive")
    parser.add_argument(
        "--python", default=sys.executable,
        help="interpreter of the gateways and the floor (the image's is a 3.12 venv of the gateway's lock)",
    )  # fmt: skip
    parser.add_argument(
        "--block", type=int, default=25,
        help="decisions in a row on one path (1: every request alternates, the coldest caches)",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, default=Path("reports/gateway-cost.json"))
    args = parser.parse_args(argv)
    with ExitStack() as running:
        with console.status("starting the stand-in, the floor and two gateways"):
            logs = ROOT / ".cache" / "bench-cost" / "logs"
            urls, pids = start(running, baseline_tree(args.baseline), logs, args.python)
        costs = [
            c
            for policy in args.policies.split(",")
            for c in measure(urls, pids, policy, args.rounds, args.block)
        ]
    report(costs, args.baseline, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
