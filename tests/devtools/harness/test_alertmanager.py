"""The Alertmanager harness (devtools/harness/alertmanager.py): a real Alertmanager 0.25 posts its
webhook to a recording receiver on loopback. What these tests pin down is what the alert router
will receive: the payload (webhook version 4), the credentials, the grouping and truncation,
resolutions, and the redelivery of a group the receiver refused. Needs only the Debian package
(installed if missing)."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.core.polling import wait_until
from devtools.harness.alertmanager import Alertmanager, alertmanager, config
from devtools.harness.loopback import Seen
from tests.helpers.alerts import Receiver, text_reply

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("alertmanager_installed")]

HOOK = "/v1/alerts/alertmanager"
DISK = {"instance": "db-1", "severity": "critical"}
DEADLINE_S = 8  # group_wait is 1 s; Alertmanager posts within about a second of it


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A webhook receiver: scripted replies, then 200."""
    with Receiver(then=text_reply(200), path=HOOK).served() as scripted:
        yield scripted


def payload(seen: Seen) -> dict[str, Any]:
    assert (seen.method, seen.path) == ("POST", HOOK)
    assert seen.headers["content-type"] == "application/json"
    assert seen.headers["user-agent"].startswith("Alertmanager/")
    body: dict[str, Any] = json.loads(seen.body)
    return body


def test_fired_alert_arrives_as_webhook_v4_with_bearer_token(tmp_path: Path, receiver: Receiver) -> None:
    with alertmanager(tmp_path, receiver.url, auth=("bearer", "s3cret")) as am:
        fired = time.monotonic()
        am.fire("DiskFull", DISK, {"summary": "Disk 97% on db-1"})
        [seen] = receiver.requests(1, DEADLINE_S)
        latency = receiver.times[0] - fired
    assert seen.headers["authorization"] == "Bearer s3cret"
    body = payload(seen)
    labels = {**DISK, "alertname": "DiskFull"}
    assert body["version"] == "4" and body["receiver"] == "router" and body["status"] == "firing"
    assert body["groupLabels"] == {"alertname": "DiskFull"} and body["commonLabels"] == labels
    assert body["externalURL"] == am.url and body["truncatedAlerts"] == 0
    [alert] = body["alerts"]
    assert alert["status"] == "firing" and alert["labels"] == labels
    assert alert["annotations"] == {"summary": "Disk 97% on db-1"}
    assert len(alert["fingerprint"]) == 16 and alert["endsAt"] == "0001-01-01T00:00:00Z"
    assert 0.9 <= latency < 5, f"first POST {latency:.2f} s after firing (group_wait 1 s)"
    print(f"delivery latency {latency:.2f} s")


@pytest.mark.parametrize("max_alerts", [0, 1])
def test_alerts_of_one_group_arrive_in_one_post_truncated_to_max_alerts(
    tmp_path: Path, receiver: Receiver, max_alerts: int
) -> None:
    with alertmanager(tmp_path, receiver.url, group_by=["cluster"], max_alerts=max_alerts) as am:
        am.fire("DiskFull", {"cluster": "eu", "instance": "db-1"})
        am.fire("HighLatency", {"cluster": "eu", "instance": "api-1"})
        [seen] = receiver.requests(1, DEADLINE_S)
        time.sleep(0.5)  # nothing else comes for this group
        assert len(receiver.server.requests) == 1
    body = payload(seen)
    names = {a["labels"]["alertname"] for a in body["alerts"]}
    assert body["groupLabels"] == {"cluster": "eu"} and body["groupKey"] == '{}:{cluster="eu"}'
    if max_alerts == 0:
        assert names == {"DiskFull", "HighLatency"} and body["truncatedAlerts"] == 0
        assert body["commonLabels"] == {"cluster": "eu"}
    else:
        # Alertmanager truncates before it computes the common labels: they are the kept alert's.
        assert len(names) == 1 and body["truncatedAlerts"] == 1
        assert body["commonLabels"] == body["alerts"][0]["labels"]


