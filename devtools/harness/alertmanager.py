"""A real Prometheus Alertmanager (Debian's `prometheus-alertmanager`, 0.25) on a free loopback port,
posting to one webhook receiver, for the alert router's tests.

`alertmanager(root, receiver_url, auth=...)` writes its config, starts it without clustering, waits
until it is ready and stops it when the block ends. Alerts go in through its API v2, as Prometheus
(or `amtool alert add`) sends them; what comes out is Alertmanager's own webhook (version 4 JSON),
with its real grouping, throttling and retries. Install the binary with scripts/install_alertmanager.sh.

The config is written as JSON, which Alertmanager's YAML loader reads as is (checked on 0.25): no
YAML library is needed and every value is escaped correctly.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from app.core.polling import wait_until
from devtools.harness.local_stack import ROOT
from devtools.harness.loopback import start_until_ready

BINARY = "prometheus-alertmanager"
INSTALL_SCRIPT = ROOT / "scripts" / "install_alertmanager.sh"
RECEIVER = "router"  # the only receiver: every alert is routed to it

# ("bearer", token) or ("basic", user, password)
Auth = tuple[str, str] | tuple[str, str, str]


def _timestamp(when: datetime) -> str:
    """RFC 3339 in UTC, as the API v2 expects."""
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _key(labels: Mapping[str, str]) -> frozenset[tuple[str, str]]:
    """An alert's identity: its label set (Alertmanager fingerprints exactly that)."""
    return frozenset(labels.items())


def _http_config(auth: Auth | None) -> dict[str, Any]:
    if auth is None:
        return {}
    if auth[0] == "bearer" and len(auth) == 2:
        return {"authorization": {"type": "Bearer", "credentials": auth[1]}}
    if auth[0] == "basic" and len(auth) == 3:
        return {"basic_auth": {"username": auth[1], "password": auth[2]}}
    raise ValueError(f'auth is ("bearer", token), ("basic", user, password) or None, not {auth[0]!r}')


def config(
    receiver_url: str | Sequence[str],
    *,
    auth: Auth | None = None,
    group_by: Sequence[str] = ("alertname",),
    group_wait: str = "1s",
    group_interval: str = "2s",
    repeat_interval: str = "1h",
    max_alerts: int = 0,
    send_resolved: bool = True,
) -> dict[str, Any]:
    """Alertmanager's configuration: one route, one receiver with a webhook per URL (each is
    notified, and retried, on its own)."""
    webhooks = []
    for url in [receiver_url] if isinstance(receiver_url, str) else receiver_url:
        webhook: dict[str, Any] = {"url": url, "send_resolved": send_resolved, "max_alerts": max_alerts}
        if http_config := _http_config(auth):
            webhook["http_config"] = http_config
        webhooks.append(webhook)
    return {
        "route": {
            "receiver": RECEIVER,
            "group_by": list(group_by),
            "group_wait": group_wait,
            "group_interval": group_interval,
            "repeat_interval": repeat_interval,
        },
        "receivers": [{"name": RECEIVER, "webhook_configs": webhooks}],
    }


