"""`dgemma deploy` and `dgemma destroy`: Terraform lays out the project and the service, Cloud Build
makes the images (the GPU service's and the alert router's), a new revision waits at 0 % of the
traffic under the tag `candidate` until the load-test gate has passed, and only then does the traffic
move; then the alert router must answer its readiness check.

Every external step is a command (gcloud, terraform, git) run through `Shell`, which logs it, or
with `--dry-run` prints it and runs nothing. Terraform runs in a generated root module in the
working directory (`main.tf.json` calling ../terraform with `terraform.tfvars.json`, state in a GCS
bucket of the project), so the module itself stays reusable. Traffic is Terraform's: this module
only sets `serving_revision` and `candidate_revision` per phase.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import secrets
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from app.core.config import ConfigError
from app.core.identity import audience_of
from app.core.polling import wait_until
from deploy.cloud.auth import id_tokens
from deploy.cloud.host_budget import (
    check_host_fits,
    checkpoint_bytes,
    default_weights_mode,
    host_budget,
)
from deploy.errors import DeployError, WeightsError
from deploy.runtime.gpu_budget import fit
from deploy.runtime.settings import WEIGHTS_MODES, EngineSettings
from deploy.runtime.weights import (
    Manifest,
    build_manifest,
    client_from_env,
    same_files,
    upload,
    verify_remote,
)

ROOT = Path(__file__).resolve().parents[2]  # the checkout: terraform/, cloudbuild.yaml, Dockerfile
TERRAFORM_DIR = ROOT / "terraform"
# Cloud Run regions with NVIDIA L4 (docs seen 2026-11); terraform/variables.tf validates the same list.
L4_REGIONS = ("europe-west1", "europe-west4", "us-east4", "us-central1", "asia-southeast1", "asia-south1")
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
# The alert router's webhook sources; each sender's token is the latest version of its own secret.
SENDERS = ("alertmanager", "grafana", "cloud-monitoring")
# The router's secrets, for a targeted apply (the generated root calls the module `dgemma`).
ROUTER_SECRETS = "module.dgemma.google_secret_manager_secret.alerts"
ROUTER_READY_S = 120.0  # one always-on CPU instance, started by the apply: ready in seconds
SMOKE_QUESTION = {"page": {"type": "noul", "instructions": "Should on-call be paged?"}}


@dataclass(frozen=True)
class DeployConfig:
    """What `dgemma deploy` was asked for (flags), with the engine settings it sizes from."""

    project: str
    region: str
    service: str = "dgemma"
    checkpoint: Path | None = None
    weights_prefix: str = "dgemma-w4a16"
    weights_mode: str = "auto"
    invokers: tuple[str, ...] = ()
    max_instances: int = 1
    l4_quota: int = 3
    cold_start_budget_s: int = 900
    profile: str = "l4"
    targets: tuple[str, ...] = ()
    latency_seconds: int | None = None
    throughput_seconds: int | None = None
    warmup_seconds: float = 900
    id_token: str = "auto"
    alerts_policy: Path | None = None  # the router's policy file; none: the image's default policy
    alerts_sinks: tuple[str, ...] = ()  # names of the sinks' secrets (alerts_sink_secrets)
    calibration: Path | None = None  # the gateway's calibration file; none: raw probabilities
    allow_dirty: bool = False
    dry_run: bool = False
    workdir: Path | None = None
    engine: EngineSettings = field(default_factory=EngineSettings)

    @property
    def directory(self) -> Path:
        return (
            self.workdir or ROOT / ".build" / "deploy" / f"{self.project}-{self.region}-{self.service}"
        ).resolve()

    @property
    def state_bucket(self) -> str:
        return f"{self.project}-{self.service}-tfstate"

    @property
    def weights_bucket(self) -> str:
        return f"{self.project}-{self.service}-weights"  # as terraform/main.tf names it

    @property
    def router(self) -> str:
        return f"{self.service}-router"  # the router's Cloud Run service (terraform/alerts.tf)

    def sender_secret(self, source: str) -> str:
        return f"{self.service}-alerts-{source}-token"  # as terraform/main.tf names it

    def sink_secret(self, name: str) -> str:
        return f"{self.service}-alerts-sink-{name}"  # as terraform/main.tf names it


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str = ""


class Shell:
    """Runs the deploy's commands (their output goes to `deploy.log`), or prints them in a dry run."""

    def __init__(self, console: Console, directory: Path, *, dry_run: bool) -> None:
        self.console = console
        self.dry_run = dry_run
        self.directory = directory
        self.commands: list[list[str]] = []  # everything run or printed, in order

    def run(
        self,
        argv: list[str],
        *,
        reads: str = "",
        stdin: str | None = None,
        check: bool = True,
        cwd: Path | None = None,
    ) -> Result:
        """Run `argv`; `reads` names what its output is used for (shown as a placeholder in a dry run)."""
        self.commands.append(argv)
        if self.dry_run:
            self.console.print(
                f"$ {shlex.join(argv)}" + (f"   # reads {reads}" if reads else ""), markup=False
            )
            return Result(0, f"<{reads}>" if reads else "")
        started = time.monotonic()
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, cwd=cwd)
        with (self.directory / "deploy.log").open("a") as log:
            log.write(
                f"$ {shlex.join(argv)}   # exit {done.returncode} in {time.monotonic() - started:.1f} s\n"
            )
            log.write(done.stdout[-20000:] + done.stderr[-20000:] + "\n")
        if check and done.returncode != 0:
            command = [a for a in argv if "=" not in a or a.startswith("-")][:4]  # without `env X=1`
            raise DeployError(
                f"`{shlex.join(command)} ...` failed (exit {done.returncode}): {done.stderr.strip()[-1500:]}"
            )
        return Result(done.returncode, done.stdout, done.stderr)

    def write(self, path: Path, text: str) -> None:
        if self.dry_run:
            self.console.print(f"--- {path}", markup=False)
            self.console.print(text, markup=False)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def note(self, text: str) -> None:
        """A step that is not a command (a GCS upload, an HTTP call), said in a dry run."""
        if self.dry_run:
            self.console.print(f"# {text}", markup=False)


