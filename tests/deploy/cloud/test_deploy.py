"""`dgemma deploy`'s orchestration, end to end: the real CLI, with recording stand-ins for `gcloud` and
`terraform` on PATH (devtools/harness/fakecloud.py), the real GCS emulator for the weights, a real gateway
on loopback as "the service" (its engine scripted: answers are not what is tested), and the real
Locust gate. The commands' syntax is checked against the real gcloud in test_deploy_commands.py."""

from __future__ import annotations

import io
import json
import re
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from google.cloud import storage
from rich.console import Console

from app.core.config import ConfigError
from app.gateway.main import create_app
from deploy.cloud.checks import check_alerts_policy
from deploy.cloud.config import SENDERS, DeployConfig
from deploy.cloud.rollout import ensure_router_secrets
from deploy.cloud.shell import Shell
from deploy.cloud.terraform import ROUTER_SECRETS, Terraform, tfvars
from deploy.runtime.weights import build_manifest, client_from_env
from devtools.harness.fakecloud import WEIGHTS
from devtools.harness.local_stack import ROOT
from devtools.harness.metadata import claims_of, fake_metadata
from tests.helpers.deploy import FAST_GATE, PROJECT, REGION, WEIGHTS_BUCKET, Cloud
from tests.helpers.gateway import ScriptedEngine, gateway_settings, serving
from tests.helpers.terraform import TERRAFORM

pytestmark = pytest.mark.integration


@dataclass
class Rollouts:
    """One project deployed three times in a row: first, then with a changed setting (a gated
    candidate), then unchanged (a no-op); what each left behind."""

    cloud: Cloud
    runs: list[subprocess.CompletedProcess[str]]
    marks: list[int]  # len(calls) before each deploy
    applies: list[int]  # applies before each deploy


@pytest.fixture(scope="module")
def rollouts(
    tmp_path_factory: pytest.TempPathFactory, service: str, router: str, gcs_url: str, checkpoint: Path
) -> Rollouts:
    cloud = Cloud(tmp_path_factory.mktemp("rollouts"), service, gcs_url, checkpoint, router)
    done = Rollouts(cloud, [], [], [])
    for env in ({}, {"DGEMMA_ENGINE_CANVAS": "40"}, {"DGEMMA_ENGINE_CANVAS": "40"}):
        done.marks.append(len(cloud.state["calls"]) if done.runs else 0)
        done.applies.append(cloud.state["applies"] if done.runs else 0)
        run = cloud.deploy(**env)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        done.runs.append(run)
    return done


def test_a_first_deploy_lays_out_the_project_then_serves_at_100_percent(rollouts: Rollouts) -> None:
    cloud, first = rollouts.cloud, rollouts.runs[0]
    calls = cloud.calls()[: rollouts.marks[1]]
    # The order that matters: infrastructure before weights and image; the image before the revision.
    order = ["gcloud run services", "gcloud storage cat", "terraform init", "terraform apply",
             "gcloud secrets versions", "gcloud builds submit", "terraform apply"]  # fmt: skip
    remaining = iter(calls)
    assert all(any(call == step for call in remaining) for step in order), calls  # a subsequence
    infra, revision, opened = cloud.state["applied"][:3]
    assert infra["image"] == "" and revision["image"].split("@")[1].startswith("sha256:")
    assert revision["weights_mode"] == "baked" and revision["serving_revision"] == ""  # first: 100 % at once
    # Until its gate passes the first revision is the operator's alone, and no router sends it alerts:
    # it is applied to the GPU service and the operator's invoker binding only.
    gpu, operator = "module.dgemma.google_cloud_run_v2_service", 'invokers["user:sre@example.com"]'
    assert revision["targets"] == [f"{gpu}.gpu", f"{gpu}_iam_member.{operator}"]
    assert "targets" not in opened and opened["revision_suffix"] == revision["revision_suffix"]
    assert revision["engine_max_num_seqs"] == 32  # the supervisor's own default
    # The checkpoint's own folder: its manifest's digest under the prefix, which the revision names.
    digest = build_manifest(cloud.checkpoint).digest
    assert revision["weights_version"] == digest and f"dgemma-w4a16/{digest}" in first.stdout
    bucket = storage.Client(project="test").bucket(WEIGHTS_BUCKET)
    assert bucket.blob(f"dgemma-w4a16/{digest}/manifest.json").exists(client=client_from_env("test"))
    assert (cloud.work / "api-key").stat().st_mode & 0o777 == 0o600
    assert "ready in" in first.stdout


