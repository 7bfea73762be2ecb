"""The Terraform module, offline: its shape (python-hcl2), and its validation blocks and locals
evaluated by the real `terraform` CLI (they need no provider). Provider schema conformance and
checkov are in test_schema.py and test_checkov.py."""

from __future__ import annotations

import math
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from app.config import env_names, load
from app.settings import GatewaySettings
from deploy.cloud import L4_REGIONS, OUTPUTS
from deploy.coldstart import total
from deploy.fit import WEIGHTS_MODES
from deploy.settings import EngineSettings, SupervisorSettings
from loadtest.settings import LoadtestSettings
from tests.helpers import TERRAFORM, TERRAFORM_ENV, hcl, terraform_eval

BASE = {"project_id": "my-gpu-project", "region": "europe-west4"}
GPU_SERVICE_LIMIT_S = 1800  # Cloud Run's startup-probe window for GPU services
REQUEST_TIMEOUT_LIMIT_S = 3600


def _variables() -> dict[str, dict[str, Any]]:
    return {k: v for block in hcl(TERRAFORM / "variables.tf")["variable"] for k, v in block.items()}


def _service() -> dict[str, Any]:
    resource = hcl(TERRAFORM / "service.tf")["resource"][0]["google_cloud_run_v2_service"]["gpu"]
    assert isinstance(resource, dict)
    return resource


def _all_text() -> str:
    return "\n".join(p.read_text() for p in TERRAFORM.rglob("*.tf"))


def test_terraform_fmt() -> None:
    done = subprocess.run(
        ["terraform", "fmt", "-check", "-recursive", "-diff", str(TERRAFORM)],
        capture_output=True,
        text=True,
        env={**os.environ, **TERRAFORM_ENV},
    )
    assert done.returncode == 0, done.stdout


def test_every_variable_is_typed_and_described_and_every_output_described() -> None:
    for name, v in _variables().items():
        assert v.get("type") and len(v.get("description", "")) > 20, name
    outputs = {k: v for block in hcl(TERRAFORM / "outputs.tf")["output"] for k, v in block.items()}
    assert all(len(o.get("description", "")) > 10 for o in outputs.values())
    assert set(OUTPUTS) <= set(outputs), "every output the deploy reads exists"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"region": "us-west1"}, "region must be a Cloud Run region with NVIDIA L4"),
        ({"weights_mode": "nfs"}, "weights_mode must be baked, download or gcs_fuse"),
        ({"image": "europe-west4-docker.pkg.dev/p/r/dgemma:latest"}, "image must be deployed by digest"),
        ({"invokers": ["allUsers"]}, "allUsers and allAuthenticatedUsers are refused"),
        ({"invokers": ["allAuthenticatedUsers"]}, "allUsers and allAuthenticatedUsers are refused"),
        ({"max_instance_count": 4}, "max_instance_count must be between 1 and l4_gpu_quota"),
        ({"cold_start_budget_s": 2400}, "must be between 60 and 1800"),
        ({"memory": "48Gi"}, "memory must be between 16Gi and 32Gi"),
        ({"cpu": "2"}, "cpu must be 4, 6 or 8"),
        ({"service_name": "Dgemma_1"}, "service_name must be"),
    ],
)
def test_validation_blocks_refuse_bad_values(tmp_path: Path, override: dict[str, Any], message: str) -> None:
    got = terraform_eval(tmp_path, {"ok": "true"}, {**BASE, **override})
    assert isinstance(got, str), f"{override} was accepted"
    assert message in " ".join(got.split())


def test_defaults_and_a_raised_quota_pass(tmp_path: Path) -> None:
    image = "europe-west4-docker.pkg.dev/p/r/dgemma@sha256:" + "a" * 64
    good = {**BASE, "image": image, "l4_gpu_quota": 6, "max_instance_count": 6, "invokers": ["user:a@b.c"]}
    assert terraform_eval(tmp_path, {"ok": "true"}, good) == {"ok": True}


