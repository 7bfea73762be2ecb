"""Every variable of the Terraform module is either set by `dgemma deploy` (`tfvars`) or left at the
module's default on purpose, with the reason (`FIXED`): a variable added to terraform/variables.tf
and forgotten by the deploy fails here."""

from __future__ import annotations

import pytest

from deploy.cloud.config import DeployConfig
from deploy.cloud.terraform import FIXED, tfvars
from tests.helpers.terraform import TERRAFORM, hcl

pytestmark = pytest.mark.unit

GOOD = ["--project", "my-gpu-project", "--region", "europe-west4"]


def _module_variables() -> set[str]:
    return {name for block in hcl(TERRAFORM / "variables.tf")["variable"] for name in block}


def _config(*flags: str) -> DeployConfig:
    from deploy.cli import build_parser
    from deploy.commands.deploy import config

    cfg = config(build_parser("deploy").parse_args(["deploy", *GOOD, *flags]))
    assert isinstance(cfg, DeployConfig)
    return cfg


def test_every_module_variable_is_set_by_the_deploy_or_fixed_with_a_reason() -> None:
    variables = _module_variables()
    produced = set(tfvars(_config(), "baked"))
    assert produced <= variables, f"tfvars sets what the module lacks: {produced - variables}"
    assert set(FIXED) <= variables, f"FIXED names what the module lacks: {set(FIXED) - variables}"
    assert not produced & set(FIXED), f"both set and fixed: {produced & set(FIXED)}"
    assert variables == produced | set(FIXED), (
        f"neither set by `dgemma deploy` nor in deploy/cloud/terraform.py FIXED: "
        f"{variables - produced - set(FIXED)}"
    )
    assert all(len(why) > 20 for why in FIXED.values())


def test_the_new_flags_reach_the_module() -> None:
    cfg = _config(
        "--label", "team=sre", "--label", "cost-center=42", "--cpu", "6", "--memory", "24Gi",
        "--zonal-redundancy", "--log-level", "DEBUG", "--router-min-instances", "0",
        "--billing-account", "012345-6789AB-CDEF01", "--budget", "300",
    )  # fmt: skip
    got = tfvars(cfg, "baked")
    assert got["labels"] == {"team": "sre", "cost-center": "42"}
    assert (got["cpu"], got["memory"], got["log_level"]) == ("6", "24Gi", "DEBUG")
    assert got["gpu_zonal_redundancy_disabled"] is False
    assert got["router_min_instance_count"] == 0
    assert (got["billing_account"], got["budget_amount"]) == ("012345-6789AB-CDEF01", 300)


def test_the_defaults_are_the_modules() -> None:
    """Flags not given leave each variable at the module's own default (no second default here)."""
    defaults = {
        name: body.get("default")
        for block in hcl(TERRAFORM / "variables.tf")["variable"]
        for name, body in block.items()
    }
    got = tfvars(_config(), "baked")
    names = ["labels", "cpu", "memory", "gpu_zonal_redundancy_disabled", "log_level"]
    names += ["router_min_instance_count", "billing_account", "budget_amount", "deadman_switch"]
    assert {n: got[n] for n in names} == {n: defaults[n] for n in names}
