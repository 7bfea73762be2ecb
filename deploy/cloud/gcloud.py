"""Every gcloud command the deploy emits, built here (and nowhere else) and run through `Shell`: the
project and its credentials, buckets, the running services, secrets, images and their build."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from deploy.cloud.config import ROOT, DeployConfig
from deploy.cloud.shell import Result, Shell
from deploy.errors import DeployError


@dataclass(frozen=True)
class Live:
    """The service as it runs now."""

    serving: str  # the revision with 100 % of the traffic
    image: str
    env: dict[str, str] = field(default_factory=dict)  # the container's plain values


def access_latest(cfg: DeployConfig, secret: str) -> list[str]:
    """The command that prints the secret's latest version (the operator is shown it too)."""
    return [
        "gcloud",
        "secrets",
        "versions",
        "access",
        "latest",
        f"--secret={secret}",
        f"--project={cfg.project}",
    ]


def add_version_argv(cfg: DeployConfig, secret: str) -> list[str]:
    """The command that adds a version to `secret` from stdin (the operator is shown it too)."""
    return ["gcloud", "secrets", "versions", "add", secret, f"--project={cfg.project}", "--data-file=-"]


class Gcloud:
    """The gcloud commands of one deploy (its project and region), run through `shell`."""

    def __init__(self, cfg: DeployConfig, shell: Shell) -> None:
        self.cfg = cfg
        self.shell = shell

    # -- the operator and the project ---------------------------------------------------------------

    def access_token(self) -> Result:
        return self.shell.run(
            ["gcloud", "auth", "print-access-token", "--quiet"],
            reads="proof of valid credentials",
            check=False,
        )

    def account(self) -> str:
        return self.shell.run(
            ["gcloud", "config", "get-value", "account", "--quiet"], reads="the operator's account"
        ).stdout.strip()

    def project_number(self) -> Result:
        return self.shell.run(
            ["gcloud", "projects", "describe", self.cfg.project, "--format=value(projectNumber)"],
            reads="the project number",
            check=False,
        )

    # -- buckets -----------------------------------------------------------------------------------

    def describe_bucket(self, bucket: str, value: str, *, reads: str) -> Result:
        """`value` of the bucket (`location`, `name`); exit non-zero when it does not exist."""
        return self.shell.run(
            [
                "gcloud",
                "storage",
                "buckets",
                "describe",
                f"gs://{bucket}",
                f"--project={self.cfg.project}",
                f"--format=value({value})",
            ],
            reads=reads,
            check=False,
        )

    def ensure_state_bucket(self) -> None:
        """Terraform's state bucket: private, versioned, in the deploy's region."""
        bucket = f"gs://{self.cfg.state_bucket}"
        found = self.describe_bucket(self.cfg.state_bucket, "name", reads="whether the state bucket exists")
        if found.code == 0 and not self.shell.dry_run:
            return
        self.shell.note(f"if {bucket} does not exist:")
        self.shell.run(
            [
                "gcloud",
                "storage",
                "buckets",
                "create",
                bucket,
                f"--project={self.cfg.project}",
                f"--location={self.cfg.region}",
                "--uniform-bucket-level-access",
                "--public-access-prevention",
            ]
        )
        self.shell.run(["gcloud", "storage", "buckets", "update", bucket, "--versioning"])

    def remove_weights(self) -> None:
        self.shell.run(
            [
                "gcloud",
                "storage",
                "rm",
                "--recursive",
                f"gs://{self.cfg.weights_bucket}/**",
                f"--project={self.cfg.project}",
            ],
            check=False,
        )

    def read_object(self, url: str, *, reads: str) -> str | None:
        """A small object's text; None when it does not exist (a dry run reads the placeholder)."""
        done = self.shell.run(
            ["gcloud", "storage", "cat", url, f"--project={self.cfg.project}"], reads=reads, check=False
        )
        if done.code == 0:
            return done.stdout
        missing = ("matched no objects", "not found", "bucket does not exist", "404")
        if any(m in done.stderr or m in done.stderr.lower() for m in missing):  # the state bucket too
            return None
        raise DeployError(f"`gcloud storage cat {url}` failed: {done.stderr.strip()[-500:]}")

    def write_object(self, url: str, text: str) -> None:
        """A small object written from stdin (never through a file beside the state)."""
        self.shell.run(["gcloud", "storage", "cp", "-", url, f"--project={self.cfg.project}"], stdin=text)

    # -- services ----------------------------------------------------------------------------------

    def revisions(self) -> list[str]:
        """The GPU service's revisions, newest first."""
        argv = [
            "gcloud",
            "run",
            "revisions",
            "list",
            f"--service={self.cfg.service}",
            f"--project={self.cfg.project}",
            f"--region={self.cfg.region}",
            "--sort-by=~metadata.creationTimestamp",
            "--format=value(metadata.name)",
        ]
        return self.shell.run(argv, reads="the service's revisions").stdout.split()

    def describe_service(self, name: str = "") -> Live | None:
        """The running service (the GPU one unless `name` says), or None when there is none yet."""
        argv = [
            "gcloud",
            "run",
            "services",
            "describe",
            name or self.cfg.service,
            f"--project={self.cfg.project}",
            f"--region={self.cfg.region}",
            "--format=json",
        ]
        done = self.shell.run(argv, reads="the serving revision and image", check=False)
        if self.shell.dry_run:
            return Live(serving="<serving revision>", image="<current image>")
        if done.code != 0:
            if "could not be found" in done.stderr or "Cannot find service" in done.stderr:
                return None
            raise DeployError(f"`gcloud run services describe` failed: {done.stderr.strip()[-1000:]}")
        data = json.loads(done.stdout)
        traffic = data.get("status", {}).get("traffic", [])
        serving = next((t.get("revisionName", "") for t in traffic if t.get("percent") == 100), "")
        spec = data.get("spec", {}).get("template", {}).get("spec", {})
        container = spec.get("containers", [{}])[0]
        env = {e["name"]: e["value"] for e in container.get("env", []) if "name" in e and "value" in e}
        return Live(serving=serving, image=container.get("image", ""), env=env)

    # -- secrets -----------------------------------------------------------------------------------

    def add_version(self, secret: str, value: str) -> None:
        """A new version of `secret` holding `value`, passed on stdin (never in argv or the state)."""
        self.shell.run(add_version_argv(self.cfg, secret), stdin=value)

    def read_keys(self, secret: str, version: str = "latest") -> list[str]:
        """The keys in a version of the secret (its latest), one per line (none when it has none)."""
        argv = access_latest(self.cfg, secret)
        argv[4] = version
        done = self.shell.run(argv, reads="the API keys", check=False)
        return [line.strip() for line in done.stdout.splitlines() if line.strip()] if done.code == 0 else []

    def _versions(self, secret: str, *flags: str) -> list[str]:
        """`gcloud secrets versions list` of `secret`, by name."""
        argv = ["gcloud", "secrets", "versions", "list", secret, f"--project={self.cfg.project}"]
        return [*argv, *flags, "--format=value(name)"]

    def older_versions(self, secret: str) -> list[str]:
        """The numbers of the secret's enabled versions but the newest (in a dry run, a placeholder)."""
        argv = self._versions(secret, "--filter=state:enabled")
        done = self.shell.run(argv, reads=f"the enabled versions of {secret}")
        if self.shell.dry_run:
            return ["<each older version>"]
        numbers = sorted(int(name.rsplit("/", 1)[-1]) for name in done.stdout.split())
        return [str(n) for n in numbers[:-1]]

    def latest_version_age_s(self, secret: str) -> float | None:
        """Seconds since the secret's newest version was added (None in a dry run or without one)."""
        argv = self._versions(secret, "--limit=1")
        argv[-1] = "--format=value(createTime)"
        done = self.shell.run(argv, reads=f"when the newest version of {secret} was added")
        if self.shell.dry_run or not done.stdout.strip():
            return None
        created = dt.datetime.fromisoformat(done.stdout.split()[0].replace("Z", "+00:00"))
        return (dt.datetime.now(dt.UTC) - created).total_seconds()

    def disable_version(self, secret: str, version: str) -> None:
        """Disable a version (its value can no longer be read; `gcloud secrets versions enable` undoes it)."""
        argv = ["gcloud", "secrets", "versions", "disable", version, f"--secret={secret}"]
        self.shell.run([*argv, f"--project={self.cfg.project}"])

    def secret_has_version(self, secret: str) -> bool | None:
        """Whether the secret has a version; None when the secret does not exist (yet). In a dry run,
        False: the plan shows what a first deploy would add."""
        done = self.shell.run(
            self._versions(secret, "--limit=1"), reads=f"whether {secret} has a version", check=False
        )
        if self.shell.dry_run:
            return False
        if done.code != 0:
            if "NOT_FOUND" in done.stderr:
                return None
            raise DeployError(f"`gcloud secrets versions list {secret}` failed: {done.stderr.strip()[-500:]}")
        return bool(done.stdout.strip())

    # -- images ------------------------------------------------------------------------------------

    def image_digest(self, image: str, *, reads: str, check: bool) -> Result:
        argv = [
            "gcloud",
            "artifacts",
            "docker",
            "images",
            "describe",
            image,
            f"--project={self.cfg.project}",
            "--format=value(image_summary.digest)",
        ]
        return self.shell.run(argv, reads=reads, check=check)

    def ensure_images(self, outputs: dict[str, Any], sha: str, weights: str | None) -> tuple[str, str]:
        """The GPU service's and the router's images by digest, tagged by git SHA (the GPU one, when
        baked, also by the checkpoint's manifest, and by `--base-image` when given), built together by
        one Cloud Build only when a tag does not exist yet."""
        cfg, shell = self.cfg, self.shell
        repository = outputs["image_repository"]
        base = hashlib.sha256(cfg.base_image.encode()).hexdigest()[:8] if cfg.base_image else ""
        tag = (
            f"{repository}/{cfg.service}:{sha}"
            + (f"-w{weights}" if weights else "")
            + (f"-b{base}" if base else "")
        )
        router_tag = f"{repository}/{cfg.router}:{sha}"
        tags = (tag, router_tag)
        before = "the tag's digest, if it was built before"
        found = [self.image_digest(t, reads=before, check=False) for t in tags]
        if any(f.code != 0 for f in found) or shell.dry_run:
            shell.note("if a tag does not exist yet:")
            weights_url = outputs["weights_url"] if weights else ""
            substitutions = f"_IMAGE={tag},_ROUTER_IMAGE={router_tag},_WEIGHTS_URL={weights_url}" + (
                f",_BASE_IMAGE={cfg.base_image}" if cfg.base_image else ""
            )
            account = outputs["build_service_account"]
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
                    f"--service-account=projects/{cfg.project}/serviceAccounts/{account}",
                    f"--gcs-source-staging-dir=gs://{outputs['build_source_bucket']}/source",
                    "--quiet",
                ]
            )
            found = [self.image_digest(t, reads="the new image's digest", check=True) for t in tags]
        by_digest = []
        for image, done in zip(tags, found, strict=True):
            digest = done.stdout.strip()
            if not shell.dry_run and not digest.startswith("sha256:"):
                raise DeployError(f"no digest for {image}: {digest[:100]!r}")
            by_digest.append(f"{image.rsplit(':', 1)[0]}@{digest}")
        return by_digest[0], by_digest[1]
