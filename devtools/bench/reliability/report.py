"""The markdown report of `make reliability`: each target, its figure, pass or fail, and how it was
measured (the machine, the sizes, the commands)."""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from devtools.tables import header, row


def _mark(ok: bool) -> str:
    return "pass" if ok else "**FAIL**"


def machine() -> str:
    cpu = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
         if line.startswith("model name")),
        platform.processor() or "unknown CPU",
    )  # fmt: skip
    gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} cores ({cpu}), {gib:.0f} GiB, no GPU; Python {platform.python_version()}"


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        return "unknown"


def write_report(figures: dict[str, Any], out: Path) -> Path:
    h = figures["hostile"]
    when = dt.datetime.fromtimestamp(figures["started"], dt.UTC)
    short = " --short" if figures["short"] else ""
    lines = [
        f"# Reliability report ({'short' if figures['short'] else 'full'} run)",
        "",
        f"- When: {when:%Y-%m-%d %H:%M} UTC, commit {_commit()}, {figures['seconds'] / 60:.1f} min in all.",
        f"- Machine: {machine()}. vLLM 0.32 on CPU serving the toy model; "
        "every GPU figure elsewhere is a projection.",
        f"- Command: `make reliability` (`python -m devtools.bench.reliability{short}`); raw figures in "
        "`figures.json`, recordings (VCR cassettes, Locust CSV) beside this file.",
        "",
        "## Hostile input",
        "",
        *header(
            "target", "service", "requests", "responses >= 500", "4xx without `detail`",
            "schemathesis check failures", "", align="llrrrl",
        ),
    ]  # fmt: skip
    for f in h["fuzz"]:
        checks = ", ".join(f"{k} {v}" for k, v in f["check_failures"].items()) or "none"
        lines.append(
            row(
                f"schemathesis, seed {f['seed']}", f["service"], f["requests"], len(f["server_errors"]),
                len(f["missing_detail"]), checks, _mark(f["ok"]),
            )
        )  # fmt: skip
    total = sum(f["requests"] for f in h["fuzz"])
    bad = [b for b in h["nasty"] if b["problem"]]
    lines += [
        "",
        f"- Generated requests in all: **{total}** "
        f"({sum(f['seconds'] for f in h['fuzz']) / 60:.1f} min of fuzzing).",
        f"- Hand-written nasty bodies: {len(h['nasty'])} cases in {h['nasty_seconds']} s, "
        f"{len(bad)} outside their allowed statuses. {_mark(not bad)}",
        f"- The gateway's peak memory (VmHWM) after all of it: **{h['gateway_peak_rss_mb']} MiB**.",
        "",
        *header("nasty body", "bytes sent", "status", "ms", align="lr"),
    ]
    lines += [
        row(b["name"], b["body_bytes"], b["status"], f"{b['seconds'] * 1000:.0f}")
        + (f" shed {b['shed']} time(s) first (429) |" if b.get("shed") else "")
        + (f" **{b['problem']}**" if b["problem"] else "")
        for b in h["nasty"]
    ]
    for f in h["fuzz"]:
        for item in f["server_errors"][:5] + f["missing_detail"][:5]:
            lines.append(f"- {f['service']}: `{item}`")
    o = figures["overload"]
    lines += [
        "",
        "## Overload",
        "",
        f"Admission: {o['admission']} decisions in flight (the CPU stack's size); the gateway's decision "
        f"deadline {o['gateway_deadline_s']:g} s (a decision waits in line while the time it has "
        "left exceeds the longest of the last 16 decisions' reads; Locust, as the SDK, states no "
        f"timeout); client deadline {o['deadline_s']:g} s (the SDK's). Capacity is measured closed-loop, "
        "then Locust offers 2x and 5x that rate with paced users (open loop).",
        "",
        *header(
            "level", "offered req/s", "sent", "answered (valid)", "answered req/s", "shed 429/503",
            "shed without Retry-After", "hung past deadline", "dropped", "invalid", "other",
            "admitted p50 / p99 ms", "slowest ms", "", align="lrrrrrrrrrllrl",
        ),
    ]  # fmt: skip
    for lv in o["levels"]:
        ok = not (lv["hung"] or lv["dropped"] or lv["invalid"] or lv["other"])
        lines.append(
            row(
                lv["name"], f"{lv['offered_rps']:.2f}", lv["sent"], lv["ok"], f"{lv['answered_rps']:.2f}",
                f"{lv['shed']} ({lv['shed_share']:.0%})", lv["shed_without_retry_after"], lv["hung"],
                lv["dropped"], lv["invalid"], lv["other"] or "-",
                f"{lv['ok_p50_ms']:.0f} / {lv['ok_p99_ms']:.0f}", f"{lv['slowest_ms']:.0f}", _mark(ok),
            )
        )  # fmt: skip
    lines += ["", f"![overload]({o['plot']})", "", "## Faults", ""]
    s = figures["slow_engine"]
    lines += [
        "- **Slow engine** (a proxy holding every engine call 10 s; "
        f"engine timeout {s['engine_timeout_s']:g} s): "
        f"{s['requests']} decisions at once got {s['statuses']}, {s['with_retry_after']} with Retry-After, "
        f"in {s['fastest_s']}-{s['slowest_s']} s (the client's deadline: {s['deadline_s']:g} s); "
        f"/readyz {s['readyz']}. {_mark(s['ok'])}",
    ]
    if "sigterm" in figures:
        t = figures["sigterm"]
        lines.append(
            f"- **SIGTERM under load** (the supervisor, {t['workers']} clients back to back, "
            f"grace {t['grace_s']:g} s): in flight at the signal {t['in_flight_at_sigterm']}, all done "
            f"within {t['in_flight_finished_within_s']} s; sent after it {t['sent_after']} "
            f"({t['sent_after_503_with_retry_after']} of the 503s with Retry-After; refused connections "
            "from "
            f"{t['first_refused_connection_after_s']} s, once the gateway had exited); /readyz not ready "
            "after "
            f"{t['readyz_not_ready_after_s']} s; exit code {t['supervisor_exit_code']} after "
            f"{t['exited_after_s']} s. {_mark(t['ok'])}"
        )
    if "engine_killed" in figures:
        k = figures["engine_killed"]
        lines.append(
            f"- **Engine killed** (SIGKILL, {k['workers']} clients back to back): in flight "
            f"{k['in_flight_at_kill']} (the slowest answered {k['in_flight_slowest_s']} s after the kill); "
            f"sent after {k['sent_after']}; first error answer {k['first_error_after_s']} s after the kill; "
            f"/readyz not ready after {k['readyz_not_ready_after_s']} s; the supervisor exited with "
            f"{k['supervisor_exit_code']} after {k['supervisor_exited_after_s']} s. {_mark(k['ok'])}"
        )
    sec = figures["security"]
    lines += [
        "",
        "## Secrets",
        "",
        f"The run used these credentials: {', '.join(sec['secrets'])}. Searched for verbatim in "
        f"{', '.join(sec['logs'])} and every response the fuzzer recorded: "
        + (f"**found: {'; '.join(sec['leaks'])}**" if sec["leaks"] else "none found. pass"),
    ]
    if "cost" in figures:
        lines += ["", "## The gateway's own cost (`make bench-cost`)", ""]
        lines += header("policy", "path", "p50 ms", "added p50 ms", "CPU ms", align="llr")
        for c in figures["cost"]["costs"]:
            cells = (c["p50_ms"], c["added_p50_ms"], c["cpu_ms"])
            lines.append(row(c["policy"], c["path"], *(f"{v:.2f}" for v in cells)))
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path
