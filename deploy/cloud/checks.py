"""The release checks a deploy makes before it changes anything: credentials (gcloud's and the
application-default ones), project, notification channels, the weights bucket's region and the
working tree (preflight); the router's policy; the gateway's calibration file against the model the
image serves. A failed check is a ConfigError (or the WeightsError of missing application-default
credentials): refused, exit 2."""

from __future__ import annotations

import re
from pathlib import Path

from app.core.config import ConfigError
from deploy.cloud.config import ROOT, DeployConfig
from deploy.cloud.gcloud import Gcloud
from deploy.cloud.inputs import channel_projects
from deploy.cloud.shell import Shell
from deploy.runtime.weights import client_from_env

# Cloud Run regions with NVIDIA L4 (docs seen 2026-11); terraform/variables.tf validates the same list.
L4_REGIONS = ("europe-west1", "europe-west4", "us-east4", "us-central1", "asia-southeast1", "asia-south1")
# How the Dockerfile sets the model name the gateway serves (an `ENV` entry, `NAME=value`).
SERVED_MODEL = re.compile(r"DGEMMA_SERVED_MODEL=(\S+)")


def preflight(cfg: DeployConfig, shell: Shell, gcloud: Gcloud) -> tuple[str, str]:
    """Credentials, project, the weights bucket's region and the working tree (the inputs and tools:
    deploy/cloud/inputs.py, before this); (operator account, git SHA)."""
    token = gcloud.access_token()
    if token.code != 0:
        raise ConfigError(
            f"gcloud has no valid credentials: run `gcloud auth login` ({token.stderr.strip()[-300:]})"
        )
    # The weights' upload and checks, and Terraform, use the application-default credentials, not
    # gcloud's: the same client the weights step makes, made here, finds them missing before any apply.
    shell.call(
        "find the application-default credentials (Cloud Storage and Terraform use them)",
        lambda: client_from_env(cfg.project),
        None,
    )
    account = gcloud.account()
    project = gcloud.project_number()
    if project.code != 0:
        raise ConfigError(
            f"project {cfg.project!r} is not reachable with these credentials: "
            f"{project.stderr.strip()[-300:]}"
        )
    number = project.stdout.strip()
    for flag, channel, named in channel_projects(cfg):  # inputs.py has refused other project IDs
        if not shell.dry_run and named.isdigit() and named != number:
            raise ConfigError(
                f"{flag} {channel}: a channel of project number {named}, not of --project {cfg.project} "
                f"({number}): an alert policy notifies its own project's channels only"
            )
    # `--budget`'s billing role is not checked here: no gcloud command reads it. The budget may be
    # created with a role on the billing account, on its organization, or (a one-project budget)
    # on the project; only the Billing API's testIamPermissions would tell, and gcloud has no
    # command for it (`gcloud billing accounts` reads IAM policies, not effective permissions).
    bucket = gcloud.describe_bucket(
        cfg.weights_bucket, "location", reads="the weights bucket's location, if it exists"
    )
    location = bucket.stdout.strip()
    if not shell.dry_run and bucket.code == 0 and location and location.lower() != cfg.region:
        raise ConfigError(
            f"the weights bucket gs://{cfg.weights_bucket} is in {location}, not {cfg.region}: the service "
            "would read 15 GB across regions at every cold start; deploy to its region or delete it"
        )
    sha = shell.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], reads="the commit the image is built from"
    ).stdout.strip()
    dirty = shell.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"], reads="uncommitted changes"
    )
    if not shell.dry_run and dirty.stdout.strip() and not cfg.allow_dirty:
        raise ConfigError(
            "the working tree has uncommitted changes: the image would not be the commit it is tagged "
            "with (commit, or --allow-dirty)"
        )
    # A dry run's commit is a placeholder short enough to survive the tags' and the revision's cuts.
    return account, "<sha>" if shell.dry_run else sha[:12]


def served_model(dockerfile: str) -> str:
    """The model name a Dockerfile's text sets in `DGEMMA_SERVED_MODEL=`: the first such entry."""
    found = SERVED_MODEL.search(dockerfile)
    if found is None:
        raise ConfigError("the Dockerfile sets no DGEMMA_SERVED_MODEL")
    return found.group(1)


def image_served_model(dockerfile: Path = ROOT / "Dockerfile") -> str:
    """The model name the image serves: the Dockerfile the deploy builds sets it."""
    return served_model(dockerfile.read_text())


def check_calibration(cfg: DeployConfig) -> None:
    """The calibration file is one the deployed gateway will accept: fitted on the model name the
    image serves, under the default read policy (the module sets no other)."""
    if cfg.calibration is None:
        return
    from app.gateway.decisions.calibration_file import Calibration
    from app.jev.wire import ReadPolicy

    Calibration.load(cfg.calibration, served_model=image_served_model(), read_policy=ReadPolicy())


def check_alerts_policy(cfg: DeployConfig) -> None:
    """The router's policy loads (as the router will load it at start), and every sink key file it
    names under /secrets/sinks is one the deploy mounts."""
    if cfg.alerts_policy is None:
        return
    from app.alerts.policy import Policy

    policy = Policy.load(cfg.alerts_policy)  # a PolicyError is a ConfigError: refused, exit 2
    mounted = {f"/secrets/sinks/{name}/value" for name in cfg.alerts_sinks}  # terraform/alerts.tf
    for sink, sink_cfg in policy.sink_configs.items():
        for field_name, value in sink_cfg.model_dump().items():
            path = str(value) if field_name.endswith("_file") and value is not None else ""
            if path.startswith("/secrets/sinks/") and path not in mounted:
                raise ConfigError(
                    f"{cfg.alerts_policy}: sink {sink!r} reads {path}, which no declared sink secret "
                    f"mounts (declared: {', '.join(cfg.alerts_sinks) or 'none'})"
                )
