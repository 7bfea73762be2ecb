"""Every input of `dgemma deploy`, `destroy` and `keys`, checked on this machine before any cloud
call, in a dry run too: the tools the command needs, the Terraform module's own variable
validations (terraform/variables.tf, evaluated by Terraform itself in a scratch root holding only
that file: no provider, state or credentials), what the module does not see (the gate's flags, the
candidate's GPU), the checkpoint (layout, quantization, fit, its tensors by their headers), the
weights mode against the memory, and what Cloud Build would upload. A failure is one line:
ConfigError, exit 2."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from app.core.config import ConfigError
from deploy.cloud.config import ROOT, DeployConfig
from deploy.cloud.variables import SETTINGS

VARIABLES_TF = ROOT / "terraform" / "variables.tf"
# The flag (or setting) behind each module variable the deploy sets, for the errors: the settings'
# own (deploy/cloud/variables.py) and the deployment's names.
FLAGS = {
    "project_id": "--project",
    "region": "--region",
    "service_name": "--service",
    **{s.variable: s.flag or s.name for s in SETTINGS},
}
# The images are built later: a digest of the right shape stands in for them here.
PLACEHOLDER_IMAGE = "europe-west4-docker.pkg.dev/project/repository/image@sha256:" + "0" * 64
# What the build may upload: the images' sources are ~6 MB (.gcloudignore is an allow-list).
MAX_UPLOAD_BYTES = 50 * 2**20
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".gguf")
# A Cloud Monitoring notification channel (terraform/variables.tf checks the form): its project, an
# ID or a number.
CHANNEL = re.compile(r"projects/([^/]+)/notificationChannels/[^/]+")
# `--base-image`: Docker's image reference (simplified), pinned by a tag or a digest. No commas: it
# travels in gcloud's --substitutions list. Not a module variable: the module never sees the build.
_NAME = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_TAG, _DIGEST = r":[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", r"@sha256:[0-9a-f]{64}"
BASE_IMAGE = re.compile(rf"(?:{_NAME}(?::[0-9]+)?/)?{_NAME}(?:/{_NAME})*(?:{_TAG}(?:{_DIGEST})?|{_DIGEST})")


def require_tools(command: str, *tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        names = ", ".join(f"`{t}`" for t in missing)
        raise ConfigError(
            f"`dgemma {command}` needs {names} on PATH: install it (docs/deploy.md, Prerequisites)"
        )


def variable_problems(variables: dict[str, Any]) -> list[str]:
    """terraform/variables.tf's validations of these values, by Terraform, offline: what fails, one
    line each, led by the flag that sets it."""
    with tempfile.TemporaryDirectory(prefix="dgemma-inputs-") as scratch:
        root = Path(scratch)
        shutil.copy(VARIABLES_TF, root / "variables.tf")
        (root / "values.tfvars.json").write_text(json.dumps(variables))
        (root / "cli.tfrc").write_text("")
        env = {
            **os.environ,
            "TF_IN_AUTOMATION": "1",
            "TF_INPUT": "0",
            "TF_CLI_CONFIG_FILE": str(root / "cli.tfrc"),
        }

        def terraform(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                ["terraform", f"-chdir={root}", *args], env=env, capture_output=True, text=True, timeout=120
            )

        init = terraform("init", "-backend=false", "-no-color")
        if init.returncode != 0:
            raise ConfigError(f"terraform could not check the inputs: {init.stderr.strip()[-500:]}")
        plan = terraform("plan", "-refresh=false", "-no-color", "-json", "-var-file=values.tfvars.json")
    problems = []
    for line in plan.stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        diagnostic = event.get("diagnostic") if event.get("type") == "diagnostic" else None
        if not diagnostic or diagnostic.get("severity") != "error":
            continue
        detail = str(diagnostic.get("detail", "")).split("\n\nThis was checked", 1)[0]
        names = [
            v["traversal"].removeprefix("var.")
            for v in (diagnostic.get("snippet") or {}).get("values", [])
            if str(v.get("traversal", "")).startswith("var.")
        ]
        flags = ", ".join(FLAGS.get(n, n) for n in names) or diagnostic.get("summary", "")
        given = f" {json.dumps(variables[names[0]])}" if len(names) == 1 and names[0] in variables else ""
        problems.append(f"{flags}{given}: {' '.join(detail.split()).rstrip('.')}")
    if not problems and plan.returncode != 0:
        raise ConfigError(f"terraform could not check the inputs: {plan.stderr.strip()[-500:]}")
    return sorted(problems)


def check_checkpoint(path: Path, cfg: DeployConfig) -> None:
    """A DiffusionGemma W4A16 checkpoint that fits the L4 (what Cloud Build would bake or upload),
    whose safetensors hold the tensors of the architecture its config.json describes."""
    from deploy.runtime.gpu_budget import FitError, check_fits, fit, load_config, quantization_of
    from deploy.runtime.tensors import check_contents

    where = f"--checkpoint {path}"
    if not path.is_dir():
        missing = "not found" if not path.exists() else "not a directory"
        raise ConfigError(f"{where}: {missing} (a W4A16 checkpoint's folder)")
    try:
        config = load_config(path)
    except (OSError, ValueError) as e:
        raise ConfigError(f"{where}: no readable config.json ({type(e).__name__})") from e
    if "DiffusionGemmaForBlockDiffusion" not in (config.get("architectures") or []):
        raise ConfigError(
            f"{where}: config.json is not DiffusionGemma's (architectures {config.get('architectures')})"
        )
    if quantization_of(config)[0] != "w4a16":
        raise ConfigError(
            f"{where}: not quantized (bf16, ~52 GB, does not fit an L4): make the W4A16 checkpoint first "
            "(`dgemma quantize`, docs/deploy.md)"
        )
    if not any(path.glob("*.safetensors")):
        raise ConfigError(f"{where}: no *.safetensors weights")
    try:
        budget = fit(cfg.engine, path)
        check_fits(budget)
    except (FitError, KeyError, TypeError) as e:
        raise ConfigError(f"{where}: {e}") from e
    try:  # the files themselves, by their headers: else a bad one shows only at the L4's cold start
        check_contents(path, budget.arch, budget.profile.scheme, budget.profile.group_size)
    except (OSError, ValueError) as e:
        raise ConfigError(f"{where}: {e}") from e


def check_upload(root: Path = ROOT) -> None:
    """What `gcloud builds submit` would upload from the checkout, as gcloud itself reads
    .gcloudignore: refused over MAX_UPLOAD_BYTES, or with model weights in it."""
    done = subprocess.run(
        ["gcloud", "meta", "list-files-for-upload", str(root)], capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        raise ConfigError(f"gcloud could not list the build's files: {done.stderr.strip()[-500:]}")
    files = [root / line for line in done.stdout.splitlines() if line.strip()]
    sizes = {f: f.stat().st_size for f in files if f.is_file()}
    weights = [f for f in sizes if f.suffix in WEIGHT_SUFFIXES and sizes[f] > 2**20]
    total = sum(sizes.values())
    if weights or total > MAX_UPLOAD_BYTES:
        biggest = sorted(sizes, key=sizes.__getitem__, reverse=True)[:3]
        listed = ", ".join(
            f"{f.relative_to(root)} ({sizes[f] / 2**20:.0f} MiB)" for f in weights[:3] or biggest
        )
        raise ConfigError(
            f"the image build would upload {total / 2**20:.0f} MiB from {root} ({listed}): keep checkpoints "
            "outside the checkout (or in a folder .gcloudignore leaves out)"
        )


def check_deploy(cfg: DeployConfig, *, upload: bool = True) -> None:
    """Everything `dgemma deploy` is given, before it touches the project: every problem, in one
    line. `upload=False` leaves out the checkout's upload set (a real gcloud run, ~0.6 s), checked
    once already by the same deploy."""
    from deploy.cloud.terraform import tfvars

    require_tools("deploy", "gcloud", "terraform", "git")
    for flag, path in (("--alerts-policy", cfg.alerts_policy), ("--calibration", cfg.calibration)):
        if path is not None and not path.is_file():
            raise ConfigError(f"{flag} {path}: not a readable file")
    problems = [f"--label {label}: expected KEY=VALUE" for label in cfg.labels if "=" not in label]
    if cfg.base_image and not BASE_IMAGE.fullmatch(cfg.base_image):
        problems.append(
            f"--base-image {cfg.base_image}: expected REPOSITORY:TAG or REPOSITORY@sha256:<64 hex>"
        )
    placeholders = {"image": PLACEHOLDER_IMAGE, "router_image": PLACEHOLDER_IMAGE}
    problems += variable_problems(tfvars(cfg, "baked", invokers=cfg.invokers, **placeholders))
    if cfg.max_instances + 1 > cfg.l4_quota:
        problems.append(
            f"--max-instances {cfg.max_instances} with --l4-quota {cfg.l4_quota}: the gate's candidate needs "
            f"an L4 beside those the serving revision may hold, so at most {cfg.l4_quota - 1}"
        )
    if not 0 < cfg.warmup_seconds <= 3600:
        problems.append(f"--warmup-seconds {cfg.warmup_seconds:g}: expected more than 0, at most 3600")
    gate = (("--latency-seconds", cfg.latency_seconds), ("--throughput-seconds", cfg.throughput_seconds))
    problems += [f"{flag} {s}: expected at least 1" for flag, s in gate if s is not None and s < 1]
    if cfg.checkpoint is not None:
        try:
            check_checkpoint(cfg.checkpoint, cfg)
        except ConfigError as e:
            problems.append(str(e))
    problems += prefix_problems(cfg.weights_prefix)
    problems += [
        f"{flag} {channel}: a channel of project {project}, not of --project {cfg.project} (an alert "
        "policy notifies its own project's channels only)"
        for flag, channel, project in channel_projects(cfg)
        if not project.isdigit() and project != cfg.project  # a number: preflight knows the project's
    ]
    problems += mode_problems(cfg)
    problems += directory_problems(cfg)
    if problems:
        raise ConfigError("; ".join(problems))
    if upload:
        check_upload()


def prefix_problems(prefix: str) -> list[str]:
    """`.` and `..` segments, which the module's pattern lets through (it refuses an absolute path
    and empty segments): a prefix names one folder of the bucket, never a way out of it."""
    if any(segment in (".", "..") for segment in prefix.split("/")):
        return [f"--weights-prefix {prefix}: expected a folder without . or .. segments, e.g. dgemma-w4a16"]
    return []


def channel_projects(cfg: DeployConfig) -> list[tuple[str, str, str]]:
    """(flag, channel, the project it names: an ID or a number) of each notification channel."""
    named = [("--notify", c) for c in cfg.notification_channels]
    named += [("--deadman-notify", c) for c in cfg.deadman_channels]
    return [(flag, c, found[1]) for flag, c in named if (found := CHANNEL.fullmatch(c))]


def mode_problems(cfg: DeployConfig) -> list[str]:
    """The weights mode against the instance's memory, by the checkpoint's sizes as far as they are
    known before the bucket is read (weights.expected_sizes); the rollout decides again by the
    bucket's manifest."""
    from deploy.cloud.weights import choose_mode
    from deploy.runtime.gpu_budget import FitError

    try:
        memory = cfg.memory_gib
    except ValueError:
        return []  # a --memory of the wrong form: the module's validation names it
    try:
        choose_mode(cfg, None)
    except (FitError, ConfigError) as e:
        return [f"--weights-mode {cfg.weights_mode} with --memory {memory:g}Gi: {e}"]
    return []


def directory_problems(cfg: DeployConfig) -> list[str]:
    """Where the command writes its files (the Terraform root, deploy.log): a folder, or a path
    under one."""
    existing = next(p for p in (cfg.directory, *cfg.directory.parents) if p.exists())
    if existing.is_dir():
        return []
    given = f"--workdir {cfg.workdir}" if cfg.workdir is not None else f"the working folder {cfg.directory}"
    return [f"{given}: {existing} is a file, not a folder"]


def check_project(cfg: DeployConfig, command: str, *tools: str) -> None:
    """`destroy`, `rollback` and `keys`: their tools, the names that address the project's resources
    and the folder they write in. Terraform checks the names, so each of them needs it."""
    require_tools(command, *dict.fromkeys((*tools, "terraform")))
    names = {"project_id": cfg.project, "region": cfg.region, "service_name": cfg.service}
    problems = variable_problems({**names, "image": PLACEHOLDER_IMAGE}) + directory_problems(cfg)
    if problems:
        raise ConfigError("; ".join(problems))
