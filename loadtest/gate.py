"""The rollout gate behind `dgemma loadtest`: warm-up (cold start measured apart), then Locust headless
in two phases (single-step latency at 1 user, batch@32 throughput), then the gateway's overhead against
the raw engine; reports (Locust CSV + HTML, a PNG chart, a markdown summary) and a verdict.

A library: URLs and the requests' headers in (the caller builds them: API key, ID token), numbers and
reports out. It raises ProfileError (a bad profile or override) and GateError (the gate could not
measure); a missed target is a result, not an error.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import json
import os
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console

from app.core.config import env_names
from app.core.errors import KitError
from app.core.polling import wait_until
from loadtest import overhead as bench
from loadtest.corpus import ALERTS, QUESTIONS, decision_body
from loadtest.settings import LoadtestSettings
from loadtest.validate import problem

PROFILES = Path(__file__).parent / "profiles.toml"
LOCUSTFILE = Path(__file__).parent / "locustfile.py"
# The headers of every request, or what builds them: called again at each phase, so a token it
# carries is fresh for that phase.
Headers = Mapping[str, str] | Callable[[], Mapping[str, str]]
HEADERS_ENV = env_names(LoadtestSettings)["loadtest_headers"][0]  # how the Locust users get them
console = Console(stderr=True, soft_wrap=True)


class ProfileError(KitError, ValueError):
    """An unknown profile or target, or an override that is not a number."""

    exit_code = 2
    label = "load-test profile"


class GateError(KitError, RuntimeError):
    """The gate could not measure: no valid decision in the warm-up, Locust failed, or its run
    answered nothing."""

    exit_code = 1
    label = "load-test gate"


@dataclass
class GateProfile:
    name: str
    description: str
    hourly_price_usd: float
    latency_seconds: int
    throughput_seconds: int
    users: int
    read_policy: str
    overhead_rounds: int
    targets: dict[str, dict[str, Any]]

    @classmethod
    def load(cls, name: str, path: Path = PROFILES) -> GateProfile:
        profiles = tomllib.loads(path.read_text())
        if name not in profiles:
            raise ProfileError(f"unknown profile {name!r}; {path} has: {', '.join(profiles)}")
        return cls(name=name, **profiles[name])

    def overridden(
        self,
        targets: list[str] = [],  # noqa: B006 - read only
        latency_seconds: int | None = None,
        throughput_seconds: int | None = None,
    ) -> GateProfile:
        """This profile with `NAME=VALUE` target overrides and phase lengths (None: unchanged)."""
        new_targets = dict(self.targets)
        for override in targets:
            name, _, value = override.partition("=")
            if name not in self.targets:
                raise ProfileError(f"unknown target {name!r}; known: {', '.join(self.targets)}")
            try:
                limit = float(value)
            except ValueError as e:
                raise ProfileError(f"target {name}: {value!r} is not a number") from e
            bound = "max" if "max" in self.targets[name] else "min"
            new_targets[name] = {bound: limit, "source": "command line override"}
        return dataclasses.replace(
            self,
            targets=new_targets,
            latency_seconds=latency_seconds or self.latency_seconds,
            throughput_seconds=throughput_seconds or self.throughput_seconds,
        )


@dataclass
class GatePhase:
    name: str
    users: int
    seconds: int
    stats: dict[str, float] = field(default_factory=dict)
    history: list[dict[str, float]] = field(default_factory=list)


def resolve(headers: Headers) -> dict[str, str]:
    """The headers to send now."""
    return dict(headers() if callable(headers) else headers)


def warm_up(host: str, headers: Mapping[str, str], timeout_s: float) -> float:
    """Seconds until /readyz is 200 and one decision validates (the cold start, outside the SLO)."""
    start = time.monotonic()
    body = decision_body(ALERTS[0], "throughput")
    last = ["no answer"]

    def valid_decision(http: httpx.Client) -> bool:
        try:
            if http.get("/readyz").status_code != 200:
                last[0] = "not ready"
                return False
            r = http.post("/v1/systemone", json=body)
            why = problem(r.json(), body["questions"]) if r.status_code == 200 else f"HTTP {r.status_code}"
        except (httpx.HTTPError, ValueError) as e:
            why = type(e).__name__
        if why is not None:
            last[0] = why
        return why is None

    with httpx.Client(base_url=host, timeout=60, headers=dict(headers)) as http:
        if wait_until(lambda: valid_decision(http), timeout_s, interval_s=1.0):
            return time.monotonic() - start
    raise GateError(f"warm-up: no valid decision from {host} within {timeout_s:.0f} s (last: {last[0]})")


def run_locust(
    host: str, phase: GatePhase, profile: GateProfile, out: Path, headers: Mapping[str, str]
) -> None:
    """One Locust run, headless; its CSVs and HTML land in `out` (an absolute path)."""
    with console.status(f"{phase.name}: {phase.users} user(s) for {phase.seconds} s"):
        finish_locust(start_locust(host, phase, profile, out, headers), phase, out)


def start_locust(
    host: str, phase: GatePhase, profile: GateProfile, out: Path, headers: Mapping[str, str]
) -> subprocess.Popen[str]:
    """Start one headless Locust run (several may load several hosts at once); `finish_locust`
    reads its results once it has ended."""
    # The users read the headers from their settings section; an env var, not a flag, so that a
    # token in them does not show in `ps`.
    env = {**os.environ, HEADERS_ENV: json.dumps(dict(headers))}
    cmd = [
        sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "--host", host,
        "-u", str(phase.users), "-r", str(phase.users), "-t", f"{phase.seconds}s",
        "--phase", phase.name, "--read-policy", profile.read_policy,
        "--csv", str(out / phase.name), "--csv-full-history", "--html", str(out / f"{phase.name}.html"),
        "--figures", str(out / f"{phase.name}_figures.json"),
        "--only-summary", "--stop-timeout", "10", "--exit-code-on-error", "0", "--loglevel", "WARNING",
    ]  # fmt: skip
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish_locust(proc: subprocess.Popen[str], phase: GatePhase, out: Path) -> None:
    """Wait for a Locust run and put its figures on `phase`; a failed run is a GateError. Interrupted
    (Ctrl-C, a signal to this process alone), it stops the run first: no load is left behind."""
    try:
        _, stderr = proc.communicate()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    if proc.returncode != 0:
        raise GateError(f"locust failed in the {phase.name} phase:\n{stderr[-3000:]}")
    phase.stats = _final_figures(out / f"{phase.name}_figures.json", phase)
    with (out / f"{phase.name}_stats_history.csv").open() as f:
        phase.history = [
            {
                "t": float(r["Timestamp"]),
                "rps": _num(r["Requests/s"]),
                "p50": _num(r["50%"]),
                "p95": _num(r["95%"]),
            }
            for r in csv.DictReader(f)
            if r["Name"] == "Aggregated"
        ]


def _num(value: str) -> float:
    try:
        return float(value)
    except ValueError:  # Locust writes "N/A" before the first response
        return float("nan")


def _final_figures(path: Path, phase: GatePhase) -> dict[str, float]:
    """The figures the Locust run wrote once its users had stopped (the locustfile's `--figures`).
    A run whose users raised, or that got no answer at all, measured nothing: a GateError."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise GateError(f"the {phase.name} phase's Locust run wrote no figures ({path}: {e})") from None
    if data["exceptions"]:
        raise GateError(f"Locust's users raised in the {phase.name} phase: " + "; ".join(data["exceptions"]))
    if not data["requests"]:
        raise GateError(f"no request was answered in the {phase.name} phase ({phase.seconds} s)")
    return {key: float(data[key]) for key in ("requests", "failures", "p50_ms", "p95_ms", "rps")}


def measurements(latency: GatePhase, throughput: GatePhase, questions: int) -> dict[str, float]:
    total = latency.stats["requests"] + throughput.stats["requests"]
    failures = latency.stats["failures"] + throughput.stats["failures"]
    # Successful throughput: failed requests answered nothing.
    good = throughput.stats["rps"] * (1 - throughput.stats["failures"] / max(1, throughput.stats["requests"]))
    return {
        "latency_p50_ms": latency.stats["p50_ms"],
        "latency_p95_ms": latency.stats["p95_ms"],
        "throughput_rps": good,
        "throughput_decisions_per_s": good * questions,
        "throughput_p95_ms": throughput.stats["p95_ms"],
        "failure_ratio": failures / max(1, total),
    }


def check(targets: dict[str, dict[str, Any]], measured: dict[str, float]) -> list[str]:
    """Messages naming every missed target (empty when the gate passes)."""
    missed = []
    for name, target in targets.items():
        value = measured[name]
        if "max" in target and not value <= target["max"]:
            missed.append(f"{name} = {value:.3g}, above the target of {target['max']}")
        if "min" in target and not value >= target["min"]:
            missed.append(f"{name} = {value:.3g}, below the target of {target['min']}")
    return missed


def chart(latency: GatePhase, throughput: GatePhase, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_lat, ax_tput) = plt.subplots(2, 1, figsize=(9, 6), sharex=False)
    for phase, style in ((latency, "-"), (throughput, "--")):
        if not phase.history:
            continue
        t0 = phase.history[0]["t"]
        ts = [h["t"] - t0 for h in phase.history]
        for pct in ("p50", "p95"):
            ax_lat.plot(ts, [h[pct] for h in phase.history], style, label=f"{phase.name} {pct}")
        ax_tput.plot(
            ts, [h["rps"] for h in phase.history], style, label=f"{phase.name} ({phase.users} users)"
        )
    ax_lat.set_ylabel("latency (ms)")
    ax_lat.set_yscale("log")
    ax_lat.legend(fontsize=8)
    ax_lat.grid(alpha=0.3)
    ax_tput.set_ylabel("requests/s")
    ax_tput.set_xlabel("seconds into the phase")
    ax_tput.legend(fontsize=8)
    ax_tput.grid(alpha=0.3)
    fig.suptitle("Load-test gate: latency percentiles and throughput over time")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def summary(
    profile: GateProfile,
    host: str,
    measured: dict[str, float],
    missed: list[str],
    cold_start_s: float,
    overhead: bench.Overhead | None,
) -> str:
    per_1000 = profile.hourly_price_usd / max(1e-9, measured["throughput_decisions_per_s"] * 3600) * 1000
    lines = [
        f"# Load-test gate: {profile.name} — {'PASS' if not missed else 'FAIL'}",
        "",
        f"{profile.description}. Host {host}, {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC.",
        "",
        "| target | measured | limit | source |",
        "| --- | ---: | ---: | --- |",
    ]
    for name, target in profile.targets.items():
        limit = f"<= {target['max']}" if "max" in target else f">= {target['min']}"
        lines.append(f"| {name} | {measured[name]:.4g} | {limit} | {target['source']} |")
    lines += [
        "",
        f"- cold start (until /readyz and one valid decision; outside the SLO): {cold_start_s:.1f} s",
        f"- cost per 1,000 decisions at ${profile.hourly_price_usd:.2f}/h and the measured "
        f"{measured['throughput_decisions_per_s']:.3g} decisions/s: ${per_1000:.4f}",
    ]
    if overhead:
        lines.append(f"- gateway overhead vs the raw engine (same requests, interleaved): {overhead}")
    if missed:
        lines += ["", "Missed:", *[f"- {m}" for m in missed]]
    return "\n".join(lines) + "\n"


@dataclass
class GateResult:
    """What one gate run measured; `missed` names every missed target (empty: it passed)."""

    profile: str
    measured: dict[str, float]
    missed: list[str]
    cold_start_s: float
    overhead: bench.Overhead | None
    phases: dict[str, GatePhase]


def run(
    host: str,
    profile: GateProfile,
    out: Path,
    *,
    headers: Headers | None = None,
    engine_url: str | None = None,
    warmup_timeout_s: float = 900,
    on_phase: Callable[[str], None] | None = None,
) -> GateResult:
    """Run the gate against `host`; reports land in `out`. `headers` go with every request to
    `host` (default: LoadtestSettings' API-key header). `on_phase` hears each phase's name as it
    starts ("latency", "throughput", "overhead") and "done"."""
    if headers is None:
        headers = LoadtestSettings().headers()
    out = out.resolve()  # one meaning, whatever directory Locust or the caller runs in
    out.mkdir(parents=True, exist_ok=True)
    cold_start = warm_up(host, resolve(headers), warmup_timeout_s)
    console.print(f"warm: {cold_start:.1f} s to the first valid decision")
    latency = GatePhase("latency", 1, profile.latency_seconds)
    throughput = GatePhase("throughput", profile.users, profile.throughput_seconds)
    hear = on_phase or (lambda _: None)
    for phase in (latency, throughput):
        hear(phase.name)
        run_locust(host, phase, profile, out, resolve(headers))
    measured = measurements(latency, throughput, questions=len(QUESTIONS))
    overhead = None
    if engine_url:
        hear("overhead")
        try:
            times = bench.run(host, engine_url, profile.overhead_rounds, resolve(headers))
        except httpx.HTTPError as e:  # a refused or dropped request: the ratio cannot be had
            raise GateError(f"the gateway's overhead could not be measured: {e}") from e
        overhead = bench.ratios(times)
    hear("done")
    missed = check(profile.targets, measured)
    chart(latency, throughput, out / "chart.png")
    text = summary(profile, host, measured, missed, cold_start, overhead)
    (out / "summary.md").write_text(text)
    print(text)
    for m in missed:
        console.print(f"[red]missed:[/] {m}")
    phases = {"latency": latency, "throughput": throughput}
    return GateResult(profile.name, measured, missed, cold_start, overhead, phases)
