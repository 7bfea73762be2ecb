"""`make reliability`: hostile input, overload and faults against the local stack (vLLM on CPU and
the gateway and router as processes), and the gateway's own cost; a markdown report with every
figure and the command that measured it.

    python -m devtools.bench.reliability [--short] [--out reports/reliability]

`--short` is the bounded version `make test` runs (tests/gateway/test_reliability.py calls the
same steps with small sizes); the full run takes about 30 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console

from app.gateway.settings import GatewaySettings
from devtools.bench.reliability import faults, fuzz, nasty, overload
from devtools.bench.reliability.report import write_report
from devtools.harness.alertrig import router_process
from devtools.harness.local_stack import ROOT, LocalStack, Service, gateway, local_stack, wait_idle

console = Console(stderr=True)

# Credentials of the run: all of them must stay out of every log and every answer.
GATEWAY_KEY = "rel-gateway-key-7d1f9c0e4b2a"
ROUTER_GATEWAY_KEY = "rel-router-key-55aa0912fe3c"
SENDER_TOKEN = "rel-sender-token-c0ffee123456"
SENDER_BASIC = "pager:rel-basic-secret-9a8b7c6d"
SECRETS = {
    "gateway API key": GATEWAY_KEY,
    "the router's gateway key": ROUTER_GATEWAY_KEY,
    "sender bearer token": SENDER_TOKEN,
    "sender basic password": SENDER_BASIC.split(":", 1)[1],
}


@dataclass(frozen=True)
class Sizes:
    fuzz_examples: int
    router_examples: int
    capacity_s: int
    overload_s: int
    deadline_s: float = 10.0
    admission: int = 4  # the CPU stack's decisions in flight (the L4 default is 32)


FULL = Sizes(fuzz_examples=4000, router_examples=400, capacity_s=40, overload_s=60)
SHORT = Sizes(fuzz_examples=20, router_examples=6, capacity_s=6, overload_s=8)

GATEWAY_ENV = {
    "DGEMMA_API_KEYS": GATEWAY_KEY + "," + ROUTER_GATEWAY_KEY,
    "DGEMMA_LOG_LEVEL": "INFO",
    # Sized for 2 CPU cores and the fuzzer: fuzzed bodies stay within what the engine reads here in
    # seconds (beyond: a 400, which is what the fuzzer is after). The decision deadline is the
    # gateway's default, the one a deployment runs with.
    "DGEMMA_MAX_QUESTIONS": "16",
    "DGEMMA_MAX_READS_PER_DECISION": "48",
    "DGEMMA_MAX_QUEUED_DECISIONS": "64",
}


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident memory (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for {pid}")


def gateway_process(
    stack: LocalStack, out: Path, name: str, sizes: Sizes, engine_url: str | None = None, **env: str
) -> Any:
    """`dgemma serve` on the stack's engine (or `engine_url`, not ready on purpose), with the run's
    keys and sizes."""
    settings = {**GATEWAY_ENV, "DGEMMA_MAX_CONCURRENT_DECISIONS": str(sizes.admission), **env}
    return gateway(
        engine_url or stack.engine_url, out / f"{name}.log", model=stack.served_model, env=settings,
        ready_path="/healthz" if engine_url else "/readyz",
    )  # fmt: skip


def hostile_input(gw: Service, router_url: str, out: Path, sizes: Sizes, seed: int) -> dict[str, Any]:
    """Schemathesis on the gateway and each webhook, then the nasty bodies; peak memory after."""
    auth = {"Authorization": f"Bearer {GATEWAY_KEY}"}
    results = [
        fuzz.run("gateway", f"{gw.url}/openapi.json", base_url=gw.url, headers=auth,
                 examples=sizes.fuzz_examples, seed=seed, out=out, secrets=SECRETS),
    ]  # fmt: skip
    schema = out / "router-openapi.json"
    schema.write_text(json.dumps(fuzz.router_schema(router_app())))
    for source, headers in (
        ("alertmanager", {"Authorization": f"Bearer {SENDER_TOKEN}"}),
        ("grafana", {"Authorization": f"Bearer {SENDER_TOKEN}"}),
        ("cloud-monitoring", {"Authorization": "Basic " + _basic(SENDER_BASIC)}),
    ):
        results.append(
            fuzz.run(f"router-{source}", str(schema), base_url=router_url, headers=headers,
                     examples=sizes.router_examples, seed=seed, out=out, exclude=fuzz.ROUTER_EXCLUDED,
                     extra=["--include-path", f"/v1/alerts/{source}", "--max-response-time", "60"],
                     secrets=SECRETS)
        )  # fmt: skip
    limit = GatewaySettings.model_fields["max_body_bytes"].default  # the gateway runs with it
    wait_idle(gw.url)  # the routers' fuzzing leaves classifications the router retries later
    started = time.monotonic()

    async def corpus() -> list[nasty.Result]:
        async with httpx.AsyncClient(base_url=gw.url, headers=auth, timeout=300) as client:
            return await nasty.send_all(client, limit)

    bodies = asyncio.run(corpus())
    return {
        "fuzz": [{**asdict(r), "ok": r.ok} for r in results],
        "nasty": [asdict(b) for b in bodies],
        "nasty_seconds": round(time.monotonic() - started, 1),
        "gateway_peak_rss_mb": round(peak_rss_mb(gw.proc.pid), 1),
    }


def _basic(pair: str) -> str:
    import base64

    return base64.b64encode(pair.encode()).decode()


def router_app() -> Any:
    """A router app built only for its routes (the fuzzer's document): nothing is started."""
    from app.alerts.main import create_router_app
    from app.alerts.settings import AlertRouterSettings

    return create_router_app(AlertRouterSettings(alerts_allow_open_senders=True))


def overload_levels(gw: Service, out: Path, sizes: Sizes) -> dict[str, Any]:
    """Capacity closed-loop (as many users as admission slots), then 2x and 5x that rate, paced."""
    key, deadline = GATEWAY_KEY, sizes.deadline_s
    cap = overload.run_locust(gw.url, key, users=sizes.admission, pace_s=0, seconds=sizes.capacity_s,
                              deadline_s=deadline, out=out, name="capacity")  # fmt: skip
    levels = [cap]
    for factor in (2, 5):
        rate = factor * cap.answered_rps
        users = max(2, round(rate * deadline))
        levels.append(
            overload.run_locust(gw.url, key, users=users, pace_s=users / rate, seconds=sizes.overload_s,
                                deadline_s=deadline, out=out, name=f"{factor}x")
        )  # fmt: skip
    overload.plot(levels, deadline, out / "overload.png")
    return {
        "deadline_s": deadline,
        "gateway_deadline_s": GatewaySettings.model_fields["decision_deadline_s"].default,
        "admission": sizes.admission,
        "levels": [overload.as_dict(lv) for lv in levels],
        "plot": "overload.png",
    }


def leaked(paths: list[Path]) -> list[str]:
    """Every log in which a secret of the run shows up (the fuzzer's recorded responses are searched
    as they are read, `fuzz.run`)."""
    found = []
    for path in paths:
        if path.exists():
            text = path.read_text(errors="replace")
            found += [f"{what} in {path.name}" for what, secret in SECRETS.items() if secret in text]
    return found


def on_stack(stack: LocalStack, out: Path, sizes: Sizes, seed: int) -> tuple[dict[str, Any], list[Path]]:
    """Every step that needs a stack and leaves it running: a gateway and a router of their own on
    its engine (the run's credentials), hostile input, overload, a slow engine. Figures and logs."""
    figures: dict[str, Any] = {}
    logs = [stack.engine_log]
    with ExitStack() as services:
        gw = services.enter_context(gateway_process(stack, out, "gateway", sizes))
        router_url = services.enter_context(
            router_process(out / "router.log", ROOT / "app" / "alerts" / "default_policy.toml", gw.url,
                           DGEMMA_ALERTS_GATEWAY_API_KEY=ROUTER_GATEWAY_KEY,
                           DGEMMA_ALERTS_ALERTMANAGER_TOKEN=SENDER_TOKEN,
                           DGEMMA_ALERTS_GRAFANA_TOKEN=SENDER_TOKEN,
                           DGEMMA_ALERTS_CLOUD_MONITORING_BASIC=SENDER_BASIC)
        )  # fmt: skip
        logs += [gw.log, out / "router.log"]
        console.print("hostile input: schemathesis and the nasty bodies")
        figures["hostile"] = hostile_input(gw, router_url, out, sizes, seed)
        console.print("overload: capacity, then 2x and 5x")
        figures["overload"] = overload_levels(gw, out, sizes)
    console.print("faults: a slow engine")
    with faults.slow_proxy(stack.engine_url, 10, out / "slowproxy.log") as slow_url:
        env = {"DGEMMA_ENGINE_TIMEOUT_S": "3", "DGEMMA_RETRY_AFTER_S": "4"}
        with gateway_process(stack, out, "gateway-slow-engine", sizes, slow_url, **env) as slow_gw:
            figures["slow_engine"] = faults.slow_engine(
                slow_gw.url, GATEWAY_KEY, engine_timeout_s=3, requests=8
            )
        logs.append(slow_gw.log)
    return figures, logs


def security(figures: dict[str, Any], logs: list[Path]) -> dict[str, Any]:
    in_responses = [leak for f in figures["hostile"]["fuzz"] for leak in f["leaks"]]
    return {"secrets": list(SECRETS), "logs": [p.name for p in logs], "leaks": leaked(logs) + in_responses}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--short", action="store_true", help="the bounded version make test runs")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "reliability")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--skip-cost", action="store_true", help="leave out make bench-cost")
    args = parser.parse_args(argv)
    sizes = SHORT if args.short else FULL
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    with ExitStack() as running:
        with console.status("starting the local stack (vLLM on CPU, the toy model)"):
            stack = running.enter_context(local_stack(out / "engine.log", model="toy"))
        figures, logs = on_stack(stack, out, sizes, args.seed)
        if not args.short:
            console.print("faults: SIGTERM under load (the supervisor, as Cloud Run sends it)")
            figures["sigterm"] = faults.sigterm(stack, "any", grace_s=10)
    if not args.short:
        console.print("faults: the engine killed under load")
        with local_stack(out / "engine-2.log", model="toy") as second:
            figures["engine_killed"] = faults.engine_killed(second, "any")
        logs.append(second.engine_log)
    figures["security"] = security(figures, logs)
    if not args.short and not args.skip_cost:
        console.print("the gateway's own cost: make bench-cost")
        cost = out / "gateway-cost.json"
        subprocess.run([sys.executable, "-m", "devtools.bench.cost", "--out", str(cost)], check=True)
        figures["cost"] = json.loads(cost.read_text())
    figures.update(
        short=args.short, sizes=asdict(sizes), started=started, seconds=round(time.time() - started, 1)
    )
    (out / "figures.json").write_text(json.dumps(figures, indent=2, default=str) + "\n")
    report = write_report(figures, out)
    console.print(f"report: {report}")
    return 0 if verdict(figures) else 1


def _clean(level: dict[str, Any]) -> bool:
    """Every request of a load level answered in time: valid, or shed with Retry-After."""
    return not (level["hung"] or level["dropped"] or level["invalid"] or level["other"])


def verdict(figures: dict[str, Any]) -> bool:
    """Whether every target of the run held."""
    hostile = figures["hostile"]
    checks = [
        all(f["ok"] for f in hostile["fuzz"]),
        all(b["problem"] is None for b in hostile["nasty"]),
        all(_clean(lv) for lv in figures["overload"]["levels"]),
        figures["slow_engine"]["ok"],
        not figures["security"]["leaks"],
    ]
    checks += [figures[k]["ok"] for k in ("sigterm", "engine_killed") if k in figures]
    return all(checks)


if __name__ == "__main__":
    sys.exit(main())
