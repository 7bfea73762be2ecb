"""`make bench-ledger`: what the durable ledger adds to a delivery, side by side in one run: the
same router, once with its memory ledger and once with the ledger on the GCS emulator
(fake-gcs-server on loopback), deliveries alternating between the two.

python -m devtools.bench.ledger [--rounds 60] [--plot reports/ledger.png]
    [--outage-rounds 4] [--outage-plot reports/ledger-outage.png]

Each round sends one new Alertmanager alert to each router and times the webhook's answer: the
decision (the instant stand-in engine behind a real gateway: no model time), the ledger's facts and
claims, and the sinks (a PagerDuty-shaped receiver and a webhook, both on loopback). Then the same
alert resolved. Loopback storage is far faster than Cloud Storage: the report adds a projection
from a third-party per-call figure (Google publishes none), labelled as a projection.

Then the store failing (devtools/bench/ledger_outage.py): two routers sharing the ledger, the decision
service down, bursts of new alerts with the store healthy, slow (2 s added to each request) and
down (the emulator stopped), the states taking turns round after round; time to page, what the
senders saw, pages lost and duplicated, side by side.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from deploy.runtime.weights import client_from_env
from devtools.bench.alerts import boxplot_ms
from devtools.bench.alerts import delivery as new_alert
from devtools.bench.ledger_outage import SLOW_S, Burst, State, outage_rig
from devtools.harness.alertrig import POLICY, Receiver, router, write_policy
from devtools.harness.gcs import fake_gcs
from devtools.harness.local_stack import ROOT, gateway, instant_engine
from devtools.harness.loopback import serve
from loadtest.overhead import percentile

# Store calls one after the other on a new alert's path (app/alerts/triage.py): list the episode,
# create `chosen`, then the sinks at once, each: claim, re-list, (send), fact; the claim's release
# runs after the answer.
CALLS_ON_PATH = 5
# Small-object operations on an object store, per call: a third-party figure (30-150 ms), not Google's.
PER_CALL_MS = (30, 150)


def delivery(n: int, arm: str, status: str = "firing") -> dict[str, Any]:
    """bench_alerts' new alert for round `n` of `arm`, firing or resolved."""
    payload = new_alert(n, arm)
    payload["status"] = payload["alerts"][0]["status"] = status
    return payload


def timed(url: str, payload: dict[str, Any]) -> float:
    started = time.perf_counter()
    r = httpx.post(f"{url}/v1/alerts/alertmanager", json=payload, timeout=60)
    took = time.perf_counter() - started
    r.raise_for_status()
    return took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--plot", type=Path, default=Path("reports/ledger.png"))
    parser.add_argument("--outage-rounds", type=int, default=4, help="rounds of the store's states (0: none)")
    parser.add_argument("--outage-plot", type=Path, default=Path("reports/ledger-outage.png"))
    args = parser.parse_args(argv)
    console = Console(stderr=True)
    root = ROOT / ".cache" / "bench-ledger"
    root.mkdir(parents=True, exist_ok=True)
    with ExitStack() as cleanup:
        with console.status("starting the emulator, the instant engine, the gateway and two routers"):
            gcs_url = cleanup.enter_context(fake_gcs(root / "gcs"))
            os.environ["STORAGE_EMULATOR_HOST"] = gcs_url
            client = client_from_env("bench")
            if client.lookup_bucket("ledger") is None:
                client.create_bucket("ledger")
            engine = cleanup.enter_context(instant_engine(root / "engine.log"))
            gw = cleanup.enter_context(
                gateway(engine.url, root / "gateway.log", env={"DGEMMA_ALLOW_ANY_KEY": "true"})
            )
            pd, hook = Receiver(), Receiver(ok=200)
            pd_url = cleanup.enter_context(serve(pd.answer)).url
            hook_url = cleanup.enter_context(serve(hook.answer)).url
            policy = write_policy(root, pd_url, hook_url, POLICY)
            common = {
                "DGEMMA_ALERTS_ALLOW_OPEN_SENDERS": "true",
                "DGEMMA_ALERTS_GATEWAY_API_KEY": "bench",
                "DGEMMA_LOG_LEVEL": "WARNING",
            }
            arms = {
                "memory": cleanup.enter_context(
                    router(root / "memory.log", policy, gw.url, port=None, **common)
                ).url,
                "GCS emulator": cleanup.enter_context(
                    router(
                        root / "gcs.log",
                        policy,
                        gw.url,
                        port=None,
                        STORAGE_EMULATOR_HOST=gcs_url,
                        DGEMMA_ALERTS_LEDGER_URL=f"gs://ledger/bench-{int(time.time())}",
                        **common,
                    )
                ).url,
            }
        firing: dict[str, list[float]] = {arm: [] for arm in arms}
        resolved: dict[str, list[float]] = {arm: [] for arm in arms}
        for arm, url in arms.items():  # warm-up: connections, imports, the first listing
            timed(url, delivery(-1, arm))
        with Progress(console=console, transient=True) as progress:
            task = progress.add_task("rounds (firing and resolved, both arms)", total=args.rounds)
            for n in range(args.rounds):
                order = list(arms) if n % 2 == 0 else list(reversed(arms))
                for arm in order:
                    firing[arm].append(timed(arms[arm], delivery(n, arm)))
                for arm in order:
                    resolved[arm].append(timed(arms[arm], delivery(n, arm, "resolved")))
                progress.advance(task)
        triggers = sum(b["event_action"] == "trigger" for b in pd.accepted)
        report(firing, resolved, args.plot, args.rounds)
        console.print(f"PagerDuty triggers accepted: {triggers} for {2 * (args.rounds + 1)} alerts")
    if args.outage_rounds:
        outages(root / "outage", args.outage_rounds, args.outage_plot, console)
    return 0