def test_a_first_deploy_builds_the_router_and_gives_each_sender_a_token(rollouts: Rollouts) -> None:
    """The router: its image from the same build, deployed by digest with the revision; each sender's
    secret got a random token of its own before (the stand-in, like Cloud Run, refuses a revision
    whose secret has no version); then where each sender posts, and how to read its token."""
    cloud, first = rollouts.cloud, rollouts.runs[0]
    infra, revision = cloud.state["applied"][:2]
    assert infra["router_image"] == "" and "targets" in revision
    (build,) = cloud.state["builds"]
    router_tag = build["_ROUTER_IMAGE"]
    assert (
        router_tag == f"{REGION}-docker.pkg.dev/{PROJECT}/dgemma/dgemma-router:{router_tag.rsplit(':')[-1]}"
    )
    assert build["_IMAGE"].split(":")[-1].startswith(router_tag.rsplit(":")[-1])  # the same commit
    digest = cloud.state["images"][router_tag]
    assert revision["router_image"] == f"{router_tag.rsplit(':', 1)[0]}@{digest}"
    tokens = [cloud.versions(f"dgemma-alerts-{source}-token") for source in SENDERS]
    assert all(len(v) >= 1 and len(v[0]) >= 40 for v in tokens) and len({v[0] for v in tokens}) == 3
    assert not any(v[0] in first.stdout + first.stderr for v in tokens), "tokens are never printed"
    router = cloud.state["router_url"]
    assert f"alert router ready: {router}" in first.stdout
    for source in SENDERS:
        assert f"{source}: {router}/v1/alerts/{source}" in first.stdout
        reveal = f"token: gcloud secrets versions access latest --secret=dgemma-alerts-{source}-token"
        assert f"{reveal} --project={PROJECT}" in first.stdout
    assert f"{router}/v1/alerts/cloud-monitoring?auth_token= (append the token)" in first.stdout


def test_a_changed_setting_is_a_gated_candidate_then_the_traffic(rollouts: Rollouts) -> None:
    cloud, second = rollouts.cloud, rollouts.runs[1]
    calls = cloud.calls(rollouts.marks[1])[: rollouts.marks[2] - rollouts.marks[1]]
    assert "gcloud builds submit" not in calls, "the tag exists: no build"
    assert calls.count("terraform apply") == 2  # the candidate, then the traffic
    revision = cloud.state["applied"][1]
    candidate, promoted = cloud.state["applied"][3:5]
    first_revision = f"dgemma-{revision['revision_suffix']}"
    new_revision = f"dgemma-{candidate['revision_suffix']}"
    assert candidate["engine_canvas"] == 40 and new_revision != first_revision
    assert (candidate["serving_revision"], candidate["candidate_revision"]) == (first_revision, new_revision)
    assert (promoted["serving_revision"], promoted["candidate_revision"]) == (new_revision, "")
    assert cloud.traffic() == [[new_revision, 100, ""]]
    assert (cloud.work / f"gate-{candidate['revision_suffix']}" / "summary.md").is_file()
    assert len(cloud.versions("dgemma-api-keys")) == 1, "a first key added out of band, then reused"
    assert [len(cloud.versions(f"dgemma-alerts-{s}-token")) for s in SENDERS] == [1, 1, 1], "tokens kept"
    assert candidate["router_image"] == revision["router_image"], "the same commit: the same router"
    assert cloud.state["router"]["image"] == revision["router_image"]
    assert "alert router ready" in second.stdout


def test_nothing_changed_is_a_no_op(rollouts: Rollouts) -> None:
    cloud, third = rollouts.cloud, rollouts.runs[2]
    assert "nothing to do" in third.stdout
    assert cloud.state["applies"] == rollouts.applies[2]
    assert "gcloud builds submit" not in cloud.calls(rollouts.marks[2])