@pytest.mark.parametrize("mode", WEIGHTS_MODES)
def test_the_service_env_is_what_the_settings_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    env = terraform_eval(tmp_path, {"env": "local.env"}, {**BASE, "weights_mode": mode})
    assert isinstance(env, dict), env
    known = {
        name
        for section in (GatewaySettings, SupervisorSettings, LoadtestSettings)
        for names in env_names(section).values()
        for name in names
    }
    assert set(env["env"]) <= known, (
        f"Terraform sets env vars no settings section reads: {set(env['env']) - known}"
    )
    for name, value in env["env"].items():
        monkeypatch.setenv(name, value)
    supervisor = load(SupervisorSettings)
    assert supervisor.resolved_weights_mode == mode
    assert supervisor.engine_max_num_seqs == EngineSettings().engine_max_num_seqs
    assert supervisor.engine_startup_timeout_s == 900  # the cold-start budget
    model_dir = {
        "baked": Path(".cache/model"),
        "download": Path("/tmp/weights"),
        "gcs_fuse": Path("/mnt/weights"),
    }
    assert supervisor.model_dir == model_dir[mode]  # baked: the image's DGEMMA_MODEL_DIR=/weights
    if mode != "baked":
        assert supervisor.weights_url == "gs://my-gpu-project-dgemma-weights/dgemma-w4a16"
    # The gateway reads the keys from the mounted secret, admits what Cloud Run lets in, never sheds it.
    monkeypatch.delenv("DGEMMA_API_KEYS_FILE")  # the mount does not exist here
    gateway = load(GatewaySettings)
    assert env["env"]["DGEMMA_API_KEYS_FILE"] == "/secrets/api-keys/keys"
    assert gateway.max_concurrent_decisions == gateway.max_queued_decisions == supervisor.engine_max_num_seqs
    assert gateway.engine_timeout_s == 120 and gateway.gcp_project == "my-gpu-project"


def test_concurrency_and_engine_knobs_have_one_source() -> None:
    template = _service()["template"][0]
    assert template["max_instance_request_concurrency"] == "${var.engine_max_num_seqs}"
    variables = _variables()
    # The variable's default is the supervisor's default and the gateway's admission default.
    assert variables["engine_max_num_seqs"]["default"] == EngineSettings().engine_max_num_seqs
    assert variables["engine_max_num_seqs"]["default"] == GatewaySettings().max_concurrent_decisions
    assert variables["engine_canvas"]["default"] == EngineSettings().engine_canvas
    assert variables["engine_prompt_tokens"]["default"] == EngineSettings().engine_prompt_tokens
    assert variables["engine_timeout_s"]["default"] == GatewaySettings().engine_timeout_s


def test_gpu_and_scale_to_zero() -> None:
    template = _service()["template"][0]
    assert template["node_selector"][0]["accelerator"] == "nvidia-l4"
    assert template["execution_environment"] == "EXECUTION_ENVIRONMENT_GEN2"
    assert template["gpu_zonal_redundancy_disabled"] == "${var.gpu_zonal_redundancy_disabled}"
    assert template["scaling"][0] == {
        "min_instance_count": 0,
        "max_instance_count": "${var.max_instance_count}",
    }
    resources = template["containers"][0]["resources"][0]
    assert resources["limits"]["nvidia.com/gpu"] == "1"
    assert resources["cpu_idle"] is False and resources["startup_cpu_boost"] is True
    assert _variables()["cpu"]["default"] == "8" and _variables()["memory"]["default"] == "32Gi"


@pytest.mark.parametrize("budget", [60, 900, 1800])
def test_probe_window_covers_the_budget_within_the_gpu_limit(tmp_path: Path, budget: int) -> None:
    probe = _service()["template"][0]["containers"][0]["startup_probe"][0]
    assert probe["http_get"][0]["path"] == "/readyz"
    exprs = {
        "threshold": probe["failure_threshold"].removeprefix("${").removesuffix("}"),
        "period": probe["period_seconds"].removeprefix("${").removesuffix("}"),
        "timeout": '"' + _service()["template"][0]["timeout"] + '"',
    }
    got = terraform_eval(tmp_path, exprs, {**BASE, "cold_start_budget_s": budget, "engine_timeout_s": 120})
    assert isinstance(got, dict), got
    window = got["threshold"] * got["period"]
    assert budget <= window <= GPU_SERVICE_LIMIT_S
    assert window - budget < got["period"]
    assert got["timeout"] == f"{budget + 120}s" and budget + 120 <= REQUEST_TIMEOUT_LIMIT_S


