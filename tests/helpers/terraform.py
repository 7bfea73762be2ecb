"""Test code of the Terraform module: parsed files, and the real CLI on what needs no provider."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

TERRAFORM = Path(__file__).resolve().parents[2] / "terraform"


TERRAFORM_ENV = {"TF_CLI_CONFIG_FILE": "/dev/null", "TF_IN_AUTOMATION": "1", "TF_INPUT": "0"}


def hcl(path: Path) -> dict[str, Any]:
    """A .tf file as python-hcl2 reads it: quotes stripped, blocks as lists of dicts."""
    import hcl2
    from hcl2 import SerializationOptions

    opts = SerializationOptions(strip_string_quotes=True, explicit_blocks=False, with_comments=False)
    with path.open() as f:
        parsed: dict[str, Any] = hcl2.load(f, serialization_options=opts)
    return parsed


def terraform_eval(
    workdir: Path, expressions: dict[str, str], variables: dict[str, Any]
) -> dict[str, Any] | str:
    """Evaluate expressions with the real `terraform` CLI, offline: the module's variables (their
    validation blocks included) and its provider-free locals are copied into `workdir`, which then needs
    no provider. The values by name, or Terraform's error text when a validation refuses the variables.
    The copy sits in `workdir`/terraform, beside a link to the checkout's monitoring/ (the module reads
    its dashboards and alerts there)."""
    monitoring = workdir / "monitoring"
    if not monitoring.exists():
        monitoring.symlink_to(TERRAFORM.parent / "monitoring", target_is_directory=True)
    workdir = workdir / "terraform"
    workdir.mkdir(exist_ok=True)
    (workdir / "variables.tf").write_text((TERRAFORM / "variables.tf").read_text())
    locals_block = re.search(r"^locals \{.*?^\}", (TERRAFORM / "main.tf").read_text(), re.S | re.M)
    assert locals_block, "terraform/main.tf has no locals block"
    outputs = "".join(f'output "{name}" {{\n  value = {expr}\n}}\n' for name, expr in expressions.items())
    (workdir / "main.tf").write_text(locals_block.group(0) + "\n" + outputs)
    (workdir / "terraform.tfvars.json").write_text(json.dumps(variables))

    def tf(*args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, **TERRAFORM_ENV}
        return subprocess.run(["terraform", *args], cwd=workdir, env=env, capture_output=True, text=True)

    assert tf("init", "-no-color").returncode == 0
    applied = tf("apply", "-no-color", "-auto-approve")
    if applied.returncode != 0:
        return applied.stderr
    return {name: o["value"] for name, o in json.loads(tf("output", "-json").stdout).items()}