@dataclass
class Alertmanager:
    """A running Alertmanager: `url` is its API; alerts fired here go to the configured receiver."""

    url: str
    proc: subprocess.Popen[bytes]
    log_path: Path
    config_path: Path
    _fired: dict[frozenset[tuple[str, str]], dict[str, Any]] = field(default_factory=dict)

    def _post_alerts(self, alerts: list[dict[str, Any]]) -> None:
        # trust_env=False: loopback, whatever proxy the environment names.
        response = httpx.post(f"{self.url}/api/v2/alerts", json=alerts, timeout=10, trust_env=False)
        if response.status_code != 200:
            raise RuntimeError(f"Alertmanager refused the alerts ({response.status_code}): {response.text}")

    def fire(
        self,
        name: str,
        labels: Mapping[str, str],
        annotations: Mapping[str, str] | None = None,
        starts_at: datetime | None = None,
    ) -> None:
        """Post a firing alert `name` (its `alertname` label) as Prometheus does. Alertmanager keeps
        it firing for its resolve_timeout (5 min) unless it is resolved or fired again."""
        alert: dict[str, Any] = {
            "labels": {**labels, "alertname": name},
            "annotations": dict(annotations or {}),
            "startsAt": _timestamp(starts_at or datetime.now(UTC)),
        }
        self._post_alerts([alert])
        self._fired[_key(alert["labels"])] = alert

    def resolve(self, name: str, labels: Mapping[str, str]) -> None:
        """Resolve the alert with these labels as Prometheus does: resend it as last fired here (same
        start and annotations: the resolved notification carries the annotations sent last) with
        `endsAt` now."""
        full = {**labels, "alertname": name}
        now = _timestamp(datetime.now(UTC))
        # Never fired here: a start no later than the end, else the API refuses the alert.
        alert = self._fired.get(_key(full), {"labels": full, "annotations": {}, "startsAt": now})
        self._post_alerts([{**alert, "endsAt": now}])

    def alerts(self) -> list[dict[str, Any]]:
        """The alerts Alertmanager holds (GET /api/v2/alerts): active, silenced and inhibited."""
        response = httpx.get(f"{self.url}/api/v2/alerts", timeout=10, trust_env=False)
        response.raise_for_status()
        found: list[dict[str, Any]] = response.json()
        return found

    def metric(self, name: str, **labels: str) -> float:
        """The sum of a counter or gauge over the series of /metrics matching `labels` (0 if none),
        e.g. metric("alertmanager_notifications_failed_total", integration="webhook")."""
        text = httpx.get(f"{self.url}/metrics", timeout=10, trust_env=False).text
        total = 0.0
        for match in re.finditer(rf"^{re.escape(name)}(?:\{{(.*?)\}})? (\S+)$", text, re.MULTILINE):
            series = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(1) or ""))
            if all(series.get(k) == v for k, v in labels.items()):
                total += float(match.group(2))
        return total

    def reload(self, settings: Mapping[str, Any]) -> None:
        """Replace the configuration with `settings` (a whole config, as `config` returns) and reload
        it (POST /-/reload answers once the new routes are in place; alerts held are kept)."""
        self.config_path.write_text(json.dumps(settings, indent=2))
        response = httpx.post(f"{self.url}/-/reload", timeout=10, trust_env=False)
        if response.status_code != 200:
            raise RuntimeError(f"Alertmanager refused the config ({response.status_code}): {response.text}")

    def log(self) -> str:
        """Everything Alertmanager logged so far (logfmt, one event a line)."""
        return self.log_path.read_text(errors="replace")

    def wait_log(self, text: str, timeout_s: float) -> bool:
        """Whether a line containing `text` was logged within `timeout_s`."""
        return bool(wait_until(lambda: text in self.log(), timeout_s, interval_s=0.1))


def ensure_installed(binary: str = BINARY, package: str = "prometheus-alertmanager") -> str:
    """The binary's path, installing its Debian package first if it is missing (needs root and apt);
    devtools.harness.prometheus installs Prometheus the same way."""
    if found := shutil.which(binary):
        return found
    env = {**os.environ, "PKG": package, "BIN": binary}
    run = subprocess.run(["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, env=env)
    if run.returncode != 0 or not (found := shutil.which(binary)):
        raise RuntimeError(f"could not install {binary}:\n{(run.stdout + run.stderr)[-4000:]}")
    return found


def _start(
    binary: str, config_path: Path, storage: Path, log_path: Path, log_level: str, port: int
) -> subprocess.Popen[bytes]:
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            [binary, f"--config.file={config_path}", f"--storage.path={storage}",
             f"--web.listen-address=127.0.0.1:{port}", f"--web.external-url=http://127.0.0.1:{port}",
             "--cluster.listen-address=", f"--log.level={log_level}"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    return proc


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def alertmanager(
    root: Path,
    receiver_url: str | Sequence[str] | None = None,
    *,
    settings: Mapping[str, Any] | None = None,
    timeout_s: float = 20,
    log_level: str = "debug",
    **options: Any,
) -> Iterator[Alertmanager]:
    """Run Alertmanager (config, data and log under `root`) posting every alert to `receiver_url`
    (`options`: the rest of `config`'s arguments), or configured by `settings`, a whole config (a
    routing tree of several receivers), until the block ends; RuntimeError with its log
    tail if it does not become ready. At debug level
    the log shows each flush of a group, the first failed attempt of a notification (a repeated
    identical error is not logged again) and its success with the number of attempts."""
    binary = ensure_installed()
    root.mkdir(parents=True, exist_ok=True)
    config_path, storage, log_path = root / "alertmanager.json", root / "data", root / "alertmanager.log"
    if settings is None:
        if receiver_url is None:
            raise ValueError("alertmanager() needs receiver_url or settings")
        settings = config(receiver_url, **options)
    elif receiver_url is not None or options:
        raise ValueError("settings is a whole config: give it without receiver_url or config's options")
    config_path.write_text(json.dumps(settings, indent=2))
    storage.mkdir(exist_ok=True)
    proc, url = start_until_ready(
        lambda port: _start(binary, config_path, storage, log_path, log_level, port),
        _stop,
        log_path,
        ready_path="/-/ready",
        timeout_s=timeout_s,
        name="Alertmanager",
    )
    try:
        yield Alertmanager(url=url, proc=proc, log_path=log_path, config_path=config_path)
    finally:
        _stop(proc)