# -- Terraform --------------------------------------------------------------------------------------


def root_module(cfg: DeployConfig, variables: dict[str, Any]) -> dict[str, Any]:
    """The generated root module: state in the project's bucket, the kit's module, its outputs."""
    return {
        "terraform": {
            "backend": {"gcs": {"bucket": cfg.state_bucket, "prefix": f"dgemma/{cfg.service}"}},
        },
        "variable": {name: {} for name in variables},
        "module": {"dgemma": {"source": str(TERRAFORM_DIR), **{n: f"${{var.{n}}}" for n in variables}}},
        "output": {name: {"value": f"${{module.dgemma.{name}}}"} for name in OUTPUTS},
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


class Terraform:
    def __init__(self, cfg: DeployConfig, shell: Shell) -> None:
        self.cfg = cfg
        self.shell = shell
        self.dir = cfg.directory
        self.env = ["env", "TF_IN_AUTOMATION=1", "TF_INPUT=0"]

    def run(self, *args: str, reads: str = "", check: bool = True) -> Result:
        return self.shell.run([*self.env, "terraform", f"-chdir={self.dir}", *args], reads=reads, check=check)

    def init(self, variables: dict[str, Any]) -> None:
        self.shell.write(
            self.dir / "main.tf.json", json.dumps(root_module(self.cfg, variables), indent=2) + "\n"
        )
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
        out = self.run("output", "-json", "-no-color", reads="the module's outputs").stdout
        if self.shell.dry_run:
            return {name: f"<{name}>" for name in OUTPUTS}
        try:
            return {name: value["value"] for name, value in json.loads(out).items()}
        except (ValueError, KeyError, TypeError) as e:
            raise DeployError(f"`terraform output -json` gave no outputs: {out[:300]}") from e


# -- gcloud -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Live:
    """The service as it runs now."""

    serving: str  # the revision with 100 % of the traffic
    image: str


def describe_service(cfg: DeployConfig, shell: Shell, name: str = "") -> Live | None:
    """The running service (the GPU one unless `name` says), or None when there is none yet."""
    argv = [
        "gcloud",
        "run",
        "services",
        "describe",
        name or cfg.service,
        f"--project={cfg.project}",
        f"--region={cfg.region}",
        "--format=json",
    ]
    done = shell.run(argv, reads="the serving revision and image", check=False)
    if shell.dry_run:
        return Live(serving="<serving revision>", image="<current image>")
    if done.code != 0:
        if "could not be found" in done.stderr or "Cannot find service" in done.stderr:
            return None
        raise DeployError(f"`gcloud run services describe` failed: {done.stderr.strip()[-1000:]}")
    data = json.loads(done.stdout)
    traffic = data.get("status", {}).get("traffic", [])
    serving = next((t.get("revisionName", "") for t in traffic if t.get("percent") == 100), "")
    image = (
        data.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [{}])[0].get("image", "")
    )
    return Live(serving=serving, image=image)