def test_the_default_budget_covers_every_weights_modes_projected_cold_start() -> None:
    budget = _variables()["cold_start_budget_s"]["default"]
    for mode in WEIGHTS_MODES:
        _, high = total(mode)  # type: ignore[arg-type]
        assert high <= budget, (mode, high)
    assert math.isclose(budget, 900)


def _members() -> list[tuple[str, str]]:
    """(resource address, member expression) of every IAM grant in the module."""
    found = []
    for path in TERRAFORM.glob("*.tf"):
        for resource in hcl(path).get("resource", []):
            for kind, named in resource.items():
                for name, body in named.items():
                    for key in ("member", "members"):
                        if key in body:
                            found.append((f"{kind}.{name}", str(body[key])))
    return found


def test_no_public_invoker_and_no_secret_value() -> None:
    members = _members()
    assert len(members) >= 6
    assert not [m for m in members if "allUsers" in m[1] or "allAuthenticatedUsers" in m[1]]
    invokers = [m for m in members if m[0].startswith("google_cloud_run_v2_service_iam_member")]
    assert invokers == [("google_cloud_run_v2_service_iam_member.invokers", "${each.value}")]
    assert "invoker_iam_disabled" not in _all_text()
    # The key never enters the state: no secret version resource, no secret data, no key in env.
    text = _all_text()
    assert "google_secret_manager_secret_version" not in text and "secret_data" not in text
    assert not re.search(r"DGEMMA_API_KEYS\s*=", text), "keys come from the mounted secret file only"


def test_least_privilege_for_the_runtime_identity() -> None:
    iam = [r for r in hcl(TERRAFORM / "iam.tf")["resource"]]
    runtime_grants = []
    for resource in iam:
        for kind, named in resource.items():
            for name, body in named.items():
                if "google_service_account.runtime" in str(body.get("member", "")):
                    runtime_grants.append((kind, name, body["role"]))
    assert sorted(runtime_grants) == [
        (
            "google_secret_manager_secret_iam_member",
            "runtime_reads_api_keys",
            "roles/secretmanager.secretAccessor",
        ),
        ("google_storage_bucket_iam_member", "runtime_reads_weights", "roles/storage.objectViewer"),
    ]
    weights_grant = next(
        r["google_storage_bucket_iam_member"]["runtime_reads_weights"]
        for r in iam
        if "google_storage_bucket_iam_member" in r
        and "runtime_reads_weights" in r["google_storage_bucket_iam_member"]
    )
    assert weights_grant["count"] == "${local.runtime_reads_weights ? 1 : 0}"  # not when baked


def test_traffic_holds_the_serving_revision_while_a_candidate_waits_at_zero() -> None:
    service = _service()
    (main,) = service["traffic"]
    assert main["percent"] == 100 and "var.serving_revision" in main["revision"]
    candidate = service["dynamic"][-1]["traffic"]
    assert candidate["content"][0] == {
        "type": "TRAFFIC_TARGET_ALLOCATION_TYPE_REVISION",
        "revision": "${traffic.value}",
        "percent": 0,
        "tag": "candidate",
    }
    assert service["template"][0]["revision"].startswith("${var.revision_suffix")


def test_regions_are_the_deploy_commands() -> None:
    condition = _variables()["region"]["validation"][0]["condition"]
    assert tuple(re.findall(r'"([a-z0-9-]+)"', condition)) == L4_REGIONS


def test_the_example_uses_the_module_as_declared() -> None:
    example = hcl(TERRAFORM / "examples/gpu/main.tf")
    call = example["module"][0]["dgemma"]
    variables = _variables()
    arguments = set(call) - {"source"}
    assert arguments <= set(variables), arguments - set(variables)
    required = {n for n, v in variables.items() if "default" not in v}
    assert required <= arguments
    assert call["source"] == "../.."
    sample = (TERRAFORM / "examples/gpu/terraform.example.tfvars").read_text()
    declared = {k for block in example["variable"] for k in block}
    assert {m.group(1) for m in re.finditer(r"^(\w+)\s*=", sample, re.M)} <= declared