def test_a_failed_gate_keeps_the_traffic_and_exits_non_zero(cloud: Cloud) -> None:
    assert cloud.deploy().returncode == 0
    serving = cloud.traffic()[0][0]
    router = cloud.state["router"]
    # A new setting of the router's too: it must not reach the router, which pages people, unless
    # the gate passes.
    failed = cloud.deploy(
        "--target",
        "latency_p95_ms=0.001",
        "--alerts-mode",
        "act",
        "--allow-paging-change",
        DGEMMA_ENGINE_CANVAS="40",
    )
    assert failed.returncode == 1, failed.stdout[-3000:] + failed.stderr[-3000:]
    assert "the gate failed" in failed.stdout and "summary.md" in failed.stdout
    candidate, untagged = cloud.state["applied"][-2:]
    assert candidate["candidate_revision"] and candidate["serving_revision"] == serving
    assert all(a["targets"][0].endswith("google_cloud_run_v2_service.gpu") for a in (candidate, untagged))
    assert cloud.traffic() == [[serving, 100, ""]], "the serving revision keeps 100 %, the candidate no tag"
    assert cloud.state["router"] == router == {**router, "mode": "shadow"}, "the router as it was"


def test_a_failed_apply_stops_before_any_traffic_change(cloud: Cloud) -> None:
    assert cloud.deploy().returncode == 0
    serving, gates = cloud.traffic(), set(cloud.work.glob("gate-*"))
    cloud.set(fail_apply_at=cloud.state["applies"] + 1)
    failed = cloud.deploy(DGEMMA_ENGINE_CANVAS="40")
    assert failed.returncode == 1
    assert "deploy failed" in failed.stderr and "quota exceeded" in failed.stderr
    assert cloud.traffic() == serving
    assert set(cloud.work.glob("gate-*")) == gates, "no gate ran for the revision that failed to apply"


def test_dry_run_prints_the_plan_and_calls_nothing(cloud: Cloud) -> None:
    done = cloud.deploy("--dry-run")
    assert done.returncode == 0, done.stderr[-2000:]
    assert cloud.state["calls"] == [], "a dry run calls no tool"
    out = done.stdout
    steps = [
        # What is deployed, read first: the GPU service, then the history beside the state.
        "gcloud run services describe dgemma --",
        "gcloud storage cat gs://my-gpu-project-dgemma-tfstate/dgemma/dgemma/history.json",
        "terraform -chdir",
        "init -input=false",  # the command, not the step's heading above it
        "terraform apply: the infrastructure",
        "gcloud builds submit",
        "terraform apply: the new revision, at 0 % under the tag candidate",
        # The revision's first instance compiles and stores the caches before any caller's traffic.
        "first instance compiles and stores the compile cache",
        "gate on it",
        "terraform apply: the traffic to the new revision",
    ]
    positions = [out.index(s) for s in steps]
    assert positions == sorted(positions), out
    # Each placeholder whole: the revision's name and the images' tags keep the commit's (`<sha>`).
    words = " ".join(out.split())
    assert "dgemma-<sha>-<digest>" in words and "<the co-" not in words, words[-3000:]
    # What the module makes: a metrics collector beside each service's container, and the monitoring.
    made = out[: out.index("## preflight")]
    assert "google_cloud_run_v2_service.gpu (containers: dgemma, collector)" in made
    assert "google_cloud_run_v2_service.router (containers: router, collector)" in made
    for resource in (
        "google_project_iam_member.runtime_writes_metrics", "google_monitoring_dashboard.services",
        "google_monitoring_slo.availability", "google_monitoring_slo.latency",
        "google_monitoring_alert_policy.slo_burn", "google_monitoring_alert_policy.kit",
        "google_monitoring_uptime_check_config.router", "google_monitoring_alert_policy.uptime",
    ):  # fmt: skip
        assert resource in made, resource
    tfvars = out.split(f"--- {cloud.work.resolve() / 'terraform.tfvars.json'}\n")[1]
    variables = json.loads(tfvars[: tfvars.index("\n}\n") + 3])
    assert variables["project_id"] == PROJECT and variables["region"] == REGION
    assert variables["weights_mode"] == "baked" and variables["max_instance_count"] == 1
    assert variables["router_image"] == "" and variables["alerts_sink_secrets"] == []  # the infrastructure
    # The router: a token for each sender before the build; both images in it; its URLs at the end.
    build = out.index("gcloud builds submit")
    for source in SENDERS:
        add = f"gcloud secrets versions add dgemma-alerts-{source}-token --project={PROJECT} --data-file=-"
        assert out.index(add) < build
        reveal = f"gcloud secrets versions access latest --secret=dgemma-alerts-{source}-token"
        assert out.index(reveal) > out.index("terraform apply: the traffic to the new revision")
    assert re.search(
        r"_IMAGE=<image_repository>/dgemma:[^,]+,_ROUTER_IMAGE=<image_repository>/dgemma-router:", out
    )
    assert "<router_url>/readyz (public)" in out
    root = json.loads(
        out.split(f"--- {cloud.work.resolve() / 'main.tf.json'}\n")[1].split("\n}\n")[0] + "\n}"
    )
    assert root["terraform"]["backend"]["gcs"]["bucket"] == f"{PROJECT}-dgemma-tfstate"
    assert root["module"]["dgemma"]["source"] == str(ROOT / "terraform")


