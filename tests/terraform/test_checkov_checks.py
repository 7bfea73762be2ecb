"""scripts/checkov.sh and the custom checks (tests/terraform/checkov, CKV_DGEMMA_*) on fixture trees.

One checkov run per tree (a few seconds each; the first run of a fresh machine also creates
.venv-checkov, about 30 s), each read back from its JSON report with passed checks listed.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration  # the real terraform CLI, the provider's schema, checkov

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "checkov.sh"
OURS = ("CKV_DGEMMA_1", "CKV_DGEMMA_2", "CKV_DGEMMA_3")
SERVICE = "google_cloud_run_v2_service"


@dataclass
class Scan:
    code: int
    report: dict[str, Any]
    stderr: str

    def results(self, kind: str) -> set[tuple[str, str]]:
        """(check id, resource) of the passed, failed or skipped checks."""
        return {(r["check_id"], r["resource"]) for r in self.report["results"].get(f"{kind}_checks", [])}

    def outcome(self, check_id: str, resource: str) -> str:
        """'passed', 'failed', 'skipped', or 'absent' (UNKNOWN results are left out of the report)."""
        for kind in ("passed", "failed", "skipped"):
            if (check_id, resource) in self.results(kind):
                return kind
        return "absent"

    def details(self, check_id: str, resource: str) -> list[str]:
        for r in self.report["results"]["failed_checks"]:
            if (r["check_id"], r["resource"]) == (check_id, resource):
                return list(r["details"])
        return []


def _run(tree: Path, *args: str, show_passed: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), str(tree), *args],
        env={**os.environ, "CHECKOV_SHOW_PASSED": "1" if show_passed else "0"},
        capture_output=True,
        text=True,
        timeout=900,  # a fresh machine creates the venv first
        check=False,
    )


def _scan(tree: Path, files: dict[str, str]) -> Scan:
    tree.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (tree / name).write_text(text)
    proc = _run(tree, "-o", "json", show_passed=True)
    assert proc.stdout.strip(), f"no report (exit {proc.returncode}):\n{proc.stderr}"
    report = json.loads(proc.stdout)
    if isinstance(report, list):  # checkov prints a list when several frameworks report
        report = next(r for r in report if r["check_type"] == "terraform")
    assert report["summary"]["parsing_errors"] == 0, proc.stderr
    # A check that raises is logged and then reported as nothing at all.
    assert "Failed to run check" not in proc.stderr, proc.stderr
    return Scan(proc.returncode, report, proc.stderr)


LIMITS = """{
          cpu              = "8"
          memory           = "32Gi"
          "nvidia.com/gpu" = "1"
        }"""


def _template(
    *,
    accelerator: str | None = '"nvidia-l4"',
    max_count: str | None = "1",
    cpu_idle: str | None = "false",
    limits: str = LIMITS,
) -> str:
    """The template the deployment wants (L4 GPU, CPU always allocated, at most one instance);
    None leaves an attribute out."""
    selector = f"\n    node_selector {{\n      accelerator = {accelerator}\n    }}" if accelerator else ""
    cap = f"\n      max_instance_count = {max_count}" if max_count else ""
    idle = f"\n        cpu_idle          = {cpu_idle}" if cpu_idle else ""
    return f"""
    service_account = "dgemma-gateway@example-project.iam.gserviceaccount.com"{selector}
    gpu_zonal_redundancy_disabled = true
    scaling {{
      min_instance_count = 0{cap}
    }}
    containers {{
      image = "us-docker.pkg.dev/example-project/dgemma/gateway:1.0.0"
      resources {{
        limits            = {limits}{idle}
        startup_cpu_boost = true
      }}
    }}"""


def _service(name: str, template: str, invoker_iam_disabled: str | None = None) -> str:
    flag = f"\n  invoker_iam_disabled = {invoker_iam_disabled}" if invoker_iam_disabled else ""
    return f"""
resource "{SERVICE}" "{name}" {{
  name                = "{name}"
  location            = "us-central1"
  deletion_protection = true{flag}
  template {{{template}
  }}
}}
"""


def _invoker(name: str, member: str) -> str:
    return f"""
resource "{SERVICE}_iam_member" "{name}" {{
  location = "us-central1"
  name     = "dgemma"
  role     = "roles/run.invoker"
  member   = {member}
}}
"""


COMPLIANT = {
    "main.tf": """
resource "google_service_account" "caller" {
  account_id   = "dgemma-caller"
  display_name = "The one caller allowed to invoke the service"
}