def test_resolving_sends_the_resolved_group(tmp_path: Path, receiver: Receiver) -> None:
    with alertmanager(tmp_path, receiver.url) as am:
        am.fire("DiskFull", DISK, {"summary": "Disk 97% on db-1"})
        [firing] = receiver.requests(1, DEADLINE_S)
        am.resolve("DiskFull", DISK)
        _, resolved = receiver.requests(2, DEADLINE_S)
    before, after = payload(firing), payload(resolved)
    assert before["status"] == "firing" and after["status"] == "resolved"
    [was], [now] = before["alerts"], after["alerts"]
    assert now["status"] == "resolved" and now["fingerprint"] == was["fingerprint"]
    assert now["startsAt"] == was["startsAt"] and now["endsAt"] != "0001-01-01T00:00:00Z"
    assert now["annotations"] == {"summary": "Disk 97% on db-1"}


def test_refused_posts_are_retried_until_the_receiver_accepts(tmp_path: Path, receiver: Receiver) -> None:
    receiver.replies += [text_reply(500), text_reply(500)]
    with alertmanager(tmp_path, receiver.url, auth=("bearer", "s3cret")) as am:
        am.fire("DiskFull", DISK)
        posts = receiver.requests(3, DEADLINE_S)
        assert am.wait_log('msg="Notify success" attempts=3', DEADLINE_S), am.log()
        time.sleep(0.5)  # and no fourth: the group was delivered
        assert len(receiver.server.requests) == 3
        log = am.log()
    assert 'msg="Notify attempt failed, will retry later" attempts=1' in log
    assert "unexpected status code 500" in log
    first, *retries = (json.loads(p.body) for p in posts)
    assert all(r == first for r in retries), "every attempt posts the same group"
    assert all(p.headers["authorization"] == "Bearer s3cret" for p in posts)
    gaps = [round(b - a, 2) for a, b in zip(receiver.times, receiver.times[1:], strict=False)]
    # Exponential backoff from 0.5 s (x1.5, +-50% jitter): about 0.25-0.75 s, then 0.4-1.1 s.
    assert all(0.2 < gap < 2.5 for gap in gaps), gaps
    print(f"retry gaps {gaps} s")


def test_basic_auth_arrives_as_basic_credentials(tmp_path: Path, receiver: Receiver) -> None:
    with alertmanager(tmp_path, receiver.url, auth=("basic", "am", "p@ss:word")) as am:
        am.fire("DiskFull", DISK)
        [seen] = receiver.requests(1, DEADLINE_S)
    assert seen.headers["authorization"] == "Basic " + base64.b64encode(b"am:p@ss:word").decode()
    assert payload(seen)["status"] == "firing"


def test_a_config_alertmanager_refuses_raises_with_its_log(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="did not start") as raised, alertmanager(tmp_path, "not a url"):
        pass
    assert "Loading configuration file failed" in str(raised.value)
    assert 'unsupported scheme \\"\\" for URL' in str(raised.value)
    with pytest.raises(ValueError, match="auth is"):
        config(HOOK, auth=("token", "s3cret"))


def test_harness_api(tmp_path: Path, receiver: Receiver) -> None:
    """alerts() and metric() read Alertmanager's own view: what the router's tests can assert on."""
    with alertmanager(tmp_path, receiver.url) as am:
        assert isinstance(am, Alertmanager) and am.alerts() == []
        am.fire("DiskFull", DISK)
        [held] = am.alerts()
        assert held["labels"] == {**DISK, "alertname": "DiskFull"} and held["status"]["state"] == "active"
        receiver.requests(1, DEADLINE_S)
        sent = wait_until(lambda: am.metric("alertmanager_notifications_total", integration="webhook"), 5)
        assert sent == 1
        assert am.metric("alertmanager_notifications_failed_total", integration="webhook") == 0
