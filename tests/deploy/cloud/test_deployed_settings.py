"""What is deployed is where a deploy starts (deploy/cloud/variables.py): a redeploy changes only what
it names, a change of who gets paged needs its flag, a change outside the GPU revision makes none,
and a second rollback undoes the first. Through the real CLI against the recording stand-ins of
gcloud and terraform (devtools/harness/fakecloud.py), the GCS emulator and a real gateway as the service."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest
from google.cloud import storage

from deploy.cloud.variables import SETTINGS, changes, paging_changes
from deploy.runtime.weights import build_manifest, client_from_env
from tests.helpers.deploy import PROJECT, WEIGHTS_BUCKET, Cloud
from tests.helpers.terraform import TERRAFORM

pytestmark = pytest.mark.integration

POLICY = TERRAFORM / "examples/gpu/alerts-policy.toml"  # pages through pagerduty's and slack's files
SINKS = ("dgemma-alerts-sink-pagerduty", "dgemma-alerts-sink-slack")


def _with_sinks(cloud: Cloud) -> None:
    """The sinks' values, as the operator adds them with gcloud before the deploy that mounts them."""
    cloud.set(secrets={**cloud.state.get("secrets", {}), SINKS[0]: ["pd-key"], SINKS[1]: ["https://hooks/x"]})


def _paged_deploy(cloud: Cloud) -> None:
    _with_sinks(cloud)
    first = cloud.deploy(
        "--alerts-policy", str(POLICY), "--alerts-sink", "pagerduty", "--alerts-sink", "slack"
    )
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]


def _advice(stdout: str) -> list[str]:
    """The switch-to-act command the deploy prints, as arguments after `dgemma deploy`."""
    found = re.search(r"dgemma deploy (--project \S+ [^\n]*--alerts-mode act[^\n]*)", stdout)
    assert found, stdout[-2000:]
    return shlex.split(found.group(1))


def test_the_printed_act_command_changes_the_mode_alone(cloud: Cloud) -> None:
    """The README's deploy with a policy and two sinks, then the command it prints to switch to act:
    its plan shows one variable changing, and run, it keeps the policy, the sinks and the GPU revision
    (a router-only change: applied at once, no new revision, no cold start)."""
    _with_sinks(cloud)
    first = cloud.deploy(
        "--alerts-policy", str(POLICY), "--alerts-sink", "pagerduty", "--alerts-sink", "slack"
    )
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    act = _advice(first.stdout)
    assert "--allow-paging-change" in act
    before = json.loads((cloud.work / "terraform.tfvars.json").read_text())
    revision = cloud.traffic()[0][0]

    plan = cloud.deploy(*act, "--plan")
    assert plan.returncode == 0, plan.stdout[-2000:] + plan.stderr[-2000:]
    out = " ".join(plan.stdout.split())
    assert "settings that change: alerts_mode: shadow -> act" in out
    shown = plan.stdout[plan.stdout.index("Plan (fakecloud)") :]
    assert json.loads(shown[shown.index("{") : shown.index("}") + 1]) == {"alerts_mode": "act"}

    applies, calls = cloud.state["applies"], len(cloud.state["calls"])
    done = cloud.deploy(*act)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    after = json.loads((cloud.work / "terraform.tfvars.json").read_text())
    assert after == {**before, "alerts_mode": "act"}, "nothing but the mode changed"
    assert after["alerts_policy"] == POLICY.read_text() and after["alerts_sink_secrets"] == [
        "pagerduty",
        "slack",
    ]
    assert cloud.state["applies"] == applies + 1 and "targets" not in cloud.state["applied"][-1]
    assert cloud.traffic() == [[revision, 100, ""]], "the same GPU revision serves"
    assert cloud.state["router"]["mode"] == "act" and "gcloud builds submit" not in cloud.calls(calls)


@pytest.mark.parametrize(
    ("flags", "reason"),
    [
        (["--reset", "alerts-sink"], "the sink(s) pagerduty, slack removed"),
        (["--alerts-mode", "act"], "the router switched from shadow to act"),
        (["--from-defaults"], "the routing policy emptied"),
    ],
    ids=["a sink dropped", "act without saying so", "from the defaults"],
)
def test_a_change_of_who_gets_paged_needs_its_flag_and_stops_before_the_cloud(
    cloud: Cloud, flags: list[str], reason: str
) -> None:
    _paged_deploy(cloud)
    calls = len(cloud.state["calls"])
    refused = cloud.deploy(*flags)
    assert refused.returncode == 2, refused.stdout[-2000:] + refused.stderr[-2000:]
    err = " ".join(refused.stderr.split())
    assert "changes who gets paged" in err and reason in err and "--allow-paging-change" in err
    made = [
        c for c in cloud.calls(calls) if c.startswith(("terraform apply", "gcloud storage buckets create"))
    ]
    assert made == [] and "Traceback" not in refused.stderr, "refused before any cloud change"