resource "google_storage_bucket" "weights" {
  #checkov:skip=CKV_GCP_62:access logs of a bucket read by one service account are noise
  name                        = "example-project-dgemma-weights"
  location                    = "US-CENTRAL1"
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  versioning {
    enabled = true
  }
}
"""
    + _invoker("caller", '"serviceAccount:${google_service_account.caller.email}"')
    + _invoker("caller_by_member", "google_service_account.caller.member")
    + _service("dgemma", _template(), invoker_iam_disabled="false"),
}

# One resource per violation, each otherwise compliant.
VIOLATIONS = {
    "services.tf": _service("no_iam_check", _template(), invoker_iam_disabled="true")
    + _service("gpu_cpu_idle_unset", _template(accelerator=None, cpu_idle=None))  # GPU from limits only
    + _service("gpu_cpu_idle_true", _template(cpu_idle="true"))
    + _service("uncapped", _template(max_count=None))
    + _service("capped_at_zero", _template(max_count="0")),
    "iam.tf": _invoker("all_users", '"allUsers"')
    + f"""
resource "{SERVICE}_iam_binding" "all_authenticated" {{
  location = "us-central1"
  name     = "dgemma"
  role     = "roles/run.invoker"
  members  = ["serviceAccount:dgemma-caller@example-project.iam.gserviceaccount.com", "allAuthenticatedUsers"]
}}

data "google_iam_policy" "public" {{
  binding {{
    role    = "roles/run.viewer"
    members = ["group:ops@example.com"]
  }}
  binding {{
    role    = "roles/run.invoker"
    members = ["allUsers"]
  }}
}}

resource "{SERVICE}_iam_policy" "public_policy" {{
  location    = "us-central1"
  name        = "dgemma"
  policy_data = data.google_iam_policy.public.policy_data
}}
""",
}

EXPECTED_FAILURES = [
    ("CKV_DGEMMA_1", f"{SERVICE}_iam_member.all_users"),
    ("CKV_DGEMMA_1", f"{SERVICE}_iam_binding.all_authenticated"),
    ("CKV_DGEMMA_1", f"{SERVICE}_iam_policy.public_policy"),
    ("CKV_DGEMMA_1", f"{SERVICE}.no_iam_check"),
    ("CKV_DGEMMA_2", f"{SERVICE}.gpu_cpu_idle_unset"),
    ("CKV_DGEMMA_2", f"{SERVICE}.gpu_cpu_idle_true"),
    ("CKV_DGEMMA_3", f"{SERVICE}.uncapped"),
    ("CKV_DGEMMA_3", f"{SERVICE}.capped_at_zero"),
]

# Values behind variables: defaults are evaluated (safe ones pass, an unsafe one fails); values checkov
# cannot know (no default) never fail; a GPU behind a dynamic block that may be off is not assumed.
VARIABLES = {
    "variables.tf": """
