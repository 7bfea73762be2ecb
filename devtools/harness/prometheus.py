"""A real Prometheus (Debian's `prometheus`, 2.42) on a free loopback port, scraping the kit's
processes and evaluating the kit's rules, for end-to-end tests of monitoring/prometheus/.

`prometheus(root, targets, rule_files=..., alertmanager_url=...)` writes its config, starts it with
its storage under `root`, waits until it is ready and stops it when the block ends. What it computed
is read back through its HTTP API: `query`, `value`, `alerts`, `targets`, `rules`. Install the binary
with `make prometheus`.

The shipped rules wait minutes (`for: 5m`, a heartbeat 10 min old); `fast_rules` makes the copy a
test can wait for, with every duration scaled and every expression otherwise as shipped.

The config is written as JSON, which Prometheus's YAML loader reads as is.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from devtools.harness.alertmanager import ensure_installed as install_debian_binary
from devtools.harness.local_stack import ROOT, stop
from devtools.harness.loopback import start_until_ready

BINARY = "prometheus"
RULES = ROOT / "monitoring" / "prometheus" / "dgemma.rules.yml"

# Seconds written into a shipped expression as its threshold, by alert: `fast_rules` scales these
# with the durations (they are ages, not ratios). Any other number of an expression is left alone.
AGE_THRESHOLDS_S: dict[str, int] = {
    "DgemmaAlertsHeartbeatMissing": 600,  # the newest heartbeat's age
    "DgemmaAlertsClassificationsWaiting": 900,  # the oldest pending classification's age
}

_DURATION_PART = re.compile(r"(\d+)(ms|s|m|h|d|w|y)")
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}


def seconds(duration: str) -> float:
    """A Prometheus duration (`5m`, `1h30m`, `250ms`) in seconds."""
    parts = _DURATION_PART.findall(duration)
    if not parts or "".join(n + unit for n, unit in parts) != duration:
        raise ValueError(f"not a Prometheus duration: {duration!r}")
    return sum(int(n) * _UNIT_S[unit] for n, unit in parts)


def duration(value_s: float) -> str:
    """Seconds as a Prometheus duration: whole seconds where they are, else milliseconds (at least 1)."""
    ms = max(1, round(value_s * 1000))
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def fast_rules(text: str, scale: float) -> str:
    """The rules file `text` with its time `scale` times as long (1/30: 5 min become 10 s): each
    rule's `for`, each group's `interval` and each threshold of AGE_THRESHOLDS_S, nothing else.
    Every expression stays the shipped one, its range windows (`[5m]`, `[1h]`) and its other
    constants (the burn rates) included: a fresh Prometheus holds less data than any window, and
    rate() reads what there is. ValueError when a threshold is not written in its alert's expression
    exactly once as `> SECONDS`, or names no alert: the rules changed, so change the table."""
    doc = yaml.safe_load(text)
    left = dict(AGE_THRESHOLDS_S)
    for group in doc["groups"]:
        if "interval" in group:
            group["interval"] = duration(seconds(group["interval"]) * scale)
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = duration(seconds(rule["for"]) * scale)
            threshold = left.pop(rule.get("alert", ""), None)
            if threshold is None:
                continue
            expr, found = re.subn(rf"> {threshold}(?![\d.])", f"> {_number(threshold * scale)}", rule["expr"])
            if found != 1:
                raise ValueError(
                    f"{rule['alert']}: `> {threshold}` is written {found} times in {rule['expr']!r}"
                )
            rule["expr"] = expr
    if left:
        raise ValueError(f"AGE_THRESHOLDS_S names alerts the rules do not have: {sorted(left)}")
    dumped: str = yaml.safe_dump(doc, sort_keys=False, width=1000)
    return dumped


@dataclass(frozen=True)
class Target:
    """A process to scrape: its job name, its base URL (metrics at `/metrics` under it) and the
    bearer token its /metrics asks for, if any (the router's: a sender's credential)."""

    job: str
    url: str
    bearer: str | None = None


def _host_port(url: str) -> tuple[httpx.URL, str]:
    parsed = httpx.URL(url)
    if parsed.port is None:
        raise ValueError(f"{url}: give the port (loopback services have no default one)")
    return parsed, f"{parsed.host}:{parsed.port}"


def config(
    targets: Sequence[Target],
    *,
    rule_files: Sequence[Path] = (),
    alertmanager_url: str | None = None,
    interval_s: float = 1.0,
) -> dict[str, Any]:
    """Prometheus's configuration: a scrape job per target, scraped and the rules evaluated every
    `interval_s` (a scrape times out at the next one), alerts sent to `alertmanager_url` (API v2)."""
    every = duration(interval_s)
    jobs = []
    for target in targets:
        url, address = _host_port(target.url)
        job: dict[str, Any] = {
            "job_name": target.job,
            "scheme": url.scheme,
            "metrics_path": url.path.rstrip("/") + "/metrics",
            "static_configs": [{"targets": [address]}],
        }
        if target.bearer is not None:
            job["authorization"] = {"type": "Bearer", "credentials": target.bearer}
        jobs.append(job)
    settings: dict[str, Any] = {
        "global": {"scrape_interval": every, "scrape_timeout": every, "evaluation_interval": every},
        "rule_files": [str(path) for path in rule_files],
        "scrape_configs": jobs,
    }
    if alertmanager_url is not None:
        url, address = _host_port(alertmanager_url)
        settings["alerting"] = {
            "alertmanagers": [
                {
                    "api_version": "v2",
                    "scheme": url.scheme,
                    "path_prefix": url.path or "/",
                    "static_configs": [{"targets": [address]}],
                }
            ]
        }
    return settings


@dataclass
class Prometheus:
    """A running Prometheus: `url` is its API."""

    url: str
    proc: subprocess.Popen[bytes]
    log_path: Path
    config_path: Path

    def _data(self, path: str, **params: str) -> Any:
        # trust_env=False: loopback, whatever proxy the environment names.
        response = httpx.get(f"{self.url}{path}", params=params, timeout=10, trust_env=False)
        body = response.json()
        if response.status_code != 200 or body.get("status") != "success":
            raise RuntimeError(f"Prometheus answered {path} with {response.status_code}: {response.text}")
        return body["data"]

    def query(self, promql: str) -> list[dict[str, Any]]:
        """An instant query's result now: its series, each `{"metric": labels, "value": [time, text]}`
        (a scalar as one series without labels)."""
        data = self._data("/api/v1/query", query=promql)
        if data["resultType"] in ("scalar", "string"):
            return [{"metric": {}, "value": data["result"]}]
        result: list[dict[str, Any]] = data["result"]
        return result

    def value(self, promql: str) -> float | None:
        """The value of a query that gives one series or none (None); ValueError for several."""
        result = self.query(promql)
        if len(result) > 1:
            raise ValueError(f"{promql} gives {len(result)} series, not one")
        return float(result[0]["value"][1]) if result else None

    def finite(self, promql: str) -> float | None:
        """`value`, or None while there is none or it is NaN or infinite (a ratio of no rates yet)."""
        found = self.value(promql)
        return found if found is not None and math.isfinite(found) else None

    def alerts(self, name: str | None = None, state: str | None = None) -> list[dict[str, Any]]:
        """The alerts its rules hold now (pending and firing), of alert `name` and in `state` if given."""
        alerts: list[dict[str, Any]] = self._data("/api/v1/alerts")["alerts"]
        return [
            a
            for a in alerts
            if (name is None or a["labels"]["alertname"] == name) and (state is None or a["state"] == state)
        ]

    def targets(self) -> list[dict[str, Any]]:
        """The active scrape targets, with their `health` ("up", "down", "unknown") and `lastError`."""
        active: list[dict[str, Any]] = self._data("/api/v1/targets")["activeTargets"]
        return active

    def rules(self) -> list[dict[str, Any]]:
        """Every rule of every group as last evaluated (`health`: "ok", "err" or "unknown" before its
        first evaluation; `lastError`), each with its group's name under `group`."""
        groups = self._data("/api/v1/rules")["groups"]
        return [{**rule, "group": group["name"]} for group in groups for rule in group["rules"]]

    def log(self) -> str:
        """Everything Prometheus logged so far (logfmt, one event a line)."""
        return self.log_path.read_text(errors="replace")