def preflight(cfg: DeployConfig, shell: Shell) -> tuple[str, str]:
    """Tools, credentials, project, region and the working tree; (operator account, git SHA)."""
    for tool in ("gcloud", "terraform", "git"):
        if shutil.which(tool) is None:
            raise ConfigError(f"`{tool}` is not on PATH: install it (README, Deploy: prerequisites)")
    if cfg.region not in L4_REGIONS:
        raise ConfigError(
            f"region {cfg.region!r} has no Cloud Run L4 GPUs; choose one of {', '.join(L4_REGIONS)}"
        )
    token = shell.run(
        ["gcloud", "auth", "print-access-token", "--quiet"], reads="proof of valid credentials", check=False
    )
    if token.code != 0:
        raise ConfigError(
            f"gcloud has no valid credentials: run `gcloud auth login` ({token.stderr.strip()[-300:]})"
        )
    account = shell.run(
        ["gcloud", "config", "get-value", "account", "--quiet"], reads="the operator's account"
    ).stdout.strip()
    project = shell.run(
        ["gcloud", "projects", "describe", cfg.project, "--format=value(projectNumber)"],
        reads="the project number",
        check=False,
    )
    if project.code != 0:
        raise ConfigError(
            f"project {cfg.project!r} is not reachable with these credentials: "
            f"{project.stderr.strip()[-300:]}"
        )
    bucket = shell.run(
        [
            "gcloud",
            "storage",
            "buckets",
            "describe",
            f"gs://{cfg.weights_bucket}",
            f"--project={cfg.project}",
            "--format=value(location)",
        ],
        reads="the weights bucket's location, if it exists",
        check=False,
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
    return account, sha[:12]


def ensure_state_bucket(cfg: DeployConfig, shell: Shell) -> None:
    bucket = f"gs://{cfg.state_bucket}"
    found = shell.run(
        [
            "gcloud",
            "storage",
            "buckets",
            "describe",
            bucket,
            f"--project={cfg.project}",
            "--format=value(name)",
        ],
        reads="whether the state bucket exists",
        check=False,
    )
    if found.code == 0 and not shell.dry_run:
        return
    shell.run(
        [
            "gcloud",
            "storage",
            "buckets",
            "create",
            bucket,
            f"--project={cfg.project}",
            f"--location={cfg.region}",
            "--uniform-bucket-level-access",
            "--public-access-prevention",
        ]
    )
    shell.run(["gcloud", "storage", "buckets", "update", bucket, "--versioning"])


def access_latest(cfg: DeployConfig, secret: str) -> list[str]:
    """The gcloud command that prints the secret's latest version."""
    return [
        "gcloud",
        "secrets",
        "versions",
        "access",
        "latest",
        f"--secret={secret}",
        f"--project={cfg.project}",
    ]


def add_version(cfg: DeployConfig, shell: Shell, secret: str, value: str) -> None:
    """A new version of `secret` holding `value`, passed on stdin (never in argv or the state)."""
    shell.run(
        ["gcloud", "secrets", "versions", "add", secret, f"--project={cfg.project}", "--data-file=-"],
        stdin=value,
    )


def read_keys(cfg: DeployConfig, shell: Shell, secret: str) -> list[str]:
    """The keys in the secret's latest version, one per line (none when it has no version)."""
    argv = access_latest(cfg, secret)
    done = shell.run(argv, reads="the API keys", check=False)
    return [line.strip() for line in done.stdout.splitlines() if line.strip()] if done.code == 0 else []


def api_key(cfg: DeployConfig, shell: Shell, secret: str) -> str:
    """The key the smoke call and the gate use: the secret's, or a new one on the first deploy
    (added as the secret's first version, never through Terraform, and saved 0600 beside the state)."""
    if secret_has_version(cfg, shell, secret) and not shell.dry_run:
        keys = read_keys(cfg, shell, secret)
        if not keys:
            raise DeployError(f"the latest version of secret {secret} holds no key")
        return keys[0]
    key = secrets.token_urlsafe(32)
    add_version(cfg, shell, secret, key + "\n")
    if not shell.dry_run:
        path = cfg.directory / "api-key"
        path.write_text(key + "\n")
        path.chmod(0o600)
        shell.console.print(f"a first API key was added to {secret}; a copy is in {path} (mode 0600)")
    return key


def secret_has_version(cfg: DeployConfig, shell: Shell, secret: str) -> bool | None:
    """Whether the secret has a version; None when the secret does not exist (yet). In a dry run,
    False: the plan shows what a first deploy would add."""
    argv = [
        "gcloud",
        "secrets",
        "versions",
        "list",
        secret,
        f"--project={cfg.project}",
        "--limit=1",
        "--format=value(name)",
    ]
    done = shell.run(argv, reads=f"whether {secret} has a version", check=False)
    if shell.dry_run:
        return False
    if done.code != 0:
        if "NOT_FOUND" in done.stderr:
            return None
        raise DeployError(f"`gcloud secrets versions list {secret}` failed: {done.stderr.strip()[-500:]}")
    return bool(done.stdout.strip())


def ensure_router_secrets(cfg: DeployConfig, shell: Shell, tf: Terraform, variables: dict[str, Any]) -> None:
    """Every secret the router's revision reads has a version before the revision exists, because
    Cloud Run refuses to deploy one that reads a secret without: each sender's secret gets a random
    token as its first version (never through Terraform, never printed; read it with gcloud); a sink
    secret without a value stops the deploy with the command that adds it. A deployment from before
    the router lacks the secrets themselves: a targeted apply creates them first."""
    senders = [cfg.sender_secret(s) for s in SENDERS]
    sinks = [cfg.sink_secret(n) for n in cfg.alerts_sinks]
    has = {secret: secret_has_version(cfg, shell, secret) for secret in [*senders, *sinks]}
    if None in has.values():
        tf.apply(variables, "the alert router's secrets, which do not exist yet", targets=(ROUTER_SECRETS,))
        has = {secret: secret_has_version(cfg, shell, secret) for secret in has}
    for secret in senders:
        if not has[secret]:
            add_version(cfg, shell, secret, secrets.token_urlsafe(32))
    empty = [secret for secret in sinks if not has[secret]]
    if empty and not shell.dry_run:
        adds = "; ".join(
            f"printf %s VALUE | gcloud secrets versions add {s} --project={cfg.project} --data-file=-"
            for s in empty
        )
        raise ConfigError(
            f"the alert router's sink secrets have no value: {', '.join(empty)}. Add each ({adds}), "
            "then run the deploy again"
        )


def check_calibration(cfg: DeployConfig) -> None:
    """The calibration file is one the deployed gateway will accept: fitted on the model name the
    image serves, under the default read policy (the module sets no other). ConfigError: exit 2."""
    if cfg.calibration is None:
        return
    from app.gateway.decisions.calibration_file import Calibration
    from app.jev.wire import ReadPolicy

    Calibration.load(cfg.calibration, served_model=image_served_model(), read_policy=ReadPolicy())


def image_served_model() -> str:
    """The model name the image serves: the Dockerfile the deploy builds sets it."""
    found = re.search(r"DGEMMA_SERVED_MODEL=(\S+)", (ROOT / "Dockerfile").read_text())
    if found is None:
        raise ConfigError("the Dockerfile sets no DGEMMA_SERVED_MODEL")
    return found.group(1)


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


# -- weights and images -----------------------------------------------------------------------------


def ensure_weights(cfg: DeployConfig, shell: Shell, url: str) -> Manifest | None:
    """Upload the checkpoint when the bucket's manifest differs; then the bucket's objects must
    match their manifest (by Cloud Storage's own checksums). The manifest, or None in a dry run."""
    if shell.dry_run:
        shell.note(
            f"upload {cfg.checkpoint} to {url} if its manifest differs; verify {url} by MD5/CRC32C"
            if cfg.checkpoint
            else f"verify {url} against its manifest by MD5/CRC32C"
        )
        return None
    from deploy.runtime.weights import fetch_manifest

    client = client_from_env(cfg.project)
    try:
        manifest: Manifest | None = fetch_manifest(url, client)
    except WeightsError:
        if cfg.checkpoint is None:
            raise
        manifest = None
    if cfg.checkpoint is not None:
        local = build_manifest(cfg.checkpoint)
        if manifest is None or not same_files(local, manifest):
            shell.console.print(f"uploading {cfg.checkpoint} to {url} ({local.total_bytes / 1e9:.1f} GB)")
            manifest = upload(cfg.checkpoint, url, client, manifest=local)
    problems = verify_remote(url, client, manifest=manifest)
    if problems:
        raise ConfigError(f"refusing to deploy without verified weights at {url}: " + "; ".join(problems[:5]))
    return manifest


def choose_mode(cfg: DeployConfig, manifest: Manifest | None) -> str:
    """The asked-for weights mode if its instance-memory budget fits, or the fastest that does."""
    if manifest is not None:
        total, largest = manifest.total_bytes, max(e.size for e in manifest.files)
    else:  # a dry run: the checkpoint the settings describe
        total, largest = checkpoint_bytes(fit(cfg.engine))
    if cfg.weights_mode == "auto":
        return default_weights_mode(total, largest)
    if cfg.weights_mode not in WEIGHTS_MODES:
        raise ConfigError(
            f"--weights-mode {cfg.weights_mode!r}: expected auto or one of {', '.join(WEIGHTS_MODES)}"
        )
    check_host_fits(host_budget(cfg.weights_mode, total, largest))
    return cfg.weights_mode


def ensure_images(
    cfg: DeployConfig, shell: Shell, outputs: dict[str, Any], sha: str, weights: str | None
) -> tuple[str, str]:
    """The GPU service's and the router's images by digest, tagged by git SHA (the GPU one, when
    baked, also by the checkpoint's manifest), built together by one Cloud Build only when a tag
    does not exist yet."""
    repository = outputs["image_repository"]
    tag = f"{repository}/{cfg.service}:{sha}" + (f"-w{weights}" if weights else "")
    router_tag = f"{repository}/{cfg.router}:{sha}"

    def describe(image: str) -> list[str]:
        return [
            "gcloud",
            "artifacts",
            "docker",
            "images",
            "describe",
            image,
            f"--project={cfg.project}",
            "--format=value(image_summary.digest)",
        ]

    found = [
        shell.run(describe(t), reads="the tag's digest, if it was built before", check=False)
        for t in (tag, router_tag)
    ]
    if any(f.code != 0 for f in found) or shell.dry_run:
        weights_url = outputs["weights_url"] if weights else ""
        substitutions = f"_IMAGE={tag},_ROUTER_IMAGE={router_tag},_WEIGHTS_URL={weights_url}"
        shell.run(
            [
                "gcloud",
                "builds",
                "submit",
                str(ROOT),
                f"--project={cfg.project}",
                f"--region={cfg.region}",
                f"--config={ROOT / 'cloudbuild.yaml'}",
                f"--substitutions={substitutions}",
                f"--service-account=projects/{cfg.project}/serviceAccounts/{outputs['build_service_account']}",
                f"--gcs-source-staging-dir=gs://{outputs['build_source_bucket']}/source",
                "--quiet",
            ]
        )
        found = [shell.run(describe(t), reads="the new image's digest") for t in (tag, router_tag)]
    by_digest = []
    for image, done in zip((tag, router_tag), found, strict=True):
        digest = done.stdout.strip()
        if not shell.dry_run and not digest.startswith("sha256:"):
            raise DeployError(f"no digest for {image}: {digest[:100]!r}")
        by_digest.append(f"{image.rsplit(':', 1)[0]}@{digest}")
    return by_digest[0], by_digest[1]


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


# -- the service ------------------------------------------------------------------------------------


def wait_ready(url: str, headers: Callable[[], dict[str, str]], timeout_s: float) -> float:
    """Seconds until the revision answers /readyz (a scaled-to-zero revision starts here)."""
    start = time.monotonic()

    def ready() -> bool:
        return httpx.get(f"{url}/readyz", headers=headers(), timeout=30).status_code == 200

    if not wait_until(ready, timeout_s, interval_s=2.0, errors=(httpx.HTTPError,)):
        raise DeployError(f"{url} was not ready within {timeout_s:.0f} s")
    return time.monotonic() - start


def smoke(url: str, headers: dict[str, str]) -> None:
    """One decision, validated like the gate's."""
    from loadtest.validate import problem

    body = {"model": "jev-latest", "state": "Disk usage at 97% on db-1", "questions": SMOKE_QUESTION}
    r = httpx.post(f"{url}/v1/systemone", json=body, headers=headers, timeout=120)
    why = (
        problem(r.json(), SMOKE_QUESTION) if r.status_code == 200 else f"HTTP {r.status_code}: {r.text[:200]}"
    )
    if why:
        raise DeployError(f"the smoke decision against {url} failed: {why}")


def reveal_token(cfg: DeployConfig, source: str) -> list[str]:
    """The command that prints a sender's token (for the sender's own configuration)."""
    return access_latest(cfg, cfg.sender_secret(source))


def router_ready(cfg: DeployConfig, console: Console, outputs: dict[str, Any], revision: str) -> None:
    """The router answers /readyz (it is public: no credentials); then where each sender posts and
    how to read its token."""
    url = str(outputs["router_url"])
    try:
        wait_ready(url, lambda: {}, min(cfg.warmup_seconds, ROUTER_READY_S))
    except DeployError as e:
        raise DeployError(f"the alert router is not ready: {e} ({revision} serves: the gate passed)") from e
    webhooks = outputs["alert_webhooks"]
    console.print(f"alert router ready: {url}")
    for source in SENDERS:
        append = " (append the token)" if source == "cloud-monitoring" else ""
        console.print(f"  {source}: {webhooks[source]}{append}", markup=False, soft_wrap=True)
        console.print(f"    token: {shlex.join(reveal_token(cfg, source))}", markup=False, soft_wrap=True)


# -- the whole deploy -------------------------------------------------------------------------------


@contextlib.contextmanager
def step(progress: Progress | None, text: str) -> Iterator[None]:
    """A line on the progress display (step, elapsed time), ticked off when done."""
    if progress is None:
        yield
        return
    task = progress.add_task(text, total=1)
    yield
    progress.update(task, completed=1)


def deploy(cfg: DeployConfig, console: Console) -> int:
    """The whole deploy; 0 when the new revision serves (or nothing changed), 1 when the gate kept
    the traffic where it was."""
    from loadtest.gate import Profile
    from loadtest.gate import run as gate

    cfg.directory.mkdir(parents=True, exist_ok=True)
    shell = Shell(console, cfg.directory, dry_run=cfg.dry_run)
    profile = Profile.load(cfg.profile).overridden(
        list(cfg.targets), cfg.latency_seconds, cfg.throughput_seconds
    )
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with contextlib.ExitStack() as stack:
        progress = None if cfg.dry_run else stack.enter_context(Progress(*columns, console=console))
        with step(progress, "preflight: tools, credentials, project, region, working tree"):
            account, sha = preflight(cfg, shell)
            check_alerts_policy(cfg)
            check_calibration(cfg)
        operator = (
            f"serviceAccount:{account}" if account.endswith("gserviceaccount.com") else f"user:{account}"
        )
        invokers = (
            tuple(dict.fromkeys((*cfg.invokers, operator))) if account and not cfg.dry_run else cfg.invokers
        )
        tf = Terraform(cfg, shell)
        with step(progress, f"terraform init (state in gs://{cfg.state_bucket})"):
            ensure_state_bucket(cfg, shell)
            tf.init(tfvars(cfg, "baked"))
        live = describe_service(cfg, shell)
        url = f"gs://{cfg.weights_bucket}/{cfg.weights_prefix}"
        with step(progress, "weights: upload if the manifest differs, verify in the bucket"):
            if live is None or cfg.dry_run:
                tf.apply(
                    tfvars(cfg, "baked", invokers=invokers),
                    "the infrastructure (APIs, repository, buckets, identities, secret)",
                )
            manifest = ensure_weights(cfg, shell, url)
            mode = choose_mode(cfg, manifest)
        outputs = tf.outputs()
        key = api_key(cfg, shell, str(outputs["api_keys_secret"]).rsplit("/", 1)[-1])
        with step(progress, "alert router's secrets: a token for each sender that has none"):
            ensure_router_secrets(cfg, shell, tf, tfvars(cfg, mode, invokers=invokers))
        with step(progress, f"images: Cloud Build of {sha} unless the tags exist (weights mode {mode})"):
            weights_tag = None
            if mode == "baked":
                weights_tag = (
                    hashlib.sha256(manifest.to_json().encode()).hexdigest()[:8] if manifest else "<manifest>"
                )
            image, router_image = ensure_images(cfg, shell, outputs, sha, weights_tag)
        base = tfvars(cfg, mode, image=image, router_image=router_image, invokers=invokers)
        suffix = revision_suffix(sha, base)
        revision = f"{cfg.service}-{suffix}"
        if live is not None and live.serving == revision:
            console.print(f"nothing to do: {revision} already serves this commit and these settings")
            return 0
        first = live is None
        serving = live.serving if live else ""

        def phase(traffic: str, candidate: str, why: str) -> None:
            """Apply the new revision with the traffic on `traffic` (empty: on the new revision
            alone) and `candidate` tagged at 0 %."""
            variables = {
                "revision_suffix": suffix,
                "serving_revision": traffic,
                "candidate_revision": candidate,
            }
            tf.apply({**base, **variables}, why)

        with step(
            progress,
            f"revision {revision}: " + ("100 % (first deploy)" if first else "tagged candidate, 0 %"),
        ):
            if first:
                phase("", "", "the new revision")
            else:
                phase(serving, revision, "the new revision, at 0 % under the tag candidate")
            outputs = tf.outputs()
        target = str(outputs["service_url" if first else "candidate_url"])
        tokens = id_tokens(cfg.id_token)

        def headers() -> dict[str, str]:  # a fresh ID token whenever the cached one nears its expiry
            return tokens.headers(audience_of(target), key)

        if cfg.dry_run:
            shell.note(f"wait for {target}/readyz, one smoke decision, then the {profile.name} gate on it")
            shell.note(
                f"gate passed: terraform apply with serving_revision={revision}; failed: traffic stays, "
                "exit 1"
            )
            phase(revision, "", "the traffic to the new revision")
            shell.note(
                f"wait for {outputs['router_url']}/readyz (public), then print each sender's webhook URL "
                "and the command that reads its token:"
            )
            for source in SENDERS:
                shell.note(shlex.join(reveal_token(cfg, source)))
            return 0
        with step(progress, f"waiting for {target} to be ready (cold start)"):
            cold = wait_ready(target, headers, cfg.warmup_seconds)
            smoke(target, headers())
        console.print(f"ready in {cold:.0f} s; smoke decision valid")
        report = cfg.directory / f"gate-{suffix}"
        with step(progress, f"load-test gate ({profile.name}) against the candidate"):
            result = gate(target, profile, report, headers=headers, warmup_timeout_s=cfg.warmup_seconds)
            missed = result.missed
        if missed:
            console.print(
                f"[red]the gate failed[/]: traffic stays on {serving or 'the previous revision'}; "
                f"report: {report / 'summary.md'}"
            )
            return 1
        if not first:
            with step(progress, f"traffic: 100 % to {revision}"):
                phase(revision, "", "the traffic to the new revision")
        console.print(f"{revision} serves {outputs['service_url']}; gate report: {report / 'summary.md'}")
        with step(progress, f"alert router: {outputs['router_url']}/readyz"):
            router_ready(cfg, console, outputs, revision)
    return 0


def destroy(cfg: DeployConfig, console: Console, *, delete_weights: bool) -> int:
    """Tear everything down; the weights bucket (and the checkpoint) only with `delete_weights`."""
    shell = Shell(console, cfg.directory, dry_run=cfg.dry_run)
    cfg.directory.mkdir(parents=True, exist_ok=True)
    tf = Terraform(cfg, shell)
    tf.init(tfvars(cfg, "baked"))
    live = describe_service(cfg, shell)
    router = describe_service(cfg, shell, cfg.router)
    image = live.image if live and "@sha256:" in live.image else ""
    # Both services as they run (a service left out would be destroyed while still protected).
    router_image = router.image if router and image and "@sha256:" in router.image else ""
    variables = tfvars(cfg, "baked", image=image, router_image=router_image)
    tf.apply({**variables, "deletion_protection": False}, "lift the services' deletion protection")
    if delete_weights:
        shell.run(
            [
                "gcloud",
                "storage",
                "rm",
                "--recursive",
                f"gs://{cfg.weights_bucket}/**",
                f"--project={cfg.project}",
            ],
            check=False,
        )
    else:
        shell.note(f"keep gs://{cfg.weights_bucket}: forget it in the state so that destroy leaves it")
        tf.run("state", "rm", "module.dgemma.google_storage_bucket.weights", check=False)
    tf.run(
        "destroy",
        "-input=false",
        "-no-color",
        "-auto-approve",
        f"-var-file={cfg.directory / 'terraform.tfvars.json'}",
    )
    console.print(
        "destroyed" + ("" if delete_weights else f"; the weights stay in gs://{cfg.weights_bucket}")
    )
    return 0


def add_key(cfg: DeployConfig, console: Console, secret: str) -> str:
    """A new API key, added to the secret's keys as a new version (the old keys stay valid until
    removed); instances read the version at start, so new instances take it."""
    shell = Shell(console, cfg.directory, dry_run=cfg.dry_run)
    keys = read_keys(cfg, shell, secret)
    key = secrets.token_urlsafe(32)
    add_version(cfg, shell, secret, "\n".join([*keys, key]) + "\n")
    return key
