"""`dgemma deploy`'s orchestration, end to end: the real CLI, with recording stand-ins for `gcloud` and
`terraform` on PATH (devtools/fakecloud.py), the real GCS emulator for the weights, a real gateway
on loopback as "the service" (its engine scripted: answers are not what is tested), and the real
Locust gate. The commands' syntax is checked against the real gcloud in test_deploy_commands.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from google.cloud import storage

from app.main import create_app
from deploy.weights import client_from_env
from devtools.metadata import claims_of, fake_metadata
from devtools.stack import ROOT
from tests.helpers import (
    FAST_GATE,
    PROJECT,
    REGION,
    WEIGHTS_BUCKET,
    Cloud,
    ScriptedEngine,
    gateway_settings,
    serving,
)


def test_first_deploy_then_a_gated_candidate_then_a_no_op(cloud: Cloud) -> None:
    first = cloud.deploy()
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    calls = cloud.calls()
    # The order that matters: infrastructure before weights and image; the image before the revision.
    order = ["terraform init", "gcloud run services", "terraform apply", "gcloud secrets versions",
             "gcloud builds submit", "terraform apply"]  # fmt: skip
    positions = [calls.index(c, calls.index(order[i - 1]) + 1 if i else 0) for i, c in enumerate(order)]
    assert positions == sorted(positions), calls
    infra, revision = cloud.state["applied"]
    assert infra["image"] == "" and revision["image"].split("@")[1].startswith("sha256:")
    assert revision["weights_mode"] == "baked" and revision["serving_revision"] == ""  # first: 100 % at once
    assert revision["invokers"] == ["user:sre@example.com"]  # the operator, for the gate
    assert revision["engine_max_num_seqs"] == 32  # the supervisor's own default
    first_revision = f"dgemma-{revision['revision_suffix']}"
    assert cloud.traffic() == [[first_revision, 100, ""]]
    bucket = storage.Client(project="test").bucket(WEIGHTS_BUCKET)
    assert bucket.blob("dgemma-w4a16/manifest.json").exists(client=client_from_env("test"))
    assert (cloud.work / "api-key").stat().st_mode & 0o777 == 0o600
    assert len(cloud.state["secret_versions"]) == 1  # a first key, added out of band

    # A changed setting: a new revision at 0 % under `candidate`, the gate, then the traffic.
    mark = len(cloud.state["calls"])
    second = cloud.deploy(DGEMMA_ENGINE_CANVAS="48")
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    calls = cloud.calls(mark)
    assert "gcloud builds submit" not in calls, "the tag exists: no build"
    assert calls.count("terraform apply") == 2  # the candidate, then the traffic
    candidate, promoted = cloud.state["applied"][2:]
    new_revision = f"dgemma-{candidate['revision_suffix']}"
    assert candidate["engine_canvas"] == 48 and new_revision != first_revision
    assert (candidate["serving_revision"], candidate["candidate_revision"]) == (first_revision, new_revision)
    assert (promoted["serving_revision"], promoted["candidate_revision"]) == (new_revision, "")
    assert cloud.traffic() == [[new_revision, 100, ""]]
    assert (cloud.work / f"gate-{candidate['revision_suffix']}" / "summary.md").is_file()
    assert len(cloud.state["secret_versions"]) == 1, "the existing key is reused"

    # Nothing changed: no upload, no build, no apply, no new revision.
    mark, applies = len(cloud.state["calls"]), cloud.state["applies"]
    third = cloud.deploy(DGEMMA_ENGINE_CANVAS="48")
    assert third.returncode == 0 and "nothing to do" in third.stdout
    assert cloud.state["applies"] == applies and "gcloud builds submit" not in cloud.calls(mark)


def test_a_failed_gate_keeps_the_traffic_and_exits_non_zero(cloud: Cloud) -> None:
    assert cloud.deploy().returncode == 0
    serving = cloud.traffic()[0][0]
    failed = cloud.deploy("--target", "latency_p95_ms=0.001", DGEMMA_ENGINE_CANVAS="48")
    assert failed.returncode == 1, failed.stdout[-3000:] + failed.stderr[-3000:]
    assert "the gate failed" in failed.stdout and "summary.md" in failed.stdout
    candidate = cloud.state["applied"][-1]
    assert candidate["candidate_revision"] and candidate["serving_revision"] == serving
    assert cloud.traffic()[0] == [serving, 100, ""], "the serving revision keeps 100 %"


def test_a_failed_apply_stops_before_any_traffic_change(cloud: Cloud) -> None:
    assert cloud.deploy().returncode == 0
    serving = cloud.traffic()
    cloud.set(fail_apply_at=cloud.state["applies"] + 1)
    failed = cloud.deploy(DGEMMA_ENGINE_CANVAS="48")
    assert failed.returncode == 1
    assert "deploy failed" in failed.stderr and "quota exceeded" in failed.stderr
    assert cloud.traffic() == serving
    assert not (cloud.work / "gate-").exists() and not list(cloud.work.glob("gate-*48*"))


def test_dry_run_prints_the_plan_and_calls_nothing(cloud: Cloud) -> None:
    done = cloud.deploy("--dry-run")
    assert done.returncode == 0, done.stderr[-2000:]
    assert cloud.state["calls"] == [], "a dry run calls no tool"
    out = done.stdout
    steps = [
        "terraform -chdir",
        "init",
        "gcloud run services describe",
        "terraform apply: the infrastructure",
        "gcloud builds submit",
        "terraform apply: the new revision, at 0 % under the tag candidate",
        "gate on it",
        "terraform apply: the traffic to the new revision",
    ]
    positions = [out.index(s) for s in steps]
    assert positions == sorted(positions), out
    tfvars = out.split(f"--- {cloud.work.resolve() / 'terraform.tfvars.json'}\n")[1]
    variables = json.loads(tfvars[: tfvars.index("\n}\n") + 3])
    assert variables["project_id"] == PROJECT and variables["region"] == REGION
    assert variables["weights_mode"] == "baked" and variables["max_instance_count"] == 1
    root = json.loads(
        out.split(f"--- {cloud.work.resolve() / 'main.tf.json'}\n")[1].split("\n}\n")[0] + "\n}"
    )
    assert root["terraform"]["backend"]["gcs"]["bucket"] == f"{PROJECT}-dgemma-tfstate"
    assert root["module"]["dgemma"]["source"] == str(ROOT / "terraform")


def test_the_private_service_is_called_with_an_id_token_and_the_api_key(
    tmp_path: Path, gcs_url: str, checkpoint: Path
) -> None:
    """The smoke call and the gate send Cloud Run an ID token for the service's URL (minted by
    google-auth from the metadata server, as on Cloud Build or GCE) and the gateway its API key."""
    seen: list[dict[str, str]] = []
    app = create_app(gateway_settings(), engine=ScriptedEngine())

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] in ("/readyz", "/v1/systemone"):
            seen.append({k.decode(): v.decode() for k, v in scope["headers"]})
        await app(scope, receive, send)

    with serving(recording) as url, fake_metadata() as metadata:
        cloud = Cloud(tmp_path, url, gcs_url, checkpoint)
        env = {"GCE_METADATA_HOST": metadata.host, "GCE_METADATA_IP": metadata.host}
        done = cloud.dgemma(
            "deploy", "--checkpoint", str(checkpoint), "--allow-dirty", "--warmup-seconds", "30", *FAST_GATE,
            "--id-token", "auto", **env,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    key = cloud.state["secret_versions"][-1].strip()
    assert len(seen) > 10 and metadata.identity_requests()
    for headers in seen:
        assert headers["authorization"] == f"Bearer {key}"
        token = headers["x-serverless-authorization"].removeprefix("Bearer ")
        assert claims_of(token)["aud"] == url


def test_preflight_says_what_is_wrong(cloud: Cloud) -> None:
    refused = cloud.deploy(region="us-west1")
    assert refused.returncode == 2 and "has no Cloud Run L4 GPUs" in refused.stderr
    cloud.set(buckets={WEIGHTS_BUCKET: "US-EAST4"})
    elsewhere = cloud.deploy()
    assert elsewhere.returncode == 2 and "is in US-EAST4, not europe-west4" in " ".join(
        elsewhere.stderr.split()
    )
    cloud.set(no_credentials=True)
    no_login = cloud.deploy()
    assert (
        no_login.returncode == 2
        and "gcloud has no valid credentials: run `gcloud auth login`" in no_login.stderr
    )
    assert [c for c in cloud.calls() if c.startswith("terraform")] == [], "nothing is applied after a refusal"