variable "max_instances" {
  type    = number
  default = 1
}
variable "cpu_idle" {
  type    = bool
  default = false
}
variable "invoker_iam_disabled" {
  type    = bool
  default = false
}
variable "gpu_limits" {
  type    = map(string)
  default = { cpu = "8", memory = "32Gi", "nvidia.com/gpu" = "1" }
}
variable "caller" {
  type    = string
  default = "serviceAccount:dgemma-caller@example-project.iam.gserviceaccount.com"
}
variable "public_caller" {
  type    = string
  default = "allUsers"
}
variable "gpu" {
  type    = bool
  default = false
}
variable "max_from_caller" {
  type = number
}
variable "cpu_idle_from_caller" {
  type = bool
}
variable "member_from_caller" {
  type = string
}
""",
    "main.tf": _service(
        "from_defaults",
        _template(max_count="var.max_instances", cpu_idle="var.cpu_idle", limits="var.gpu_limits"),
        invoker_iam_disabled="var.invoker_iam_disabled",
    )
    + _service("from_caller", _template(max_count="var.max_from_caller", cpu_idle="var.cpu_idle_from_caller"))
    + _service(
        "optional_gpu_off",
        """
    dynamic "node_selector" {
      for_each = var.gpu ? [1] : []
      content {
        accelerator = "nvidia-l4"
      }
    }
    scaling {
      max_instance_count = 1
    }
    containers {
      image = "us-docker.pkg.dev/example-project/dgemma/gateway:1.0.0"
    }""",
    )
    + _invoker("default_caller", "var.caller")
    + _invoker("default_public", "var.public_caller")
    + _invoker("caller_from_caller", "var.member_from_caller"),
}


@pytest.fixture(scope="module")
def compliant(tmp_path_factory: pytest.TempPathFactory) -> Scan:
    return _scan(tmp_path_factory.mktemp("compliant"), COMPLIANT)


@pytest.fixture(scope="module")
def violations(tmp_path_factory: pytest.TempPathFactory) -> Scan:
    return _scan(tmp_path_factory.mktemp("violations"), VIOLATIONS)


@pytest.fixture(scope="module")
def variables(tmp_path_factory: pytest.TempPathFactory) -> Scan:
    return _scan(tmp_path_factory.mktemp("variables"), VARIABLES)


def test_compliant_gpu_service_passes_every_check(compliant: Scan) -> None:
    assert compliant.code == 0, compliant.report["results"].get("failed_checks")
    assert not compliant.results("failed")
    passed = compliant.results("passed")
    for check_id in OURS:
        assert (check_id, f"{SERVICE}.dgemma") in passed  # evaluated, not UNKNOWN
    assert ("CKV_DGEMMA_1", f"{SERVICE}_iam_member.caller") in passed
    assert ("CKV_DGEMMA_1", f"{SERVICE}_iam_member.caller_by_member") in passed
    assert ("CKV_GCP_29", "google_storage_bucket.weights") in passed  # built-in checks run too
    # An inline skip is honoured, and reported as a skip.
    assert ("CKV_GCP_62", "google_storage_bucket.weights") in compliant.results("skipped")


@pytest.mark.parametrize(("check_id", "resource"), EXPECTED_FAILURES)
def test_each_violation_fails_with_its_id(violations: Scan, check_id: str, resource: str) -> None:
    assert violations.code != 0
    assert violations.outcome(check_id, resource) == "failed"
    assert violations.details(check_id, resource), "a failure says why"


def test_violations_fail_nothing_else_of_ours(violations: Scan) -> None:
    """Each violating resource breaks one rule: the other custom checks pass on it."""
    ours_failed = {(c, r) for c, r in violations.results("failed") if c in OURS}
    assert ours_failed == set(EXPECTED_FAILURES)
    for resource in {r for _, r in EXPECTED_FAILURES if r.startswith(f"{SERVICE}.")}:
        for check_id in OURS:
            if (check_id, resource) not in EXPECTED_FAILURES:
                assert violations.outcome(check_id, resource) == "passed", (check_id, resource)


def test_safe_variable_defaults_pass_and_an_unsafe_one_fails(variables: Scan) -> None:
    for check_id in OURS:
        assert variables.outcome(check_id, f"{SERVICE}.from_defaults") == "passed", check_id
    assert variables.outcome("CKV_DGEMMA_1", f"{SERVICE}_iam_member.default_caller") == "passed"
    assert variables.outcome("CKV_DGEMMA_1", f"{SERVICE}_iam_member.default_public") == "failed"
    assert variables.code != 0


def test_values_checkov_cannot_know_are_not_failures(variables: Scan) -> None:
    # A cap written as a variable without default is a cap; cpu_idle and a member from the caller
    # are unknown: neither passed nor failed.
    assert variables.outcome("CKV_DGEMMA_3", f"{SERVICE}.from_caller") == "passed"
    assert variables.outcome("CKV_DGEMMA_2", f"{SERVICE}.from_caller") == "absent"
    assert variables.outcome("CKV_DGEMMA_1", f"{SERVICE}_iam_member.caller_from_caller") == "absent"
    # The dynamic node_selector is off by default: no GPU to hold to cpu_idle = false.
    assert variables.outcome("CKV_DGEMMA_2", f"{SERVICE}.optional_gpu_off") != "failed"
    ours_failed = {(c, r) for c, r in variables.results("failed") if c in OURS}
    assert ours_failed == {("CKV_DGEMMA_1", f"{SERVICE}_iam_member.default_public")}


def test_script_refuses_a_tree_without_terraform(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("no terraform here\n")
    proc = _run(tmp_path)
    assert proc.returncode == 2
    assert "no .tf files" in proc.stderr


def test_script_refuses_global_skips(tmp_path: Path) -> None:
    """Skips live next to the code they skip: no --skip-check, no config file with one."""
    (tmp_path / "main.tf").write_text(COMPLIANT["main.tf"])
    refused = _run(tmp_path, "--skip-check", "CKV_DGEMMA_2")
    assert refused.returncode == 2
    assert "skips go inline" in refused.stderr
    (tmp_path / ".checkov.yaml").write_text("skip-check:\n  - CKV_DGEMMA_2\n")
    refused = _run(tmp_path)
    assert refused.returncode == 2
    assert "skips go inline" in refused.stderr


def test_script_fails_on_a_file_checkov_cannot_parse(tmp_path: Path) -> None:
    (tmp_path / "main.tf").write_text('resource "google_storage_bucket" "b" {\n  name =\n}\n')
    proc = _run(tmp_path)
    assert proc.returncode != 0, proc.stdout
    assert "Parsing errors: 1" in proc.stdout