OUTAGE_STATES: tuple[State, ...] = ("healthy", "slow", "stopped")


def outages(root: Path, rounds: int, plot: Path | None, console: Console, alerts: int = 4) -> None:
    """Bursts of `alerts` new alerts per state and round, the states' order turning each round."""
    bursts: dict[State, list[Burst]] = {state: [] for state in OUTAGE_STATES}
    with console.status("starting the emulator, its fault proxy and two routers"):
        rig = ExitStack()
        outage = rig.enter_context(outage_rig(root))
    with rig, Progress(console=console, transient=True) as progress:
        task = progress.add_task("bursts (healthy, slow, stopped, taking turns)", total=rounds * 3)
        for n in range(rounds):
            k = n % len(OUTAGE_STATES)
            for state in OUTAGE_STATES[k:] + OUTAGE_STATES[:k]:
                bursts[state].append(outage.burst(state, alerts))
                progress.advance(task)
    merged = {state: Burst(state, [t for b in runs for t in b.trials]) for state, runs in bursts.items()}
    table = Table(
        title=f"the ledger's store failing: {rounds} bursts of {alerts} new alerts per state, two routers, "
        "the decision service down (loopback)"
    )
    for column in ("store", "page p50 s", "page max s", "lost", "duplicates", "senders saw", "answer max s"):
        table.add_column(column, justify="left" if column in ("store", "senders saw") else "right")
    for state, b in merged.items():
        p = b.page_s
        table.add_row(
            f"{state}" + (f" (+{SLOW_S:g} s a request)" if state == "slow" else ""),
            f"{percentile(p, 50):.2f}", f"{max(p):.2f}", str(b.lost), str(b.duplicates),
            ", ".join(f"{n}x {code}" for code, n in sorted(b.statuses.items())), f"{max(b.answer_s):.2f}",
        )  # fmt: skip
    console.print(table)
    console.print(
        "duplicates: each router pages an alert it routed from memory once; the other may too. "
        "The first alert after a fault pays the store's timeout (1 s); later ones are routed from "
        "memory at once."
    )
    if plot is not None:
        boxplot_ms(
            {state: b.page_s for state, b in merged.items()},
            "ms from the sender's POST to the first page (loopback; decision service down)",
            plot,
            budget_s=5.0,
            height=2.8,
        )
        console.print(f"plot: {plot}")


def report(
    firing: dict[str, list[float]], resolved: dict[str, list[float]], plot: Path | None, rounds: int
) -> None:
    console = Console()
    table = Table(title=f"delivery answered, {rounds} alerts per arm, alternating (loopback)")
    for column in ("ledger", "firing p50 ms", "firing p95 ms", "resolved p50 ms", "resolved p95 ms"):
        table.add_column(column, justify="left" if column == "ledger" else "right")
    for arm in firing:
        f, r = firing[arm], resolved[arm]
        table.add_row(
            arm, *(f"{percentile(v, q) * 1000:.1f}" for v, q in ((f, 50), (f, 95), (r, 50), (r, 95)))
        )
    console.print(table)
    arms = list(firing)
    added = sorted(g - m for g, m in zip(firing[arms[1]], firing[arms[0]], strict=True))
    median_added = added[len(added) // 2] * 1000
    console.print(
        f"added per firing delivery (paired, median): {median_added:.1f} ms on the emulator; "
        f"ratio of medians {percentile(firing[arms[1]], 50) / percentile(firing[arms[0]], 50):.2f}x"
    )
    low, high = (CALLS_ON_PATH * ms for ms in PER_CALL_MS)
    console.print(
        f"projection, not measured: {CALLS_ON_PATH} Cloud Storage calls one after the other per new alert; "
        f"at {PER_CALL_MS[0]}-{PER_CALL_MS[1]} ms per small-object call (a third-party figure; Google "
        f"publishes no latency objective), {low}-{high} ms per alert on Cloud Run"
    )
    if plot is not None:
        series = {
            f"{arm}, {kind}": v
            for arm in arms
            for kind, v in (("firing", firing[arm]), ("resolved", resolved[arm]))
        }
        boxplot_ms(series, "ms until the webhook is answered (loopback; instant engine)", plot, height=3.2)
        console.print(f"plot: {plot}")


if __name__ == "__main__":
    sys.exit(main())
