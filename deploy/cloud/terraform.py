"""Terraform, run in a generated root module in the deploy's working directory (`main.tf.json`
calling ../terraform with `terraform.tfvars.json`, state in a GCS bucket of the project), so the
module itself stays reusable. Traffic is Terraform's: the rollout only sets `serving_revision` and
`candidate_revision` per phase."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from deploy.cloud.config import ROOT, SENDERS, DeployConfig
from deploy.cloud.shell import Result, Shell
from deploy.errors import DeployError

TERRAFORM_DIR = ROOT / "terraform"
# The module outputs the deploy reads back (terraform/outputs.tf).
OUTPUTS = (
    "service_url",
    "candidate_url",
    "latest_ready_revision",
    "weights_url",
    "weights_bucket",
    "build_source_bucket",
    "image_repository",
    "build_service_account",
    "api_keys_secret",
    "router_url",
    "alert_webhooks",
)
# The router's secrets, for a targeted apply (the generated root calls the module `dgemma`).
ROUTER_SECRETS = "module.dgemma.google_secret_manager_secret.alerts"
# The weights bucket: `dgemma destroy` forgets it so that it stays, and a later deploy imports it back
# (as it imports one made by hand); its import ID is `PROJECT/NAME` (the provider's documented form).
WEIGHTS_BUCKET = "module.dgemma.google_storage_bucket.weights"


def root_module(
    cfg: DeployConfig, variables: dict[str, Any], imports: dict[str, str] | None = None
) -> dict[str, Any]:
    """The generated root module: state in the project's bucket, the kit's module, its outputs, and an
    `import` block for each existing object the state may not hold yet (`imports`: address -> ID;
    Terraform skips one whose address the state already holds)."""
    blocks = {"import": [{"to": to, "id": id_} for to, id_ in imports.items()]} if imports else {}
    return {
        "terraform": {
            "backend": {"gcs": {"bucket": cfg.state_bucket, "prefix": f"dgemma/{cfg.service}"}},
        },
        "variable": {name: {} for name in variables},
        "module": {"dgemma": {"source": str(TERRAFORM_DIR), **{n: f"${{var.{n}}}" for n in variables}}},
        "output": {name: {"value": f"${{module.dgemma.{name}}}"} for name in OUTPUTS},
        **blocks,
    }


def tfvars(
    cfg: DeployConfig,
    mode: str,
    *,
    image: str = "",
    router_image: str = "",
    revision_suffix: str = "",
    serving: str = "",
    candidate: str = "",
    invokers: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The module's variables for one phase; the engine knobs come from the same settings the
    supervisor's fit profile reads."""
    return {
        "project_id": cfg.project,
        "region": cfg.region,
        "service_name": cfg.service,
        "image": image,
        "router_image": router_image,
        "alerts_policy": cfg.alerts_policy.read_text() if cfg.alerts_policy else "",
        "alerts_sink_secrets": list(cfg.alerts_sinks),
        "alerts_mode": cfg.alerts_mode or "shadow",
        "calibration": cfg.calibration.read_text() if cfg.calibration else "",
        "revision_suffix": revision_suffix,
        "serving_revision": serving,
        "candidate_revision": candidate,
        "max_instance_count": cfg.max_instances,
        "l4_gpu_quota": cfg.l4_quota,
        "engine_max_num_seqs": cfg.engine.engine_max_num_seqs,
        "engine_canvas": cfg.engine.engine_canvas,
        "engine_prompt_tokens": cfg.engine.engine_prompt_tokens,
        "cold_start_budget_s": cfg.cold_start_budget_s,
        "weights_mode": mode,
        "weights_prefix": cfg.weights_prefix,
        "invokers": list(invokers),
        "deletion_protection": True,
    }


def revision_suffix(sha: str, variables: dict[str, Any]) -> str:
    """Git SHA and a hash of everything else the revision runs (image digest, settings), so any change
    makes a new revision and no change makes none."""
    relevant = {
        k: v
        for k, v in variables.items()
        if k not in ("serving_revision", "candidate_revision", "revision_suffix")
    }
    digest = hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()[:8]
    return f"{sha[:7]}-{digest}"


class Terraform:
    def __init__(self, cfg: DeployConfig, shell: Shell) -> None:
        self.cfg = cfg
        self.shell = shell
        self.dir = cfg.directory
        self.env = ["env", "TF_IN_AUTOMATION=1", "TF_INPUT=0"]

    def run(self, *args: str, reads: str = "", check: bool = True) -> Result:
        return self.shell.run([*self.env, "terraform", f"-chdir={self.dir}", *args], reads=reads, check=check)

    def write_root(self, variables: dict[str, Any], imports: dict[str, str] | None = None) -> None:
        root = root_module(self.cfg, variables, imports)
        self.shell.write(self.dir / "main.tf.json", json.dumps(root, indent=2) + "\n")

    def init(self, variables: dict[str, Any], imports: dict[str, str] | None = None) -> None:
        self.write_root(variables, imports)
        self.run("init", "-input=false", "-no-color", "-upgrade")

    def apply(self, variables: dict[str, Any], why: str, *, targets: tuple[str, ...] = ()) -> None:
        """Write the phase's variables (the file the user can read) and apply them (only `targets`,
        when given)."""
        path = self.dir / "terraform.tfvars.json"
        self.shell.write(path, json.dumps(variables, indent=2) + "\n")
        self.shell.note(f"terraform apply: {why}")
        chosen = [f"-target={t}" for t in targets]
        self.run("apply", "-input=false", "-no-color", "-auto-approve", *chosen, f"-var-file={path}")

    def outputs(self) -> dict[str, Any]:
        """The module's outputs; in a dry run, placeholders of the same shape."""
        out = self.run("output", "-json", "-no-color", reads="the module's outputs").stdout
        if self.shell.dry_run:
            placeholders: dict[str, Any] = {name: f"<{name}>" for name in OUTPUTS}
            placeholders["alert_webhooks"] = {s: f"<alert_webhooks.{s}>" for s in SENDERS}
            return placeholders
        try:
            return {name: value["value"] for name, value in json.loads(out).items()}
        except (ValueError, KeyError, TypeError) as e:
            raise DeployError(f"`terraform output -json` gave no outputs: {out[:300]}") from e
