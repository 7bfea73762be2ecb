"""`make bench-alerts`: what the alert router adds to a decision, and how soon a page goes out when
the decision service answers, is slow, or is down; measured side by side in one run on a local stack
started here (the tiny model on CPU: the router's own share is what carries over to an L4, the
decision time does not).

python -m devtools.bench.alerts [--rounds 10] [--budget 5] [--plot reports/alerts.png]

Each round sends one new alert through each path, alternating:
- `decision`: the policy's Jev request for that alert, straight to the gateway (the floor);
- `page, service up`: the Alertmanager webhook to the router, until the PagerDuty receiver has the page;
- `page, service down` (the gateway answers 503) and `page, service slow` (it answers 1 s after the
  budget): the same, where the router pages unclassified on its fallback route (each round then
  waits for that page's classified update, so its load stays out of the next measurements).
Every path goes through the same loopback proxy in front of the gateway.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from app.alerts.formats import parse
from app.alerts.policy import Policy
from app.core.polling import wait_until
from devtools.harness.alertrig import Proxy, Receiver, router_process, write_policy
from devtools.harness.local_stack import ROOT, local_stack
from devtools.harness.loopback import serve
from loadtest.overhead import percentile

TEMPLATE = json.loads((ROOT / "tests" / "data" / "alerts" / "alertmanager_firing.json").read_text())


def delivery(n: int, phase: str) -> dict[str, Any]:
    """An Alertmanager group of one new alert (its own fingerprint)."""
    payload: dict[str, Any] = json.loads(json.dumps(TEMPLATE))
    alert = payload["alerts"][0]
    alert["fingerprint"] = hashlib.sha256(f"{phase}/{n}".encode()).hexdigest()[:16]
    alert["labels"]["alertname"] = f"Bench{n}"
    payload["alerts"] = [alert]
    return payload


def key_of(payload: dict[str, Any]) -> str:
    return f"alertmanager:{payload['alerts'][0]['fingerprint']}"


def time_to_page(router: str, pd: Receiver, payload: dict[str, Any]) -> float:
    """Seconds from the webhook's POST to the PagerDuty receiver accepting the page."""
    key = key_of(payload)
    started = time.monotonic()
    r = httpx.post(f"{router}/v1/alerts/alertmanager", json=payload, timeout=120)
    r.raise_for_status()
    if not wait_until(lambda: pd.arrival(key) is not None, 30, interval_s=0.002):
        raise RuntimeError(f"no page for {key}")
    arrived = pd.arrival(key)
    assert arrived is not None
    return arrived - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--budget", type=float, default=5.0, help="the router's decision budget (s)")
    parser.add_argument("--plot", type=Path, default=Path("reports/alerts.png"))
    args = parser.parse_args(argv)
    console = Console(stderr=True)
    root = ROOT / ".cache" / "bench-alerts"
    with ExitStack() as cleanup:
        with console.status("starting the local stack (about 45 s)"):
            stack = cleanup.enter_context(local_stack(ROOT / ".cache" / "bench-engine.log", model="random"))
        pd, audit = Receiver(), Receiver(ok=200)
        pd_server = cleanup.enter_context(serve(pd.answer))
        audit_server = cleanup.enter_context(serve(audit.answer))
        proxy = Proxy(stack.url)
        proxy_url = cleanup.enter_context(serve(proxy.answer)).url
        policy_file = write_policy(root, pd_server.url, audit_server.url)
        router = cleanup.enter_context(
            router_process(
                root / "router.log",
                policy_file,
                proxy_url,
                DGEMMA_ALERTS_DECISION_BUDGET_S=str(args.budget),
                DGEMMA_ALERTS_GATEWAY_API_KEY="bench",
                DGEMMA_ALERTS_ALLOW_OPEN_SENDERS="true",
            )
        )
        policy = Policy.load(policy_file)
        gateway = cleanup.enter_context(
            httpx.Client(base_url=proxy_url, headers={"authorization": "Bearer bench"}, timeout=120)
        )

        def decision(payload: dict[str, Any]) -> float:
            request = policy.request(parse("alertmanager", payload).alerts[0])
            body = request.model_dump(mode="json", exclude_none=True)  # as the router sends it
            started = time.monotonic()
            gateway.post("/v1/systemone", json=body).raise_for_status()
            return time.monotonic() - started

        def up(p: dict[str, Any]) -> float:
            return time_to_page(router, pd, p)

        def updated(p: dict[str, Any]) -> None:
            """Until the late classification of an unclassified page has landed: its load must not
            fall on the next round's measurements."""
            if not wait_until(lambda: len(pd.about(key_of(p))) >= 2, 120, interval_s=0.05):
                raise RuntimeError(f"no update for {key_of(p)}")
            # The decision the router gave up on still reaches the gateway through the proxy.
            wait_until(lambda: proxy.in_flight == 0, 60, interval_s=0.05)

        def down(p: dict[str, Any]) -> float:
            proxy.down = True
            try:
                took = time_to_page(router, pd, p)
            finally:
                proxy.down = False
            updated(p)
            return took

        def slow(p: dict[str, Any]) -> float:
            proxy.delay_s = args.budget + 1.0
            try:
                took = time_to_page(router, pd, p)
            finally:
                proxy.delay_s = 0.0
            updated(p)
            return took

        paths: dict[str, Callable[[dict[str, Any]], float]] = {
            "decision": decision,
            "page, service up": up,
            "page, service down": down,
            "page, service slow": slow,
        }
        times: dict[str, list[float]] = {name: [] for name in paths}
        decision(delivery(-1, "warm-up"))
        with Progress(console=console, transient=True) as progress:
            task = progress.add_task("rounds", total=args.rounds)
            for n in range(args.rounds):
                for name, measure in paths.items():
                    times[name].append(measure(delivery(n, name)))
                progress.advance(task)
        up_keys = [key_of(delivery(n, "page, service up")) for n in range(args.rounds)]
        classified = sum(pd.about(k)[0]["payload"]["custom_details"]["classified"] for k in up_keys)
        report(times, args.budget, args.plot)
        Console().print(f"service up: {classified} of {args.rounds} pages classified within the budget")
    return 0


