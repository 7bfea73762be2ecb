"""checkov over the module, offline, with this project's checks (CKV_DGEMMA_*) and every skip
documented next to the code it skips (scripts/checkov.sh refuses global skips)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.helpers.terraform import TERRAFORM

pytestmark = pytest.mark.integration  # the real terraform CLI, the provider's schema, checkov

ROOT = TERRAFORM.parent
DEPLOYED = ROOT / "tests/terraform/fixtures/deployed.example.tfvars"  # with an image: the service exists


def test_the_module_passes_checkov_with_our_checks() -> None:
    done = subprocess.run(
        ["bash", str(ROOT / "scripts/checkov.sh"), str(TERRAFORM), "--var-file", str(DEPLOYED), "-o", "json"],
        capture_output=True,
        text=True,
        env={**os.environ, "CHECKOV_SHOW_PASSED": "1"},
        timeout=600,
    )
    report = json.loads(done.stdout)
    assert done.returncode == 0, report["results"]["failed_checks"]
    assert report["summary"]["failed"] == 0 and report["summary"]["parsing_errors"] == 0
    passed = {(c["check_id"], c["resource"].rsplit(".", 2)[-2]) for c in report["results"]["passed_checks"]}
    for check in ("CKV_DGEMMA_1", "CKV_DGEMMA_2", "CKV_DGEMMA_3"):
        assert (check, "google_cloud_run_v2_service") in passed, check
    assert ("CKV_GCP_114", "google_storage_bucket") in passed  # public access prevention
    assert ("CKV_GCP_29", "google_storage_bucket") in passed  # uniform bucket-level access
    skipped = report["results"]["skipped_checks"]
    comments = [c["check_result"].get("suppress_comment", "") for c in skipped]
    assert comments and all(len(comment) > 30 for comment in comments), "every skip says why"
    # The router is scanned (the fixture deploys it) and passes our checks; its public invoker is the
    # one skip of CKV_DGEMMA_1, and the GPU service's grants pass it.
    named = {
        (c["check_id"], c["resource"].removeprefix("module.dgemma."))
        for c in report["results"]["passed_checks"]
    }
    for check in ("CKV_DGEMMA_1", "CKV_DGEMMA_2", "CKV_DGEMMA_3"):
        assert (check, "google_cloud_run_v2_service.router") in named, check
    assert ("CKV_DGEMMA_1", "google_cloud_run_v2_service_iam_member.router_invokes_gpu[0]") in named
    public_skips = [c["resource"] for c in skipped if c["check_id"] == "CKV_DGEMMA_1"]
    assert public_skips == ["module.dgemma.google_cloud_run_v2_service_iam_member.router_public"]