def test_a_redeploy_keeps_what_it_is_not_told_and_reset_puts_a_setting_back(cloud: Cloud) -> None:
    notify = f"projects/{PROJECT}/notificationChannels/123"
    first = cloud.deploy("--max-instances", "2", "--label", "team=sre", "--notify", notify, "--invoker",
                         "group:oncall@example.com")  # fmt: skip
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    kept = cloud.deploy()
    assert kept.returncode == 0, kept.stderr[-2000:]
    assert "nothing to do" in kept.stdout and "settings that change: none" in " ".join(kept.stdout.split())
    variables = json.loads((cloud.work / "terraform.tfvars.json").read_text())
    assert variables["max_instance_count"] == 2 and variables["labels"] == {"team": "sre"}
    assert (
        variables["notification_channels"] == [notify] and "group:oncall@example.com" in variables["invokers"]
    )

    reset = cloud.deploy("--reset", "max-instances")
    assert reset.returncode == 0, reset.stderr[-2000:]
    variables = json.loads((cloud.work / "terraform.tfvars.json").read_text())
    assert variables["max_instance_count"] == 1 and variables["labels"] == {"team": "sre"}
    assert "max_instance_count: 2 -> 1" in " ".join(reset.stdout.split())
    dropped = cloud.deploy("--reset", "notify")  # the last channel: who is told of an incident
    assert dropped.returncode == 2 and "last notification channel dropped" in " ".join(dropped.stderr.split())


def test_two_rollbacks_put_every_service_back_where_it_was(cloud: Cloud) -> None:
    """Deploy A in act, deploy B, rollback, rollback: B serves again and the router acts, with the same
    variables as before the first rollback."""
    first = cloud.deploy("--alerts-mode", "act")  # a first deploy: no one's pages change
    assert first.returncode == 0, first.stderr[-2000:]
    second = cloud.deploy(DGEMMA_ENGINE_CANVAS="40")
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-2000:]
    b, router = cloud.traffic()[0][0], cloud.state["router"]
    before = json.loads((cloud.work / "terraform.tfvars.json").read_text())
    assert before["alerts_mode"] == "act" and before["engine_canvas"] == 40
    back = cloud.dgemma("rollback")
    assert back.returncode == 0, back.stdout[-2000:] + back.stderr[-2000:]
    assert cloud.traffic()[0][0] != b
    again = cloud.dgemma("rollback")
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert "rolled back the rollback" in " ".join(again.stdout.split())
    assert cloud.traffic() == [[b, 100, ""]] and cloud.state["router"] == router
    assert json.loads((cloud.work / "terraform.tfvars.json").read_text()) == before


def test_two_rollbacks_keep_a_router_the_operator_shadowed(cloud: Cloud) -> None:
    """The mirror case: A, then B, then the router shadowed by a deploy of its own (no revision). A
    rollback takes that last deploy back (the router acts again); the second puts it back in shadow."""
    assert cloud.deploy("--alerts-mode", "act").returncode == 0
    assert cloud.deploy(DGEMMA_ENGINE_CANVAS="40").returncode == 0
    shadowed = cloud.deploy("--alerts-mode", "shadow", "--allow-paging-change")
    assert shadowed.returncode == 0, shadowed.stdout[-2000:] + shadowed.stderr[-2000:]
    assert cloud.state["router"]["mode"] == "shadow"
    assert cloud.dgemma("rollback").returncode == 0
    assert cloud.dgemma("rollback").returncode == 0
    assert cloud.state["router"]["mode"] == "shadow"


def test_each_checkpoint_has_its_own_folder_and_a_rollback_serves_the_weights_it_served(
    cloud: Cloud, tmp_path: Path
) -> None:
    """In download mode the revision reads the bucket at every cold start: a new --checkpoint goes to
    its own folder (its manifest's digest), so the serving revision's objects are never rewritten, and
    a rollback points the service at the folder it served."""
    assert cloud.deploy("--weights-mode", "download").returncode == 0
    a = build_manifest(cloud.checkpoint).digest
    bucket = storage.Client(project="test").bucket(WEIGHTS_BUCKET)
    client = client_from_env("test")

    def objects(folder: str) -> dict[str, tuple[int | None, str | None]]:
        blobs = client.list_blobs(bucket, prefix=f"dgemma-w4a16/{folder}/")
        return {b.name: (b.generation, b.md5_hash) for b in blobs}

    served = objects(a)
    assert served and json.loads((cloud.work / "terraform.tfvars.json").read_text())["weights_version"] == a
    other = tmp_path / "retrained"
    shutil.copytree(cloud.checkpoint, other)
    with (other / "model.safetensors").open("r+b") as f:  # another checkpoint: one weight byte differs
        f.seek(-1, 2)
        last = f.read(1)
        f.seek(-1, 2)
        f.write(bytes([last[0] ^ 0xFF]))
    b = build_manifest(other).digest
    assert b != a
    second = cloud.deploy("--checkpoint", str(other))
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-2000:]
    assert f"weights_version: {a} -> {b}" in " ".join(second.stdout.split())
    assert objects(a) == served, "the serving revision's weights were not touched"
    assert objects(b) and cloud.state["applied"][-1]["weights_version"] == b
    back = cloud.dgemma("rollback")
    assert back.returncode == 0, back.stdout[-2000:] + back.stderr[-2000:]
    # The traffic goes back to the first revision, whose template (immutable, as Cloud Run's) reads a.
    ((revision, percent, _),) = cloud.traffic()
    made = next(
        v for v in cloud.state["applied"] if f"{v['service_name']}-{v['revision_suffix']}" == revision
    )
    assert percent == 100 and made["weights_version"] == a and objects(a) == served