def report(times: dict[str, list[float]], budget_s: float, plot: Path | None) -> None:
    base = percentile(times["decision"], 50)
    table = Table(title=f"alert to page, {len(times['decision'])} alerts per path (budget {budget_s:g} s)")
    for column in ("path", "p50 ms", "p95 ms", "p50 vs decision"):
        table.add_column(column, justify="left" if column == "path" else "right")
    for name, values in times.items():
        p50 = percentile(values, 50)
        table.add_row(name, f"{p50 * 1000:.0f}", f"{percentile(values, 95) * 1000:.0f}", f"{p50 / base:.2f}x")
    console = Console()
    console.print(table)
    paired = sorted(u - d for u, d in zip(times["page, service up"], times["decision"], strict=True))
    console.print(
        f"router overhead per alert (page with the service up minus the same alert's decision, "
        f"median of pairs): {paired[len(paired) // 2] * 1000:.0f} ms"
    )
    if plot is not None:
        xlabel = "ms (tiny model on CPU; an L4 changes the decision, not the router)"
        boxplot_ms(times, xlabel, plot, budget_s=budget_s)
        console.print(f"plot: {plot}")


def boxplot_ms(
    series: dict[str, list[float]],
    xlabel: str,
    plot: Path,
    *,
    budget_s: float | None = None,
    height: float = 3.5,
) -> None:
    """A horizontal box per series of seconds, drawn in ms (and the decision budget, if any)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, height))
    ax.boxplot([[v * 1000 for v in values] for values in series.values()], orientation="horizontal")
    ax.set_yticks(range(1, len(series) + 1), list(series))
    if budget_s is not None:
        ax.axvline(budget_s * 1000, linestyle="--", color="grey", label="decision budget")
        ax.legend(loc="lower right")
    ax.set_xlabel(xlabel)
    fig.tight_layout()
    plot.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(plot, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
