"""Terraform, run in a generated root module in the deploy's working directory (`main.tf.json`
calling ../terraform with `terraform.tfvars.json`, state in a GCS bucket of the project), so the
module itself stays reusable. Traffic is Terraform's: the rollout only sets `serving_revision` and
`candidate_revision` per phase."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from deploy.cloud.config import ROOT, SENDERS, DeployConfig
from deploy.cloud.shell import Result, Shell
from deploy.cloud.variables import NOT_IN_REVISION, module_values
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
# The module's variables `tfvars` leaves at the module's default, on purpose, and why (a root module
# of your own sets them). tests/deploy/cloud/test_module_variables.py holds every variable to one or
# the other.
FIXED = {
    "engine_timeout_s": "the gateway's own default (120 s), so the cloud answers as `make dev` does",
    "gcs_fuse_mount_options": "tuned for the checkpoint's large immutable files (gcs_fuse mode)",
    "compile_cache_days": "housekeeping: an expired cache costs one compile at the next cold start",
    "image_retention_count": "10 images: rollback room, well above the 2 a rollout needs",
    "router_cpu": "the router waits on I/O: 1 vCPU takes 80 deliveries at once",
    "router_memory": "512Mi, the least Cloud Run gives, holds the router",
    "router_max_instance_count": "3: an alert storm and a rollout's overlap (the ledger keeps one page each)",
    "alerts_ledger_days": "30 days: an alert firing longer pages again once, a reminder",
    "alerts_decision_budget_s": "5 s, inside Alertmanager's shortest 10 s notification deadline",
    "metrics_collector_image": "Google's Prometheus collector for Cloud Run, pinned in the module",
    "alerts_pending_alert_minutes": "15 min, as monitoring/prometheus's DgemmaAlertsClassificationsWaiting",
}
# The GPU service and who may call it: a candidate is applied to these alone (with what they depend
# on), so the alert router, which pages people, changes only once the gate has passed.
GPU_SERVICE = "module.dgemma.google_cloud_run_v2_service.gpu"
GPU_INVOKERS = "module.dgemma.google_cloud_run_v2_service_iam_member.invokers"


def router_variable(name: str) -> bool:
    """Whether a module variable shapes the alert router (its image, policy, mode, sinks, sizing)."""
    return name.startswith(("router_", "alerts_"))


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
    """The module's variables for one phase: the settings' from `cfg` (deploy/cloud/variables.py),
    then what the rollout decides (the resolved weights mode, images, revisions, invokers)."""
    return {
        "project_id": cfg.project,
        "region": cfg.region,
        "service_name": cfg.service,
        **module_values(cfg),
        "image": image,
        "router_image": router_image,
        "revision_suffix": revision_suffix,
        "serving_revision": serving,
        "candidate_revision": candidate,
        "weights_mode": mode,
        "invokers": list(invokers),
        "deletion_protection": True,
    }


_BLOCK = re.compile(r'^(resource|data) "(\w+)" "(\w+)" \{', re.M)
_CONTAINER = re.compile(r'^\s+containers \{\s*\n\s+name\s+=\s+"([^"]+)"', re.M)


def module_resources() -> list[tuple[str, str, list[str]]]:
    """What the module may make, read from its files: (file, TYPE.NAME, a service's containers).
    A dry run shows it: the deploy's applies are of this module."""
    found = []
    for path in sorted(TERRAFORM_DIR.glob("*.tf")):
        text = path.read_text()
        blocks = list(_BLOCK.finditer(text))
        ends = [b.start() for b in blocks[1:]] + [len(text)]
        for block, end in zip(blocks, ends[: len(blocks)], strict=True):
            if block.group(1) == "resource":
                body = text[block.end() : end]
                found.append((path.name, f"{block.group(2)}.{block.group(3)}", _CONTAINER.findall(body)))
    return found


def revision_suffix(sha: str, variables: dict[str, Any]) -> str:
    """Git SHA and a hash of everything else the GPU revision runs (image digest, its settings), so
    any change to it makes a new revision and none makes none: the router's, monitoring's and the
    project's settings are not in its template (deploy/cloud/variables.py, `touches`)."""
    relevant = {
        k: v
        for k, v in variables.items()
        if k not in ("serving_revision", "candidate_revision", "revision_suffix", "router_image")
        and k not in NOT_IN_REVISION
    }
    if sha.startswith("<"):  # a dry run: the image's digest is a placeholder, so is the hash of it
        return f"{sha}-<digest>"
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
        # No `-upgrade`: the workdir's first init writes .terraform.lock.hcl, which then keeps that
        # provider version (the newest in terraform/versions.tf's range, then) between deploys; delete
        # it to take a newer one. The kit commits no lock file: its hashes are the provider packages'
        # own, and the packages cannot be fetched here to compute them (no registry offline).
        self.run("init", "-input=false", "-no-color")

    def _variables(self, variables: dict[str, Any], note: str) -> Path:
        """The variables file a command reads (the one the user can read too), and why it runs."""
        path = self.dir / "terraform.tfvars.json"
        self.shell.write(path, json.dumps(variables, indent=2) + "\n")
        self.shell.note(note)
        return path

    def apply(self, variables: dict[str, Any], why: str, *, targets: tuple[str, ...] = ()) -> None:
        """Write the phase's variables (the file the user can read) and apply them (only `targets`,
        when given)."""
        path = self._variables(variables, f"terraform apply: {why}")
        chosen = [f"-target={t}" for t in targets]
        self.run("apply", "-input=false", "-no-color", "-auto-approve", *chosen, f"-var-file={path}")

    def plan(self, variables: dict[str, Any], why: str) -> str:
        """Terraform's plan for these variables, changing nothing (its text, also printed)."""
        path = self._variables(variables, f"terraform plan: {why}")
        return self.run("plan", "-input=false", "-no-color", f"-var-file={path}", reads="the plan").stdout

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