def test_rollback_dry_run_with_a_history_says_what_it_would_do(cloud: Cloud) -> None:
    assert cloud.deploy().returncode == 0
    assert cloud.deploy(DGEMMA_ENGINE_CANVAS="40").returncode == 0
    applies = cloud.state["applies"]
    done = cloud.dgemma("rollback", "--dry-run")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "terraform" in done.stdout and "<the revision that served before>" in done.stdout
    assert cloud.state["applies"] == applies


def test_the_table_names_each_setting_once_and_paging_changes_are_found() -> None:
    assert len({s.variable for s in SETTINGS}) == len({s.name for s in SETTINGS}) == len(SETTINGS)
    applied = {"alerts_sink_secrets": ["pagerduty"], "alerts_policy": "x", "alerts_mode": "act",
               "notification_channels": ["c"], "deadman_notification_channels": []}  # fmt: skip
    same = {**applied}
    assert paging_changes(applied, same) == [] and changes(applied, same) == []
    gone = {**applied, "alerts_sink_secrets": [], "alerts_mode": "shadow", "notification_channels": []}
    assert len(paging_changes(applied, gone)) == 3
    assert paging_changes({}, gone) == [], "a first deploy changes no one's pages"
    added = {**applied, "alerts_sink_secrets": ["pagerduty", "slack"], "notification_channels": ["c", "d"]}
    assert paging_changes(applied, added) == [], "adding a sink or a channel pages more, not less"


def test_ctrl_c_during_the_gate_says_where_it_stopped_and_the_next_run_goes_on(cloud: Cloud) -> None:
    """SIGINT while the gate loads the candidate: exit 130 with where it stopped and how to go on;
    the traffic stays where it was; the same command again replaces the candidate's tag and moves the
    traffic."""
    import os
    import signal
    import subprocess
    import sys
    import threading
    import time

    from tests.helpers.deploy import FAST_GATE, REGION

    assert cloud.deploy().returncode == 0
    serving = cloud.traffic()[0][0]
    argv = [sys.executable, "-m", "deploy.cli", "deploy", "--checkpoint", str(cloud.checkpoint),
            "--allow-dirty", "--id-token", "off", "--warmup-seconds", "30", *FAST_GATE, "--project", PROJECT,
            "--region", REGION, "--workdir", str(cloud.work)]  # fmt: skip
    env = {**cloud.env, "DGEMMA_ENGINE_CANVAS": "40"}

    def as_a_terminal_starts_it() -> None:
        # A test run in the background (`make test &`) ignores SIGINT, as POSIX shells start
        # background jobs, and a child inherits that: Python then raises no KeyboardInterrupt.
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    proc = subprocess.Popen(  # a session of its own: what it starts is in its process group
        argv,
        cwd=cloud.work.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=as_a_terminal_starts_it,
    )
    lines: dict[str, list[str]] = {"out": [], "err": []}

    def read(name: str) -> None:
        stream = proc.stdout if name == "out" else proc.stderr
        assert stream is not None
        lines[name].extend(stream)

    def locust_running() -> bool:
        """A Locust run in the deploy's process group: the gate is loading the candidate."""
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
                cmdline = (stat.parent / "cmdline").read_bytes()
            except OSError:
                continue  # gone meanwhile
            if int(fields[2]) == proc.pid and b"locust" in cmdline:
                return True
        return False

    readers = [threading.Thread(target=read, args=(name,), daemon=True) for name in lines]
    for reader in readers:
        reader.start()
    # On the gate's own process, not after a pause: a loaded machine may take any time to get there.
    deadline, gating = time.monotonic() + 240, False
    while proc.poll() is None and not gating and time.monotonic() < deadline:
        gating = locust_running()
        time.sleep(0.1)
    assert gating and proc.poll() is None, "the deploy's gate did not run"
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)
    for reader in readers:
        reader.join(timeout=30)
    out, err = "".join(lines["out"]), "".join(lines["err"])
    try:  # the signal went to the deploy alone, and it stopped the gate's Locust run: nothing is left
        os.killpg(proc.pid, 0)
        left = subprocess.run(["ps", "-o", "pid,args", "-g", str(proc.pid)], capture_output=True, text=True)
        raise AssertionError(f"left running after Ctrl-C:\n{left.stdout}")
    except ProcessLookupError:
        pass
    assert proc.returncode == 130, out[-2000:] + err[-2000:]
    said = " ".join(out.split())
    assert "interrupted during:" in said and "Run the same command again to go on" in said
    assert "tagged candidate at 0 %" in said
    assert cloud.traffic()[0][:2] == [serving, 100], "the traffic stays where it was"
    again = cloud.deploy(DGEMMA_ENGINE_CANVAS="40")
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert cloud.traffic()[0][0] != serving and all(t[2] == "" for t in cloud.traffic()), "no tag left"
