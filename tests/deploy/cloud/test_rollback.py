"""`dgemma rollback` and `dgemma deploy --plan` through the real CLI, against the recording stand-ins
of gcloud and terraform (devtools/harness/fakecloud.py), the GCS emulator and a real gateway as the
service: the traffic and the router go back through Terraform, from the history kept beside the
state, and the next deploy gates its revision again."""

from __future__ import annotations

import json

import pytest

from tests.helpers.deploy import PROJECT, Cloud

pytestmark = pytest.mark.integration

HISTORY = f"gs://{PROJECT}-dgemma-tfstate/dgemma/dgemma/history.json"


def test_rollback_moves_the_traffic_and_the_router_back_and_the_next_run_keeps_it(cloud: Cloud) -> None:
    assert cloud.deploy().returncode == 0
    first = cloud.traffic()[0][0]
    router_before = cloud.state["router"]
    second = cloud.deploy("--alerts-mode", "act", "--allow-paging-change", DGEMMA_ENGINE_CANVAS="40")
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-2000:]
    new = cloud.traffic()[0][0]
    assert new != first and cloud.state["router"]["mode"] == "act"
    history = json.loads(cloud.state["objects"][HISTORY])
    assert history["served"] == [first, new] and len(history["routers"]) == 2

    done = cloud.dgemma("rollback")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert cloud.traffic() == [[first, 100, ""]]
    assert cloud.state["router"] == router_before, "the router's image and mode as before the deploy"
    gpu, router = cloud.state["applied"][-2:]
    assert gpu["targets"] == ["module.dgemma.google_cloud_run_v2_service.gpu"], "the traffic alone"
    assert gpu["revision_suffix"] == router["revision_suffix"] == f"{new.removeprefix('dgemma-')}", (
        "the template stays the last one applied: no revision is made"
    )
    assert "targets" not in router and router["serving_revision"] == first
    # What the rollback applied is the history's and the work folder's: a plain Terraform run keeps it.
    kept = json.loads((cloud.work / "terraform.tfvars.json").read_text())
    assert kept["serving_revision"] == first and kept["alerts_mode"] == "shadow"
    assert json.loads(cloud.state["objects"][HISTORY])["applied"] == kept

    again = cloud.dgemma("rollback")  # undoes the rollback
    assert again.returncode == 0, again.stderr[-2000:]
    assert cloud.traffic() == [[new, 100, ""]] and cloud.state["router"]["mode"] == "act"

    back = cloud.dgemma("rollback", "--only", "service", "--to", first)
    assert back.returncode == 0 and cloud.traffic() == [[first, 100, ""]]
    assert cloud.state["router"]["mode"] == "act", "--only service leaves the router"
    # The next deploy of the rolled-back commit gates its revision again before the traffic moves.
    applies = cloud.state["applies"]
    redo = cloud.deploy("--alerts-mode", "act", "--allow-paging-change", DGEMMA_ENGINE_CANVAS="40")
    assert redo.returncode == 0, redo.stderr[-2000:]
    candidate = cloud.state["applied"][applies]
    assert candidate["candidate_revision"] == new and candidate["serving_revision"] == first
    assert cloud.traffic() == [[new, 100, ""]]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--to", "dgemma-nope"], "dgemma-nope is not a revision of dgemma"),
        (["--only", "router"], "dgemma-router has no earlier settings"),
        ([], "no earlier serving revision in the history"),
    ],
)
def test_rollback_refuses_what_it_cannot_do_before_any_apply(
    cloud: Cloud, args: list[str], message: str
) -> None:
    assert cloud.deploy().returncode == 0
    applies = cloud.state["applies"]
    done = cloud.dgemma("rollback", *args)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert message in " ".join(done.stderr.split())
    assert cloud.state["applies"] == applies


def test_rollback_without_a_history_says_so(cloud: Cloud) -> None:
    done = cloud.dgemma("rollback")
    assert done.returncode == 2 and "no deploy history in" in done.stderr
    assert not cloud.state.get("applied")


def test_plan_shows_what_would_change_and_changes_nothing(cloud: Cloud) -> None:
    assert cloud.deploy().returncode == 0
    state = cloud.state
    done = cloud.deploy("--plan", DGEMMA_ENGINE_CANVAS="40")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    plan = done.stdout[done.stdout.index("Plan (fakecloud)") :]
    changed = json.loads(plan[plan.index("{") : plan.index("}") + 1])
    assert changed["engine_canvas"] == 40 and changed["serving_revision"].startswith("dgemma-")
    assert "keeps the images that run now" in done.stdout
    after = cloud.state
    assert after["applies"] == state["applies"] and after.get("builds") == state.get("builds")
    assert after["service"] == state["service"] and after["objects"] == state["objects"]


def test_a_router_the_last_deploy_did_not_change_stays(cloud: Cloud) -> None:
    assert cloud.deploy().returncode == 0
    first, router = cloud.traffic()[0][0], cloud.state["router"]
    assert cloud.deploy(DGEMMA_ENGINE_CANVAS="40").returncode == 0  # the same commit: the same router
    applies = cloud.state["applies"]
    done = cloud.dgemma("rollback")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "dgemma-router did not change with" in " ".join(done.stdout.split())
    assert cloud.traffic() == [[first, 100, ""]] and cloud.state["router"] == router
    assert cloud.state["applies"] == applies + 1, "the traffic alone"