def test_the_private_service_is_called_with_an_id_token_and_the_api_key(
    tmp_path: Path, gcs_url: str, checkpoint: Path, router: str
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
        cloud = Cloud(tmp_path, url, gcs_url, checkpoint, router)
        env = {"GCE_METADATA_HOST": metadata.host, "GCE_METADATA_IP": metadata.host}
        done = cloud.dgemma(
            "deploy", "--checkpoint", str(checkpoint), "--allow-dirty", "--warmup-seconds", "30", *FAST_GATE,
            "--id-token", "auto", **env,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    key = cloud.versions("dgemma-api-keys")[-1].strip()
    assert len(seen) > 10 and metadata.identity_requests()
    for headers in seen:
        assert headers["authorization"] == f"Bearer {key}"
        token = headers["x-serverless-authorization"].removeprefix("Bearer ")
        assert claims_of(token)["aud"] == url


def test_preflight_says_what_is_wrong(cloud: Cloud) -> None:
    refused = cloud.deploy(region="us-west1")
    assert refused.returncode == 2
    assert "region must be a Cloud Run region with NVIDIA L4 GPUs" in refused.stderr
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


def test_the_router_must_answer_after_the_gate(cloud: Cloud) -> None:
    """The gate passed and the traffic moved; a router that never answers /readyz still fails the
    deploy, saying so."""
    cloud.set(router_url="http://127.0.0.1:9")  # nothing listens
    done = cloud.deploy("--warmup-seconds", "3")
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    message = " ".join(done.stderr.split())
    assert "the alert router is not ready: http://127.0.0.1:9 was not ready within 3 s" in message
    assert "serves: the gate passed" in message
    assert cloud.traffic()[0][1] == 100 and "alert router ready" not in done.stdout


def test_a_deployment_from_before_the_router_gets_its_secrets_first(cloud: Cloud) -> None:
    assert cloud.deploy().returncode == 0
    # As the project looked before the router: no router, none of its secrets.
    cloud.set(secrets={"dgemma-api-keys": cloud.versions("dgemma-api-keys")}, router=None)
    mark = len(cloud.state["calls"])
    done = cloud.deploy(DGEMMA_ENGINE_CANVAS="40")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    # A targeted apply makes the secrets, then the tokens, then the revision (router included).
    calls = cloud.state["calls"][mark:]
    applies = [(n, [a for a in c if a.startswith("-target=")]) for n, c in enumerate(calls) if "apply" in c]
    adds = [n for n, c in enumerate(calls) if c[:4] == ["gcloud", "secrets", "versions", "add"]]
    assert applies[0][1] == [f"-target={ROUTER_SECRETS}"] and applies[1][1] and not applies[2][1]
    assert applies[0][0] < adds[0] and len(adds) == 3 and adds[-1] < applies[1][0]
    assert [len(cloud.versions(f"dgemma-alerts-{s}-token")) for s in SENDERS] == [1, 1, 1]
    assert cloud.state["router"] is not None and "alert router ready" in done.stdout


def test_destroy_lifts_both_services_protection(cloud: Cloud) -> None:
    assert cloud.deploy().returncode == 0
    router_image = cloud.state["router"]["image"]
    calls = len(cloud.state["calls"])
    refused = cloud.dgemma("destroy")  # no terminal to confirm on
    assert refused.returncode == 2 and "confirm with --yes" in refused.stderr
    assert len(cloud.state["calls"]) == calls  # nothing asked of the cloud
    assert (cloud.work / "api-key").exists()
    destroyed = cloud.dgemma("destroy", "--yes")
    assert destroyed.returncode == 0
    assert not (cloud.work / "api-key").exists() and "the API key's copy" in destroyed.stdout
    last, lifted = cloud.state["applied"][-2:]
    assert lifted["deletion_protection"] is False
    assert lifted["router_image"] == router_image and "@sha256:" in lifted["image"]
    # The last deploy's variables, so lifting the protection makes no revision of default settings.
    assert lifted == {**last, "deletion_protection": False}


def test_sink_secrets_need_a_value_and_the_policy_reads_only_mounted_ones(
    cloud: Cloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sinks and a policy (DeployConfig.alerts_sinks/alerts_policy): the policy must read only sink
    files the deploy mounts, and a sink secret without a value stops the deploy with the command
    that adds one. Against the stand-ins, in process."""
    policy = TERRAFORM / "examples/gpu/alerts-policy.toml"  # reads pagerduty's and slack's files
    cfg = DeployConfig(PROJECT, REGION, workdir=cloud.work, alerts_policy=policy, alerts_sinks=("pagerduty",))
    with pytest.raises(ConfigError, match="sink 'slack' reads /secrets/sinks/slack/value, which no declared"):
        check_alerts_policy(cfg)
    cfg = replace(cfg, alerts_sinks=("pagerduty", "slack"))
    check_alerts_policy(cfg)
    assert tfvars(cfg, "baked")["alerts_policy"] == policy.read_text()
    assert tfvars(cfg, "baked")["alerts_sink_secrets"] == ["pagerduty", "slack"]

    monkeypatch.setenv("PATH", cloud.env["PATH"])
    cloud.work.mkdir(parents=True, exist_ok=True)
    shell = Shell(Console(file=io.StringIO()), cfg.directory, dry_run=False)
    add = f"printf %s VALUE | gcloud secrets versions add dgemma-alerts-sink-pagerduty --project={PROJECT}"
    with pytest.raises(ConfigError, match=re.escape(add)):
        ensure_router_secrets(cfg, shell, Terraform(cfg, shell), tfvars(cfg, "baked"))
    # Nothing existed: a targeted apply made the secrets, and the senders have their tokens.
    assert cloud.state["applied"][-1]["targets"] == [ROUTER_SECRETS]
    assert [len(cloud.versions(cfg.sender_secret(s))) for s in SENDERS] == [1, 1, 1]
    assert cloud.versions("dgemma-alerts-policy") == [policy.read_text()]  # Terraform's one version
    cloud.set(secrets={**cloud.state["secrets"], "dgemma-alerts-sink-pagerduty": ["key"]})
    with pytest.raises(ConfigError, match=r"have no value: dgemma-alerts-sink-slack\."):
        ensure_router_secrets(cfg, shell, Terraform(cfg, shell), tfvars(cfg, "baked"))
    cloud.set(secrets={**cloud.state["secrets"], "dgemma-alerts-sink-slack": ["https://hooks.slack.com/x"]})
    applies = cloud.state["applies"]
    ensure_router_secrets(cfg, shell, Terraform(cfg, shell), tfvars(cfg, "baked"))
    assert cloud.state["applies"] == applies, "the secrets exist: no apply"
    assert [len(cloud.versions(cfg.sender_secret(s))) for s in SENDERS] == [1, 1, 1], "no second token"


def test_the_alert_flags_reach_the_deploy(cloud: Cloud) -> None:
    """`--alerts-policy` and `--alerts-sink` through the real CLI: a policy reading a sink file no
    flag declares is refused (exit 2) before anything is built."""
    policy = str(TERRAFORM / "examples/gpu/alerts-policy.toml")
    done = cloud.deploy("--alerts-policy", policy, "--alerts-sink", "pagerduty")
    assert done.returncode == 2, done.stderr
    assert "sink 'slack' reads /secrets/sinks/slack/value" in " ".join(done.stderr.split())
    assert not cloud.state.get("builds") and not cloud.state.get("applied"), "refused before any change"


def test_a_new_router_starts_in_shadow_and_keeps_the_mode_it_runs(cloud: Cloud) -> None:
    first = cloud.deploy()
    assert first.returncode == 0, first.stderr[-2000:]
    assert cloud.state["router"]["mode"] == "shadow"
    assert "--alerts-mode act" in " ".join(first.stdout.split())  # the one command that switches it
    switched = cloud.deploy("--alerts-mode", "act", "--allow-paging-change")
    assert switched.returncode == 0, switched.stderr[-2000:]
    assert cloud.state["router"]["mode"] == "act"
    later = cloud.deploy(DGEMMA_ENGINE_CANVAS="40")  # any later deploy, no flag: the mode it runs
    assert later.returncode == 0, later.stderr[-2000:]
    assert cloud.state["applied"][-1]["alerts_mode"] == "act" and cloud.state["router"]["mode"] == "act"


def test_destroy_keeps_the_weights_and_a_deploy_after_it_imports_them(cloud: Cloud) -> None:
    """The fixture's bucket is one made by hand (it exists before the first deploy): the deploy
    imports it rather than create it (the stand-in, like Terraform, answers a create of an existing
    bucket with 409). Destroy forgets it and leaves it; the next deploy imports it again and finds
    the checkpoint already there."""
    first = cloud.deploy()
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    assert cloud.state["imports"] == {WEIGHTS: f"{PROJECT}/{WEIGHTS_BUCKET}"}
    destroyed = cloud.dgemma("destroy", "--yes")
    assert destroyed.returncode == 0, destroyed.stderr[-2000:]
    assert f"the weights stay in gs://{WEIGHTS_BUCKET}" in destroyed.stdout
    assert WEIGHTS_BUCKET in cloud.state["buckets"] and cloud.state["service"] is None
    assert cloud.state["imports"] == {}, "the destroy ran without the import block"
    again = cloud.deploy()
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert "409" not in again.stderr and cloud.traffic()[0][1] == 100
    assert "uploading" not in again.stdout.lower(), "the kept checkpoint is not sent again"
    assert cloud.state["router"] is not None and len(cloud.versions("dgemma-api-keys")) == 1


def test_a_missing_weights_bucket_is_created_not_imported(cloud: Cloud) -> None:
    cloud.set(buckets={})
    done = cloud.deploy()
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert cloud.state["imports"] == {} and WEIGHTS_BUCKET in cloud.state["buckets"]


def test_notification_channels_reach_the_module_and_a_bad_one_stops_first(cloud: Cloud) -> None:
    alerts, deadman = (
        f"projects/{PROJECT}/notificationChannels/123",
        f"projects/{PROJECT}/notificationChannels/456",
    )
    done = cloud.deploy("--dry-run", "--notify", alerts, "--deadman-notify", deadman, "--gpu-uptime-check")
    assert done.returncode == 0, done.stderr[-2000:]
    tfvars = done.stdout.split(f"--- {cloud.work.resolve() / 'terraform.tfvars.json'}\n")[1]
    variables = json.loads(tfvars[: tfvars.index("\n}\n") + 3])
    assert variables["notification_channels"] == [alerts]
    assert variables["deadman_notification_channels"] == [deadman] and variables["gpu_uptime_check"] is True
    bad = cloud.deploy("--dry-run", "--notify", "pagerduty")
    assert bad.returncode == 2 and "--notify" in bad.stderr and "notificationChannels/ID" in bad.stderr
    assert cloud.state["calls"] == [], "refused before any tool"


def test_the_dry_run_shows_a_new_sinks_two_steps(cloud: Cloud) -> None:
    """A first deploy with a sink stops for the sink's value (it never passes through a flag or
    Terraform): its dry run says so, with the command, before the build."""
    done = cloud.deploy("--dry-run", "--alerts-sink", "pagerduty")
    assert done.returncode == 0, done.stderr[-2000:]
    out = " ".join(done.stdout.split())
    stop = "if dgemma-alerts-sink-pagerduty has no value yet (a first deploy): the deploy stops here (exit 2)"
    add = f"gcloud secrets versions add dgemma-alerts-sink-pagerduty --project={PROJECT} --data-file=-"
    assert stop in out and out.index(stop) < out.index(add) < out.index("gcloud builds submit")


def test_missing_application_default_credentials_stop_the_deploy_before_any_change(
    cloud: Cloud, tmp_path: Path
) -> None:
    """gcloud is logged in, but the weights' upload and checks (and Terraform) read the
    application-default credentials: preflight finds none, before the state bucket or any apply."""
    no_adc = {
        "STORAGE_EMULATOR_HOST": "",  # the real Cloud Storage client, as the operator's machine has
        "CLOUDSDK_CONFIG": str(tmp_path / "gcloud-config"),  # where `application-default login` writes
        "NO_GCE_CHECK": "true",  # and not a Google VM's metadata server either
    }
    done = cloud.deploy(**no_adc)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "no Google credentials for Cloud Storage" in done.stderr
    assert "gcloud auth application-default login" in done.stderr
    assert cloud.calls() == ["gcloud auth print-access-token"], "refused right after gcloud's own check"


def test_a_channel_of_another_project_number_is_refused_in_preflight(
    cloud: Cloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A channel named by project number (inputs.py refuses other project IDs offline): preflight
    holds it to the project's number, which it reads anyway. In process, against the stand-ins."""
    from deploy.cloud.checks import preflight
    from deploy.cloud.gcloud import Gcloud

    monkeypatch.setenv("PATH", cloud.env["PATH"])
    cloud.work.mkdir(parents=True, exist_ok=True)
    shell = Shell(Console(file=io.StringIO()), cloud.work, dry_run=False)
    ours = "projects/123456789012/notificationChannels/7"  # the stand-in's project number
    cfg = DeployConfig(PROJECT, REGION, workdir=cloud.work, allow_dirty=True, notification_channels=(ours,))
    preflight(cfg, shell, Gcloud(cfg, shell))
    theirs = "projects/999999999999/notificationChannels/7"
    cfg = replace(cfg, notification_channels=(), deadman_channels=(ours, theirs))
    refused = f"--deadman-notify {theirs}: a channel of project number 999999999999"
    with pytest.raises(ConfigError, match=refused):
        preflight(cfg, shell, Gcloud(cfg, shell))


def _changes(cloud: Cloud, since: int = 0) -> list[str]:
    """The calls that change the project (the stand-ins' reads and `terraform init` aside)."""
    changing = (
        "terraform apply", "terraform destroy", "terraform state rm",
        "gcloud storage rm", "gcloud storage buckets create", "gcloud storage cp",
    )  # fmt: skip
    words = (" ".join(w for w in call if not w.startswith("-")) for call in cloud.state["calls"][since:])
    return [c for c in words if c.startswith(changing)]


def test_destroy_with_nothing_deployed_changes_nothing_and_says_so(cloud: Cloud) -> None:
    """No service, no router, no state bucket (the fixture's weights bucket was made by hand): no
    init, no apply, exit 0. Then after a deploy and its destroy (the state bucket and the history
    stay, the state holds nothing): the same, and the weights bucket is said to stay."""
    done = cloud.dgemma("destroy", "--yes")
    assert done.returncode == 0, done.stderr[-2000:]
    out = " ".join(done.stdout.split())
    assert "nothing to destroy: no dgemma or dgemma-router service" in out and "destroyed" not in out
    assert "no Terraform state (there is no state bucket); nothing was changed" in out
    assert f"the weights stay in gs://{WEIGHTS_BUCKET}" in out
    assert not [c for c in cloud.calls() if c.startswith("terraform")] and cloud.state["applies"] == 0
    assert cloud.deploy().returncode == 0 and cloud.dgemma("destroy", "--yes").returncode == 0
    mark = len(cloud.state["calls"])
    again = cloud.dgemma("destroy", "--yes", "--delete-weights")
    assert again.returncode == 0, again.stderr[-2000:]
    out = " ".join(again.stdout.split())
    assert f"no Terraform state (gs://{PROJECT}-dgemma-tfstate holds nothing)" in out
    assert f"gs://{WEIGHTS_BUCKET} stays: `gcloud storage rm --recursive gs://{WEIGHTS_BUCKET}`" in out
    assert "terraform state list" in cloud.calls(mark) and _changes(cloud, mark) == []
    assert WEIGHTS_BUCKET in cloud.state["buckets"]


def test_destroy_after_a_first_deploy_that_stopped_tears_down_what_the_state_holds(cloud: Cloud) -> None:
    """The infrastructure applied, the revision refused: no service runs, but the state holds the
    buckets and secrets, so destroy does its work."""
    cloud.set(fail_apply_at=2)
    assert cloud.deploy().returncode == 1
    assert cloud.state["service"] is None and cloud.state["router"] is None
    done = cloud.dgemma("destroy", "--yes")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "destroyed" in done.stdout and "nothing to destroy" not in done.stdout
    assert "terraform destroy" in cloud.calls() and cloud.state["secrets"] == {}


def test_a_dry_run_of_destroy_says_what_it_would_delete(cloud: Cloud) -> None:
    done = cloud.dgemma("destroy", "--dry-run")
    assert done.returncode == 0, done.stderr[-2000:]
    out = " ".join(done.stdout.split())
    assert "destroyed" not in out and cloud.state["calls"] == []
    assert "dry run: the destroy would delete dgemma and dgemma-router in" in out
    assert f"the weights would stay in gs://{WEIGHTS_BUCKET}" in out
    assert "(else: nothing to destroy, exit 0)" in out and "state list" in out, out
