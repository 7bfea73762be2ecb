"""The module against the google provider's own schema (8.7.0), offline: every resource type,
argument and block exists where it is used, required ones are present, literals have their types.
What `terraform validate` would say, without downloading the provider
(devtools/harness/terraform_schema.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from devtools.harness.terraform_schema import default_schema, problems
from tests.helpers.terraform import TERRAFORM

pytestmark = pytest.mark.integration  # the real terraform CLI, the provider's schema, checkov


def test_the_module_conforms_to_the_provider_schema() -> None:
    assert problems(TERRAFORM, schema=default_schema()) == []


def test_the_example_conforms_too() -> None:
    assert problems(TERRAFORM / "examples" / "gpu", schema=default_schema()) == []


def test_a_misspelt_argument_in_the_module_fails(tmp_path: Path) -> None:
    copy = tmp_path / "terraform"
    shutil.copytree(TERRAFORM, copy)
    service = copy / "service.tf"
    text = service.read_text()
    assert "gpu_zonal_redundancy_disabled " in text
    service.write_text(text.replace("gpu_zonal_redundancy_disabled ", "gpu_zonal_redundancy_disable "))
    found = problems(copy, schema=default_schema())
    assert len(found) == 1 and 'unknown argument "gpu_zonal_redundancy_disable"' in found[0]
    assert found[0].startswith("service.tf: google_cloud_run_v2_service.gpu: template")