def ensure_installed() -> str:
    """Prometheus's path, installing Debian's package first if it is missing (needs root and apt)."""
    return install_debian_binary(BINARY, "prometheus")


def _start(
    binary: str, config_path: Path, storage: Path, log_path: Path, resend_delay_s: float, port: int
) -> subprocess.Popen[bytes]:
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            [binary, f"--config.file={config_path}", f"--storage.tsdb.path={storage}",
             f"--web.listen-address=127.0.0.1:{port}",
             f"--rules.alert.resend-delay={duration(resend_delay_s)}"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # devtools.harness.local_stack.stop kills its group if it hangs
        )  # fmt: skip
    return proc


@contextmanager
def prometheus(
    root: Path,
    targets: Sequence[Target],
    *,
    rule_files: Sequence[Path] = (),
    alertmanager_url: str | None = None,
    interval_s: float = 1.0,
    resend_delay_s: float = 60.0,
    timeout_s: float = 30,
) -> Iterator[Prometheus]:
    """Run Prometheus (config, storage and log under `root`) scraping `targets` and evaluating
    `rule_files` every `interval_s`, until the block ends; RuntimeError with its log tail if it does
    not become ready. `resend_delay_s`: how often a firing alert is sent again to Alertmanager
    (Prometheus's default is 1 min; each send says the alert ends 4 of them later unless sent again)."""
    binary = ensure_installed()
    root.mkdir(parents=True, exist_ok=True)
    config_path, storage, log_path = root / "prometheus.json", root / "data", root / "prometheus.log"
    settings: Mapping[str, Any] = config(
        targets, rule_files=rule_files, alertmanager_url=alertmanager_url, interval_s=interval_s
    )
    config_path.write_text(json.dumps(settings, indent=2))
    proc, url = start_until_ready(
        lambda port: _start(binary, config_path, storage, log_path, resend_delay_s, port),
        lambda proc: stop(proc, grace_s=10),
        log_path,
        ready_path="/-/ready",
        timeout_s=timeout_s,
        name="Prometheus",
    )
    try:
        yield Prometheus(url=url, proc=proc, log_path=log_path, config_path=config_path)
    finally:
        stop(proc, grace_s=10)
