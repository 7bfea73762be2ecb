"""What a deploy says about who its alert policies notify: with no channel, that no one will be told;
with the dead-man's switch turned off, that it is off (a change of who is paged, which needs its
flag). The lines on their own, then through the real CLI against the recording stand-ins of gcloud and
terraform (devtools/harness/fakecloud.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from deploy.cloud.config import DeployConfig
from deploy.cloud.service import who_is_notified
from deploy.cloud.variables import paging_changes
from tests.helpers.deploy import PROJECT, REGION, Cloud

CHANNEL = f"projects/{PROJECT}/notificationChannels/123"


@pytest.mark.unit
def test_each_policy_without_a_channel_and_a_switch_off_is_said() -> None:
    cfg = DeployConfig(project=PROJECT, region=REGION)
    (line,) = who_is_notified(cfg)
    assert line.startswith("no one will be notified") and f"--notify projects/{PROJECT}/" in line
    told = DeployConfig(project=PROJECT, region=REGION, notification_channels=(CHANNEL,))
    (line,) = who_is_notified(told)
    assert line.startswith("the dead-man's switch and the router's uptime alert notify no one")
    both = DeployConfig(
        project=PROJECT, region=REGION, notification_channels=(CHANNEL,), deadman_channels=(CHANNEL,)
    )
    assert who_is_notified(both) == []
    (off,) = who_is_notified(replace(both, deadman_switch=False))
    assert off.startswith("the dead-man's switch is off")


@pytest.mark.unit
def test_turning_the_switch_off_changes_who_is_paged() -> None:
    applied = {"alerts_sink_secrets": [], "alerts_policy": "", "notification_channels": []}
    applied |= {"deadman_notification_channels": []}
    off = {**applied, "deadman_switch": False}
    assert paging_changes(applied, off) == [  # a history from before the variable: it was on
        "the dead-man's switch turned off (no page when the Watchdog stops reaching it)"
    ]
    assert paging_changes({**applied, "deadman_switch": False}, {**applied, "deadman_switch": True}) == []
    assert paging_changes({}, off) == [], "a first deploy changes no one's pages"


@pytest.mark.integration
def test_a_deploy_says_no_one_is_notified_and_when_the_switch_is_off(cloud: Cloud) -> None:
    dry = cloud.deploy("--dry-run")
    assert dry.returncode == 0, dry.stdout[-2000:] + dry.stderr[-2000:]
    assert "no one will be notified" in " ".join(dry.stdout.split())
    first = cloud.deploy()
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    said = " ".join(first.stdout.split())
    assert "no one will be notified: the kit's alert policies have no notification channel" in said
    assert f"--notify projects/{PROJECT}/notificationChannels/ID" in said
    assert "the dead-man's switch is off" not in said

    flags = ("--notify", CHANNEL, "--deadman-notify", CHANNEL, "--no-deadman-switch")
    refused = cloud.deploy(*flags)
    assert refused.returncode == 2, refused.stdout[-2000:] + refused.stderr[-2000:]
    assert "the dead-man's switch turned off" in " ".join(refused.stderr.split())
    off = cloud.deploy(*flags, "--allow-paging-change")
    assert off.returncode == 0, off.stdout[-2000:] + off.stderr[-2000:]
    said = " ".join(off.stdout.split())
    assert "no one will be notified" not in said and "notify no one" not in said
    assert "the dead-man's switch is off (--no-deadman-switch)" in said
    assert cloud.state["applied"][-1]["deadman_switch"] is False
