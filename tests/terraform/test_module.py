"""The Terraform module, offline: its shape (python-hcl2), and its validation blocks and locals
evaluated by the real `terraform` CLI (they need no provider). Provider schema conformance and
checkov are in test_schema.py and test_checkov.py."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.alerts.policy import Policy
from app.alerts.settings import AlertRouterSettings
from app.core.config import ConfigError, env_names, load
from app.core.secrets import KeyFile
from app.gateway.decisions.calibration_file import Calibration
from app.gateway.settings import GatewaySettings
from app.jev.wire import ReadPolicy
from deploy.cloud.checks import L4_REGIONS, check_alerts_policy, check_calibration, image_served_model
from deploy.cloud.config import SENDERS, DeployConfig
from deploy.cloud.host_budget import HOST_ESTIMATES
from deploy.cloud.start_budget import total
from deploy.cloud.terraform import OUTPUTS, revision_suffix, tfvars
from deploy.runtime.settings import WEIGHTS_MODES, EngineSettings, SupervisorSettings
from loadtest.settings import LoadtestSettings
from tests.helpers.terraform import TERRAFORM, TERRAFORM_ENV, hcl, terraform_eval

pytestmark = pytest.mark.integration  # the real terraform CLI, the provider's schema, checkov

BASE = {"project_id": "my-gpu-project", "region": "europe-west4"}
GPU_SERVICE_LIMIT_S = 1800  # Cloud Run's startup-probe window for GPU services
REQUEST_TIMEOUT_LIMIT_S = 3600
DIGEST = "europe-west4-docker.pkg.dev/p/r/dgemma@sha256:" + "a" * 64
RULES_TEXT = (TERRAFORM.parent / "monitoring" / "prometheus" / "dgemma.rules.yml").read_text()


def _variables() -> dict[str, dict[str, Any]]:
    return {k: v for block in hcl(TERRAFORM / "variables.tf")["variable"] for k, v in block.items()}


def _service() -> dict[str, Any]:
    resource = hcl(TERRAFORM / "service.tf")["resource"][0]["google_cloud_run_v2_service"]["gpu"]
    assert isinstance(resource, dict)
    return resource


def _router() -> dict[str, Any]:
    resource = hcl(TERRAFORM / "alerts.tf")["resource"]
    found = [
        r["google_cloud_run_v2_service"]["router"] for r in resource if "google_cloud_run_v2_service" in r
    ]
    assert len(found) == 1
    router: dict[str, Any] = found[0]
    return router


def _resources(path: Path) -> list[tuple[str, str, dict[str, Any]]]:
    """(type, name, body) of every resource in a file."""
    return [
        (kind, name, body)
        for resource in hcl(path).get("resource", [])
        for kind, named in resource.items()
        for name, body in named.items()
    ]


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
        ({"engine_timeout_s": 1801}, "engine_timeout_s must be between 1 and 1800"),
        ({"memory": "48Gi"}, "memory must be between 16Gi and 32Gi"),
        ({"cpu": "2"}, "cpu must be 4, 6 or 8"),
        ({"service_name": "Dgemma_1"}, "service_name must be"),
        (
            {"router_image": "p/r/dgemma-router:latest", "image": DIGEST},
            "router_image must be deployed by digest",
        ),
        ({"router_image": "x@sha256:" + "b" * 64}, "router_image needs image"),
        ({"alerts_sink_secrets": ["PagerDuty"]}, "alerts_sink_secrets names must be"),
        ({"alerts_sink_secrets": ["pager_duty"]}, "alerts_sink_secrets names must be"),
        ({"alerts_sink_secrets": ["a" * 42]}, "alerts_sink_secrets names must be"),
        ({"alerts_sink_secrets": ["slack", "slack"]}, "must not repeat a name"),
        ({"alerts_decision_budget_s": 10}, "alerts_decision_budget_s must be more than 0 and at most 9"),
        ({"alerts_decision_budget_s": 0}, "alerts_decision_budget_s must be more than 0 and at most 9"),
        ({"router_cpu": "0.5"}, "router_cpu must be 1, 2 or 4"),
        ({"router_min_instance_count": 4}, "router_min_instance_count must be between 0 and router_max"),
        ({"router_max_instance_count": 0}, "router_max_instance_count must be between 1 and 100"),
        ({"alerts_ledger_days": 0}, "alerts_ledger_days must be at least 1"),
        ({"router_memory": "256Mi"}, "router_memory must be written like 512Mi or 2Gi"),
        ({"router_memory": "8Gi"}, "between 512Mi and 4Gi per vCPU"),  # 1 vCPU: at most 4Gi
        ({"router_memory": "1G"}, "router_memory must be written like 512Mi or 2Gi"),
        ({"alerts_policy": "x" * 65537}, "alerts_policy must be at most 64 KiB"),
        ({"calibration": "x" * 65537}, "calibration must be at most 64 KiB"),
        ({"compile_cache_days": 0}, "compile_cache_days must be a whole number of days between 1 and 365"),
        ({"compile_cache_days": 1.5}, "compile_cache_days must be a whole number of days between 1 and 365"),
        ({"calibration": "temperature = 2"}, "calibration must be the JSON file `dgemma calibrate` writes"),
        ({"calibration": "{}"}, "calibration must be the JSON file `dgemma calibrate` writes"),
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


def test_a_full_router_configuration_passes(tmp_path: Path) -> None:
    image = "europe-west4-docker.pkg.dev/p/r/dgemma@sha256:" + "a" * 64
    router = {
        "image": image,
        "router_image": image.replace("/dgemma@", "/dgemma-router@"),
        "alerts_policy": (TERRAFORM / "examples/gpu/alerts-policy.toml").read_text(),
        "alerts_sink_secrets": ["pagerduty", "slack", "a" + "b" * 40],
        "router_cpu": "2",
        "router_memory": "8Gi",
        "alerts_decision_budget_s": 9,
    }
    assert terraform_eval(tmp_path, {"ok": "true"}, {**BASE, **router}) == {"ok": True}


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
    # Every mode keeps its compile caches under the one prefix the runtime may write.
    assert supervisor.resolved_compile_cache_url == "gs://my-gpu-project-dgemma-weights/compile-cache"
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


@pytest.mark.parametrize(("budget", "engine_timeout"), [(60, 120), (900, 120), (1800, 1800)])
def test_probe_window_covers_the_budget_within_the_gpu_limit(
    tmp_path: Path, budget: int, engine_timeout: int
) -> None:
    probe = _service()["template"][0]["containers"][0]["startup_probe"][0]
    assert probe["http_get"][0]["path"] == "/readyz"
    exprs = {
        "threshold": probe["failure_threshold"].removeprefix("${").removesuffix("}"),
        "period": probe["period_seconds"].removeprefix("${").removesuffix("}"),
        "timeout": '"' + _service()["template"][0]["timeout"] + '"',
    }
    variables = {**BASE, "cold_start_budget_s": budget, "engine_timeout_s": engine_timeout}
    got = terraform_eval(tmp_path, exprs, variables)
    assert isinstance(got, dict), got
    window = got["threshold"] * got["period"]
    assert budget <= window <= GPU_SERVICE_LIMIT_S
    assert window - budget < got["period"]
    assert got["timeout"] == f"{budget + engine_timeout}s"
    assert int(got["timeout"].removesuffix("s")) <= REQUEST_TIMEOUT_LIMIT_S


def test_the_default_budget_covers_every_weights_modes_projected_cold_start() -> None:
    budget = _variables()["cold_start_budget_s"]["default"]
    for mode in WEIGHTS_MODES:
        _, high = total(mode)
        assert high <= budget, (mode, high)
    assert math.isclose(budget, 900)


def _members() -> list[tuple[str, str]]:
    """(resource address, member expression) of every IAM grant in the module."""
    return [
        (f"{kind}.{name}", str(body[key]))
        for path in TERRAFORM.glob("*.tf")
        for kind, name, body in _resources(path)
        for key in ("member", "members")
        if key in body
    ]


def test_only_the_router_is_public_and_no_secret_value_enters_the_state() -> None:
    members = _members()
    assert len(members) >= 6
    public = [m for m in members if "allUsers" in m[1] or "allAuthenticatedUsers" in m[1]]
    assert public == [("google_cloud_run_v2_service_iam_member.router_public", "allUsers")]
    router_public = next(b for k, n, b in _resources(TERRAFORM / "iam.tf") if n == "router_public")
    assert router_public["name"] == "${google_cloud_run_v2_service.router[0].name}"
    assert router_public["role"] == "roles/run.invoker"
    assert "invoker_iam_disabled" not in _all_text()
    # No key or token enters the state: the one secret version is the policy's (configuration, not a
    # secret); no key or token in a plain env var.
    versions = [
        (kind, name, body)
        for path in TERRAFORM.glob("*.tf")
        for kind, name, body in _resources(path)
        if kind == "google_secret_manager_secret_version"
    ]
    assert sorted((n, b["secret_data"]) for _, n, b in versions) == [
        ("alerts_policy", "${var.alerts_policy}"),
        ("calibration", "${var.calibration}"),
        ("metrics", "${each.value.config}"),  # the collectors' configs (local.metrics_collectors)
    ]
    secrets = {n: b["secret"] for _, n, b in versions}
    assert secrets["alerts_policy"] == '${google_secret_manager_secret.alerts["policy"].id}'
    assert secrets["calibration"] == "${google_secret_manager_secret.calibration[0].id}"
    assert secrets["metrics"] == "${google_secret_manager_secret.metrics[each.key].id}"
    text = _all_text()
    assert text.count("secret_data") == 3
    assert not re.search(r"DGEMMA_API_KEYS\s*=", text), "keys come from the mounted secret file only"
    secret_env = r"DGEMMA_ALERTS_((ALERTMANAGER|GRAFANA|CLOUD_MONITORING)_(TOKEN|BASIC)|GATEWAY_API_KEY)\s*="
    assert not re.search(secret_env, text), "the senders' tokens and the gateway's key come from secrets"


def test_the_router_is_the_only_new_invoker_of_the_gpu_service() -> None:
    gpu_grants = [
        (name, body["member"], body["role"], body.get("count", body.get("for_each")))
        for kind, name, body in _resources(TERRAFORM / "iam.tf")
        if kind.startswith("google_cloud_run_v2_service_iam")
        and "google_cloud_run_v2_service.gpu" in str(body.get("name"))
    ]
    assert gpu_grants == [
        (
            "invokers",
            "${each.value}",
            "roles/run.invoker",
            '${var.image == "" ? toset([]) : toset(var.invokers)}',
        ),
        (
            "router_invokes_gpu",
            "serviceAccount:${google_service_account.router.email}",
            "roles/run.invoker",
            '${var.image == "" || var.router_image == "" ? 0 : 1}',
        ),
        (  # only with gpu_uptime_check (test_the_gpu_uptime_check_is_off_unless_asked_and_then_may_invoke)
            "uptime_check_invokes_gpu",
            "serviceAccount:service-${data.google_project.monitoring[0].number}"
            "@gcp-sa-monitoring-notification.iam.gserviceaccount.com",
            "roles/run.invoker",
            '${var.image != "" && var.gpu_uptime_check ? 1 : 0}',
        ),
    ]


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({}, set()),
        ({"alerts_sink_secrets": ["pagerduty", "slack"]}, {"sink-pagerduty", "sink-slack"}),
        ({"alerts_policy": "x = 1", "alerts_sink_secrets": ["pagerduty"]}, {"policy", "sink-pagerduty"}),
    ],
)
def test_the_routers_secret_grants_are_secret_level_and_cover_exactly_its_secrets(
    tmp_path: Path, variables: dict[str, Any], expected: set[str]
) -> None:
    got = terraform_eval(tmp_path, {"ids": "local.alerts_secret_ids"}, {**BASE, **variables})
    assert isinstance(got, dict), got
    senders = {"sender-alertmanager", "sender-grafana", "sender-cloud-monitoring"}
    assert set(got["ids"]) == senders | expected
    names = {
        "sender-alertmanager": "dgemma-alerts-alertmanager-token",
        "sender-grafana": "dgemma-alerts-grafana-token",
        "sender-cloud-monitoring": "dgemma-alerts-cloud-monitoring-token",
        "sink-pagerduty": "dgemma-alerts-sink-pagerduty",
        "sink-slack": "dgemma-alerts-sink-slack",
        "policy": "dgemma-alerts-policy",
    }
    assert got["ids"] == {k: names[k] for k in got["ids"]}
    deploy = DeployConfig(BASE["project_id"], BASE["region"])  # `dgemma deploy` names them the same
    assert [got["ids"][f"sender-{s}"] for s in SENDERS] == [deploy.sender_secret(s) for s in SENDERS]
    sinks = {k: v for k, v in got["ids"].items() if k.startswith("sink-")}
    assert sinks == {f"sink-{n}": deploy.sink_secret(n) for n in variables.get("alerts_sink_secrets", [])}
    # One secret resource per id, and one secret-level grant per secret the router reads (its own and
    # the gateway's API keys, and its metrics collector's config); the router's identity has no other
    # grant, and project-wide only the metrics writer's role (test_monitoring_grants_are_the_least).
    (secret,) = [b for k, n, b in _resources(TERRAFORM / "alerts.tf") if k == "google_secret_manager_secret"]
    assert secret["for_each"] == "${local.alerts_secret_ids}" and secret["secret_id"] == "${each.value}"
    router_grants = {
        (kind, name): body
        for path in TERRAFORM.glob("*.tf")
        for kind, name, body in _resources(path)
        if "google_service_account.router" in str(body.get("member", ""))
    }
    assert set(router_grants) == {
        ("google_secret_manager_secret_iam_member", "router_reads_secrets"),
        ("google_cloud_run_v2_service_iam_member", "router_invokes_gpu"),
        ("google_storage_bucket_iam_member", "router_ledger"),
        ("google_secret_manager_secret_iam_member", "router_reads_metrics_config"),
        ("google_project_iam_member", "router_writes_metrics"),
    }
    # The ledger: objects of its own bucket only (no bucket settings, no other bucket).
    ledger = router_grants[("google_storage_bucket_iam_member", "router_ledger")]
    assert ledger["role"] == "roles/storage.objectUser"
    assert ledger["bucket"] == "${google_storage_bucket.alerts_ledger[0].name}"
    reads = router_grants[("google_secret_manager_secret_iam_member", "router_reads_secrets")]
    assert reads["role"] == "roles/secretmanager.secretAccessor" and reads["secret_id"] == "${each.value}"
    assert reads["for_each"] == (
        '${merge({"api-keys" = google_secret_manager_secret.api_keys.secret_id}, '
        "{for key, secret in google_secret_manager_secret.alerts : key => secret.secret_id})}"
    )
    # What the router mounts or reads as env is among what it is granted.
    used = set(re.findall(r"google_secret_manager_secret\.(\w+)", str(_router())))
    assert used == {"api_keys", "alerts", "metrics"}


def test_the_router_env_is_what_its_settings_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    variables = {**BASE, "alerts_policy": "x = 1", "alerts_decision_budget_s": 7}
    got = terraform_eval(
        tmp_path, {"env": "local.router_env", "senders": "local.alerts_sender_env"}, variables
    )
    assert isinstance(got, dict), got
    env, senders = got["env"], got["senders"]
    known = {n for names in env_names(AlertRouterSettings).values() for n in names}
    set_in_resource = {e["name"] for e in _router()["template"][0]["containers"][0]["env"] if "name" in e}
    assert set_in_resource == {"DGEMMA_ALERTS_GATEWAY_URL"}
    assert set(env) | set(senders.values()) | set_in_resource <= known
    # Each source's token reaches that source's setting.
    for source, name in senders.items():
        field = f"alerts_{source.replace('-', '_')}_token"
        assert env_names(AlertRouterSettings)[field] == (name,), source
    assert set(senders) == {"alertmanager", "grafana", "cloud-monitoring"}
    # The files exist only in the container: stand-ins here, at the paths the router is told.
    assert env["DGEMMA_ALERTS_POLICY_FILE"] == "/secrets/alerts-policy/policy.toml"
    assert env["DGEMMA_ALERTS_GATEWAY_API_KEY_FILE"] == "/secrets/api-keys/keys"
    keys = tmp_path / "keys"
    keys.write_text("first-key\nsecond-key\n")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("DGEMMA_ALERTS_POLICY_FILE", str(TERRAFORM / "examples/gpu/alerts-policy.toml"))
    monkeypatch.setenv("DGEMMA_ALERTS_GATEWAY_API_KEY_FILE", str(keys))
    for name in senders.values():
        monkeypatch.setenv(name, f"token-of-{name}")
    router = load(AlertRouterSettings)
    assert router.alerts_id_token is True and router.alerts_allow_open_senders is False
    key = router.gateway_key()
    assert router.alerts_decision_budget_s == 7 and isinstance(key, KeyFile)
    assert key.keys() == ["first-key", "second-key"]  # the first is sent, the second tried on a 401
    assert router.alerts_grafana_token is not None
    assert router.alerts_grafana_token.get_secret_value() == "token-of-DGEMMA_ALERTS_GRAFANA_TOKEN"
    # Without a policy the image's default applies: the variable is not set at all.
    (tmp_path / "default").mkdir()
    default = terraform_eval(tmp_path / "default", {"env": "local.router_env"}, BASE)
    assert isinstance(default, dict) and "DGEMMA_ALERTS_POLICY_FILE" not in default["env"]


def test_the_router_scales_out_on_a_shared_ledger_that_expires() -> None:
    router = _router()
    assert router["count"] == '${var.router_image == "" ? 0 : 1}'
    assert router["ingress"] == "INGRESS_TRAFFIC_ALL"
    assert router["deletion_protection"] == "${var.deletion_protection}"
    template = router["template"][0]
    assert template["service_account"] == "${google_service_account.router.email}"
    assert template["scaling"][0] == {
        "min_instance_count": "${var.router_min_instance_count}",
        "max_instance_count": "${var.router_max_instance_count}",
    }
    variables = _variables()
    assert variables["router_min_instance_count"]["default"] == 1
    assert variables["router_max_instance_count"]["default"] > 1
    (bucket,) = [b for k, n, b in _resources(TERRAFORM / "storage.tf") if n == "alerts_ledger"]
    assert (
        bucket["name"] == "${local.alerts_ledger_bucket}" and bucket["public_access_prevention"] == "enforced"
    )
    (rule,) = bucket["lifecycle_rule"]
    assert (
        rule["condition"][0] == {"age": "${var.alerts_ledger_days}"} and rule["action"][0]["type"] == "Delete"
    )
    assert "google_storage_bucket_iam_member.router_ledger" in str(router.get("depends_on"))
    assert 1 < template["max_instance_request_concurrency"] <= 1000
    assert "node_selector" not in template  # CPU only
    container = _containers(router)["router"]  # and its metrics collector (the test below)
    resources = container["resources"][0]
    assert resources["cpu_idle"] is False
    assert set(resources["limits"]) == {"cpu", "memory"}
    assert container["startup_probe"][0]["http_get"][0]["path"] == "/readyz"
    assert container["liveness_probe"][0]["http_get"][0]["path"] == "/healthz"
    assert _variables()["router_cpu"]["default"] == "1"
    assert _variables()["router_memory"]["default"] == "512Mi"
    assert _variables()["alerts_decision_budget_s"]["default"] == 5


def test_sink_secrets_are_mounted_where_a_policy_reads_them(tmp_path: Path) -> None:
    """One volume per sink secret, its value at /secrets/sinks/NAME/value: the example's policy
    (checked by the router's own loader) reads exactly the sinks its module call declares."""
    template = _router()["template"][0]
    (sink_volumes,) = [d["volumes"] for d in template["dynamic"] if "sink-" in str(d)]
    assert sink_volumes["for_each"] == "${toset(var.alerts_sink_secrets)}"
    item = sink_volumes["content"][0]["secret"][0]["items"][0]
    assert item == {"version": "latest", "path": "value"}
    mounts = template["containers"][0]["dynamic"]
    (sink_mounts,) = [d["volume_mounts"] for d in mounts if "sink-" in str(d)]
    got = terraform_eval(tmp_path, {"dir": "local.alerts_sinks_dir"}, BASE)
    assert isinstance(got, dict)
    assert sink_mounts["content"][0]["mount_path"] == "${local.alerts_sinks_dir}/${volume_mounts.value}"
    call = hcl(TERRAFORM / "examples/gpu/main.tf")["module"][0]["dgemma"]
    policy = Policy.load(TERRAFORM / "examples/gpu/alerts-policy.toml")
    files = {
        str(value)
        for cfg in policy.sink_configs.values()
        for key, value in cfg.model_dump().items()
        if key.endswith("_file") and value is not None
    }
    assert files == {f"{got['dir']}/{name}/{item['path']}" for name in call["alerts_sink_secrets"]}
    # `dgemma deploy` checks a policy against the same mounts.
    example = DeployConfig(
        BASE["project_id"],
        BASE["region"],
        alerts_policy=TERRAFORM / "examples/gpu/alerts-policy.toml",
        alerts_sinks=tuple(call["alerts_sink_secrets"]),
    )
    check_alerts_policy(example)


def test_a_calibration_file_is_mounted_where_the_gateway_reads_it(tmp_path: Path) -> None:
    """Set: DGEMMA_CALIBRATION_FILE names the mounted file, the volume pins the version Terraform
    wrote. Unset: neither. `dgemma deploy` checks the file against what the image will serve."""
    cal = Calibration(
        model=image_served_model(), read_policy=ReadPolicy(), by_name={}, by_type={}, data={"path": "x"}
    )
    got = terraform_eval(
        tmp_path,
        {"env": "local.env", "dir": "local.calibration_dir"},
        {**BASE, "calibration": cal.model_dump_json()},
    )
    assert isinstance(got, dict), got
    assert got["env"]["DGEMMA_CALIBRATION_FILE"] == f"{got['dir']}/calibration.json"
    unset = terraform_eval(tmp_path, {"env": "local.env"}, BASE)
    assert isinstance(unset, dict) and "DGEMMA_CALIBRATION_FILE" not in unset["env"]
    service = _service()
    container = service["template"][0]["containers"][0]
    mounts = [m["volume_mounts"]["content"][0] for m in container["dynamic"] if "volume_mounts" in m]
    assert {"name": "calibration", "mount_path": "${local.calibration_dir}"} in mounts
    volumes = [v["volumes"] for v in service["template"][0]["dynamic"] if "volumes" in v]
    (volume,) = [v for v in volumes if v["content"][0]["name"] == "calibration"]
    assert volume["for_each"] == '${var.calibration == "" ? [] : [1]}'
    assert volume["content"][0]["secret"][0]["items"][0] == {
        "version": "${google_secret_manager_secret_version.calibration[0].version}",
        "path": "calibration.json",
    }
    assert "google_secret_manager_secret_iam_member.runtime_reads_calibration" in str(service["depends_on"])
    good = tmp_path / "calibration.json"
    good.write_text(cal.model_dump_json())
    check_calibration(DeployConfig(BASE["project_id"], BASE["region"], calibration=good))
    other = tmp_path / "other.json"
    other.write_text(cal.model_copy(update={"model": "dgemma-toy-alerts"}).model_dump_json())
    with pytest.raises(ConfigError, match="fitted on model 'dgemma-toy-alerts'; this gateway serves"):
        check_calibration(DeployConfig(BASE["project_id"], BASE["region"], calibration=other))
    with_file = tfvars(DeployConfig(BASE["project_id"], BASE["region"], calibration=good), "baked")
    assert with_file["calibration"] == good.read_text()
    # Another file is another revision, gated like any other (the suffix hashes every variable).
    with_other = {**with_file, "calibration": other.read_text()}
    without = {**with_file, "calibration": ""}
    assert len({revision_suffix("abcdef0123", v) for v in (with_file, with_other, without)}) == 3


def test_least_privilege_for_the_runtime_identity() -> None:
    iam = _resources(TERRAFORM / "iam.tf")
    runtime_grants = [
        (kind, name, body["role"])
        for kind, name, body in iam
        if "google_service_account.runtime" in str(body.get("member", ""))
    ]
    assert sorted(runtime_grants) == sorted(
        [
            (
                "google_secret_manager_secret_iam_member",
                "runtime_reads_api_keys",
                "roles/secretmanager.secretAccessor",
            ),
            (
                "google_secret_manager_secret_iam_member",
                "runtime_reads_calibration",
                "roles/secretmanager.secretAccessor",
            ),
            ("google_storage_bucket_iam_member", "runtime_reads_compile_cache", "roles/storage.objectViewer"),
            ("google_storage_bucket_iam_member", "runtime_reads_weights", "roles/storage.objectViewer"),
            (
                "google_storage_bucket_iam_member",
                "runtime_writes_compile_cache",
                "roles/storage.objectCreator",
            ),
            ("google_project_iam_member", "runtime_writes_metrics", "roles/monitoring.metricWriter"),
            (
                "google_secret_manager_secret_iam_member",
                "runtime_reads_metrics_config",
                "roles/secretmanager.secretAccessor",
            ),
        ]
    )
    calibration_grant = next(body for _, name, body in iam if name == "runtime_reads_calibration")
    assert calibration_grant["count"] == '${var.calibration == "" ? 0 : 1}'  # only when a file is set
    assert calibration_grant["secret_id"] == "${google_secret_manager_secret.calibration[0].secret_id}"
    weights_grant = next(body for _, name, body in iam if name == "runtime_reads_weights")
    assert weights_grant["count"] == "${local.runtime_reads_weights ? 1 : 0}"  # not when baked


def test_the_runtime_writes_only_the_compile_cache_prefix_which_expires(tmp_path: Path) -> None:
    iam = {name: body for _, name, body in _resources(TERRAFORM / "iam.tf")}
    prefix = "projects/_/buckets/${google_storage_bucket.weights.name}/objects/${local.compile_cache_prefix}"
    for name in ("runtime_writes_compile_cache", "runtime_reads_compile_cache"):
        (condition,) = iam[name]["condition"]
        assert condition["expression"] == f'resource.name.startsWith("{prefix}")', name
    # objectCreator: create, never replace or delete (the saves are create-only).
    assert iam["runtime_writes_compile_cache"]["role"] == "roles/storage.objectCreator"
    assert "count" not in iam["runtime_writes_compile_cache"]  # every weights mode saves caches
    # Reading the prefix is granted apart only where the whole bucket is not readable (baked).
    assert iam["runtime_reads_compile_cache"]["count"] == "${local.runtime_reads_weights ? 0 : 1}"
    bucket = next(b for k, n, b in _resources(TERRAFORM / "storage.tf") if n == "weights")
    (rule,) = bucket["lifecycle_rule"]
    assert rule["action"] == [{"type": "Delete"}]
    assert rule["condition"] == [
        {"age": "${var.compile_cache_days}", "matches_prefix": ["${local.compile_cache_prefix}"]}
    ]
    got = terraform_eval(
        tmp_path, {"prefix": "local.compile_cache_prefix", "url": "local.compile_cache_url"}, BASE
    )
    assert got == {"prefix": "compile-cache/", "url": "gs://my-gpu-project-dgemma-weights/compile-cache"}
    assert _variables()["compile_cache_days"]["default"] == 30


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


def test_the_kept_weights_bucket_is_imported_into_a_resource_of_the_module(tmp_path: Path) -> None:
    """The generated root's import block (after a destroy, or for a bucket made by hand) names a
    resource the module declares, and the real `terraform validate` accepts the block as the deploy
    writes it, in JSON (a stand-in module of the same address shape: the provider cannot be had
    here), and refuses an address the module lacks (so the check can fail)."""
    from deploy.cloud.terraform import WEIGHTS_BUCKET, root_module

    _, kind, name = WEIGHTS_BUCKET.split(".", 1)[1].split(".")
    buckets = {k for block in hcl(TERRAFORM / "storage.tf")["resource"] for k in block.get(kind, {})}
    assert name in buckets
    cfg = DeployConfig(BASE["project_id"], BASE["region"], workdir=tmp_path)
    root = root_module(cfg, {}, {WEIGHTS_BUCKET: f"{cfg.project}/{cfg.weights_bucket}"})
    assert root["import"] == [{"to": WEIGHTS_BUCKET, "id": f"my-gpu-project/{cfg.weights_bucket}"}]

    def validate(to: str) -> subprocess.CompletedProcess[str]:
        (tmp_path / "m").mkdir(exist_ok=True)
        (tmp_path / "m" / "main.tf").write_text(f'resource "terraform_data" "{name}" {{}}\n')
        imports = [{**block, "to": to} for block in root["import"]]
        stand_in = {"module": {"dgemma": {"source": "./m"}}, "import": imports}
        (tmp_path / "main.tf.json").write_text(json.dumps(stand_in))
        env = {**os.environ, **TERRAFORM_ENV}
        run = ["terraform", f"-chdir={tmp_path}"]
        subprocess.run([*run, "init", "-backend=false"], env=env, check=True, capture_output=True)
        return subprocess.run([*run, "validate", "-no-color"], env=env, capture_output=True, text=True)

    same_shape = WEIGHTS_BUCKET.replace(kind, "terraform_data")
    assert validate(same_shape).returncode == 0
    refused = validate(same_shape.replace(name, "nowhere"))
    assert refused.returncode != 0 and "import target does not exist" in refused.stderr


def _containers(service: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in service["template"][0]["containers"]}


@pytest.mark.parametrize(("cpu", "memory"), [("8", "32Gi"), ("4", "16Gi")])
def test_each_service_runs_a_metrics_collector_after_its_container(
    tmp_path: Path, cpu: str, memory: str
) -> None:
    """The service's container keeps its probes and starts first; the collector starts after it (its
    startup probe passed), scrapes the port where that container serves its metrics under the Prometheus
    rules' job name, and its share comes out of the instance's cpu and memory."""
    gpu, router = _containers(_service()), _containers(_router())
    assert list(gpu) == ["dgemma", "collector"] and list(router) == ["router", "collector"]
    for containers, app in ((gpu, "dgemma"), (router, "router")):
        collector = containers["collector"]
        assert collector["depends_on"] == [app] and "startup_probe" not in collector
        assert collector["image"] == "${local.collector.image}"
        assert collector["volume_mounts"][0]["mount_path"] == "${local.collector.config_dir}"
        assert containers[app]["startup_probe"][0]["http_get"][0] == {"path": "/readyz", "port": 8080}
    exprs = {
        "gpu": "local.gpu_container", "collector": "local.collector",
        "collectors": "local.metrics_collectors", "router_env": "local.router_env",
    }  # fmt: skip
    got = terraform_eval(tmp_path, exprs, {**BASE, "cpu": cpu, "memory": memory})
    assert isinstance(got, dict), got
    # Cloud Run adds up the containers' limits: the instance stays at `cpu` and `memory`.
    assert int(got["gpu"]["cpu"]) + got["collector"]["cpu"] == int(cpu)
    gpu_mib = int(got["gpu"]["memory"].removesuffix("Mi"))
    assert gpu_mib + got["collector"]["memory_mib"] == int(memory.removesuffix("Gi")) * 1024
    assert HOST_ESTIMATES["collector"][0] * 1024 == got["collector"]["memory_mib"], "the fit counts it"
    assert got["collector"]["image"] == _variables()["metrics_collector_image"]["default"]
    assert (got["collector"]["config_dir"], got["collector"]["config"]) == ("/etc/rungmp", "config.yaml")
    assert {k: got["collector"]["liveness"][k] for k in ("path", "port")} == {
        "path": "/liveness",
        "port": 13133,
    }
    metrics_port = int(got["router_env"]["DGEMMA_ALERTS_METRICS_PORT"])
    assert AlertRouterSettings(alerts_metrics_port=metrics_port).alerts_metrics_port == metrics_port
    for key, job, port in (("gateway", "dgemma-gateway", 8080), ("router", "dgemma-router", metrics_port)):
        config = yaml.safe_load(got["collectors"][key]["config"])
        # What the collector refuses to start without (run-gmp-sidecar's confgenerator).
        assert (config["apiVersion"], config["kind"]) == ("monitoring.googleapis.com/v1beta", "RunMonitoring")
        assert config["metadata"]["name"] == job, "the `job` label the Prometheus rules and policies use"
        (endpoint,) = config["spec"]["endpoints"]
        assert (endpoint["port"], endpoint["path"]) == (str(port), "/metrics")
        interval, timeout = (int(endpoint[k].removesuffix("s")) for k in ("interval", "timeout"))
        assert timeout <= interval
    assert job in RULES_TEXT


def test_one_collector_definition_serves_both_services() -> None:
    """The collector's container and its config volume are the same block in both services, from
    local.collector; they differ only in the container it waits for and the config it mounts."""

    def collector(service: dict[str, Any], app: str, key: str) -> str:
        volumes = [v for v in service["template"][0]["volumes"] if v["name"] == "${local.collector.volume}"]
        assert len(volumes) == 1, service["template"][0]["volumes"]
        block = json.dumps([_containers(service)["collector"], volumes[0]], sort_keys=True)
        assert f'["{app}"]' in block and f'metrics[\\"{key}\\"]' in block, block
        return block.replace(f'["{app}"]', '["APP"]').replace(f'metrics[\\"{key}\\"]', "metrics[KEY]")

    gpu, router = collector(_service(), "dgemma", "gateway"), collector(_router(), "router", "router")
    assert gpu == router
    for path in ("service.tf", "alerts.tf"):  # no value of the collector's written out beside it
        text = (TERRAFORM / path).read_text()
        assert "metrics_collector_image" not in text and "/etc/rungmp" not in text, path


def test_the_dead_mans_switch_notifies_around_the_router(tmp_path: Path) -> None:
    deployed = {**BASE, "image": DIGEST, "router_image": DIGEST}
    got = terraform_eval(tmp_path, {"policies": "local.alert_policies"}, deployed)
    assert isinstance(got, dict), got
    policies = got["policies"]
    assert {name for name, p in policies.items() if p["deadman"]} == {"heartbeat"}
    assert "absent_over_time(dgemma_alerts_heartbeat_timestamp_seconds" in policies["heartbeat"]["query"]
    resources = {name: body for _, name, body in _resources(TERRAFORM / "monitoring.tf")}
    assert resources["kit"]["notification_channels"] == (
        "${each.value.deadman ? var.deadman_notification_channels : var.notification_channels}"
    )
    assert resources["uptime"]["notification_channels"] == (
        '${each.key == "router" ? var.deadman_notification_channels : var.notification_channels}'
    )
    assert resources["slo_burn"]["notification_channels"] == "${var.notification_channels}"
    # The same thresholds as the Prometheus rules: a fallback page waiting (the variable's default is
    # the rules' value), the heartbeat's age.
    minutes = _variables()["alerts_pending_alert_minutes"]["default"]
    rules = {r["alert"]: r for g in yaml.safe_load(RULES_TEXT)["groups"] for r in g["rules"] if "alert" in r}
    assert rules["DgemmaAlertsClassificationsWaiting"]["expr"].endswith(f"> {minutes * 60}")
    assert policies["classifications_waiting"]["query"].endswith(f"> {minutes * 60}")
    assert (
        "> 600" in policies["heartbeat"]["query"] and "> 600" in rules["DgemmaAlertsHeartbeatMissing"]["expr"]
    )
    later = terraform_eval(
        tmp_path, {"policies": "local.alert_policies"}, {**deployed, "alerts_pending_alert_minutes": 20}
    )
    assert isinstance(later, dict), later
    assert later["policies"]["classifications_waiting"]["query"].endswith("> 1200")
    assert "over 1200 s ago" in later["policies"]["classifications_waiting"]["runbook"]
    # Each policy only once its service exists.
    infrastructure = terraform_eval(tmp_path, {"policies": "local.alert_policies"}, BASE)
    assert infrastructure == {"policies": {}}


def test_the_dead_mans_switch_can_be_turned_off(tmp_path: Path) -> None:
    """Without Alertmanager's Watchdog the heartbeat's policy would fire for ever: `deadman_switch`
    off makes none, and every other policy stays."""
    assert _variables()["deadman_switch"]["default"] is True
    deployed = {**BASE, "image": DIGEST, "router_image": DIGEST}
    on = terraform_eval(tmp_path, {"policies": "local.alert_policies"}, deployed)
    off = terraform_eval(
        tmp_path, {"policies": "local.alert_policies"}, {**deployed, "deadman_switch": False}
    )
    assert isinstance(on, dict) and isinstance(off, dict), (on, off)
    assert set(on["policies"]) - set(off["policies"]) == {"heartbeat"}
    assert not set(off["policies"]) - set(on["policies"])


def test_the_dashboards_tile_without_overlap_and_read_each_services_own_series(tmp_path: Path) -> None:
    got = terraform_eval(tmp_path, {"dashboards": "local.dashboards_json"}, BASE)
    assert isinstance(got, dict), got
    for key, service in (("gateway", "dgemma"), ("router", "dgemma-router")):
        dashboard = json.loads(got["dashboards"][key])
        assert dashboard["displayName"].endswith(f": {service}")
        tiles = dashboard["mosaicLayout"]["tiles"]
        cells = [
            (t["xPos"] + dx, t["yPos"] + dy)
            for t in tiles
            for dx in range(t["width"])
            for dy in range(t["height"])
        ]
        assert len(cells) == len(set(cells))
        assert max(x for x, _ in cells) < dashboard["mosaicLayout"]["columns"]
        for tile in tiles:
            for data_set in tile["widget"]["xyChart"]["dataSets"]:
                query = data_set["timeSeriesQuery"]
                narrowed = query.get("prometheusQuery") or query["timeSeriesFilter"]["filter"]
                mine = (f'namespace="{service}"', f'"service_name"="{service}"')
                assert any(m in narrowed for m in mine), narrowed


def test_the_gpu_uptime_check_is_off_unless_asked_and_then_may_invoke() -> None:
    assert _variables()["gpu_uptime_check"]["default"] is False
    monitoring = {
        name: body for kind, name, body in _resources(TERRAFORM / "monitoring.tf") if "uptime_check" in kind
    }
    assert monitoring["gpu"]["count"] == '${var.image != "" && var.gpu_uptime_check ? 1 : 0}'
    assert monitoring["gpu"]["http_check"][0]["service_agent_authentication"] == [{"type": "OIDC_TOKEN"}]
    assert "service_agent_authentication" not in monitoring["router"]["http_check"][0]  # it is public
    iam = {name: body for _, name, body in _resources(TERRAFORM / "iam.tf")}
    grant = iam["uptime_check_invokes_gpu"]
    assert grant["count"] == monitoring["gpu"]["count"] and grant["role"] == "roles/run.invoker"
    assert "@gcp-sa-monitoring-notification.iam.gserviceaccount.com" in grant["member"]
