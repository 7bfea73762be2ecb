"""The rollout as a list of steps: the dry run prints what a real run does, because both run the same
steps (a real run here against scripted gcloud/terraform answers, in process); and the Dockerfile's
served model, read by the calibration check."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from app.core.config import ConfigError
from deploy.cloud.checks import image_served_model, served_model
from deploy.cloud.config import SENDERS, DeployConfig
from deploy.cloud.id_tokens import id_tokens
from deploy.cloud.rollout import STEPS, Rollout
from deploy.cloud.shell import Result, Shell
from deploy.cloud.terraform import OUTPUTS
from loadtest.gate import GateProfile

pytestmark = pytest.mark.unit

OLD = "dgemma-0000000-00000000"  # the revision that serves before a candidate deploy


class Scripted(Shell):
    """A real run's Shell (not dry) whose commands get scripted answers; it records each command
    and each other effect (which it does not make: the weights, HTTP calls and the gate pass)."""

    def __init__(self, directory: Path, *, service: bool) -> None:
        super().__init__(Console(file=io.StringIO()), directory, dry_run=False)
        self.service, self.built = service, False
        self.calls: list[str] = []

    def run(
        self,
        argv: list[str],
        *,
        reads: str = "",
        stdin: str | None = None,
        check: bool = True,
        cwd: Path | None = None,
    ) -> Result:
        self.commands.append(argv)
        words = " ".join(a for a in argv if not a.startswith("-") and "=" not in a)
        if words.startswith("gcloud run services describe"):
            if not self.service:
                return Result(1, "", "ERROR: Service [dgemma] could not be found.")
            data = {"status": {"traffic": [{"revisionName": OLD, "percent": 100}]}}
            return Result(0, json.dumps(data))
        if words.startswith("gcloud storage buckets describe"):
            return Result(1, "", "not found")  # neither bucket exists yet
        if words.startswith("gcloud storage cat"):  # no deploy history yet
            return Result(1, "", "ERROR: (gcloud.storage.cat) The following URLs matched no objects")
        if words.startswith("gcloud artifacts docker images describe"):
            return Result(0, "sha256:" + "a" * 64) if self.built else Result(1, "", "not found")
        if words.startswith("gcloud builds submit"):
            self.built = True
        if "output" in argv:
            values = {name: f"https://{name}.example" for name in OUTPUTS}
            outputs = {**values, "alert_webhooks": {s: f"https://router/{s}" for s in SENDERS}}
            return Result(0, json.dumps({k: {"value": v} for k, v in outputs.items()}))
        answers = {"get-value": "sre@example.com", "rev-parse": "0123456789abcdef"}  # account, commit
        return Result(0, next((v for k, v in answers.items() if k in argv), ""))

    def call(self, what, action, placeholder):  # type: ignore[no-untyped-def]
        self.calls.append(what)
        return placeholder  # the upload verified, the revision ready, the gate passed


def _run(cfg: DeployConfig, shell: Shell) -> int:
    """The rollout's steps, in order, as `deploy` runs them (without its progress display)."""
    r = Rollout(cfg, shell, GateProfile.load(cfg.profile), id_tokens("off"))
    for step in STEPS:
        code = step.run(r)
        if code is not None:
            return code
    return 0


def _pattern(printed: str) -> re.Pattern[str]:
    """What a printed word stands for: its placeholders (`<...>`, cut ones too) for any value."""
    parts = re.split(r"(<[^<>]*>?)", printed)
    return re.compile("".join(".+?" if p.startswith("<") else re.escape(p) for p in parts))


def _unmatched(printed: list[list[str]], issued: list[list[str]]) -> list[list[str]]:
    """The printed commands a real run skipped; fails unless every issued one was printed, in order."""
    skipped, rest = [], iter(printed)
    for argv in issued:
        for candidate in rest:
            same = len(candidate) == len(argv) and all(
                _pattern(p).fullmatch(a) for p, a in zip(candidate, argv, strict=True)
            )
            if same:
                break
            skipped.append(candidate)
        else:
            pytest.fail(f"issued but never printed (or out of order): {argv}")
    return skipped + list(rest)


@pytest.fixture
def cfg(tmp_path: Path) -> DeployConfig:
    return DeployConfig("my-gpu-project", "europe-west4", workdir=tmp_path / "work")


@pytest.mark.parametrize("service", [False, True], ids=["first deploy", "candidate"])
def test_the_dry_run_prints_every_command_a_real_run_issues(cfg: DeployConfig, service: bool) -> None:
    cfg.directory.mkdir(parents=True)
    out = io.StringIO()
    dry = Shell(Console(file=out, width=10_000), cfg.directory, dry_run=True)
    assert _run(DeployConfig(**{**cfg.__dict__, "dry_run": True}), dry) == 0
    real = Scripted(cfg.directory, service=service)
    assert _run(cfg, real) == 0
    infra, candidate, untag, traffic = [c for c in dry.commands if "apply" in c]
    # The dry run shows both outcomes of each condition; a real run takes one: what it skipped is
    # the failed gate's untagging (and its record), and the infrastructure's apply when a service exists.
    record = dry.commands[dry.commands.index(untag) + 1]
    assert record[:4] == ["gcloud", "storage", "cp", "-"] and record[4].endswith("/history.json")
    assert _unmatched(dry.commands, real.commands) == ([infra] if service else []) + [untag, record]
    assert sum("apply" in c for c in real.commands) == (2 if service else 3)
    # The candidate (the first revision too) is applied to the GPU service alone, with the operator
    # as its invoker for the gate; the traffic's apply is the whole module, the router included.
    targets = [a for c in real.commands if "apply" in c for a in c if a.startswith("-target=")]
    gpu = "module.dgemma.google_cloud_run_v2_service.gpu"
    operator = 'module.dgemma.google_cloud_run_v2_service_iam_member.invokers["user:sre@example.com"]'
    assert targets == [f"-target={gpu}", f"-target={operator}"], targets
    assert all(gpu in " ".join(c) for c in (candidate, untag)) and "-target" not in " ".join(traffic)
    # Each effect that is not a command, said in the dry run as the real run makes it.
    said = [line[2:] for line in out.getvalue().splitlines() if line.startswith("# ")]
    for what in real.calls:
        assert any(_pattern(line).fullmatch(what) for line in said), what


def test_the_served_model_is_the_dockerfiles_first_setting() -> None:
    text = "ENV DGEMMA_A=1 \\\n    DGEMMA_SERVED_MODEL=gemma-x-w4a16 \\\n    DGEMMA_SERVED_MODEL=later\n"
    assert served_model(text) == "gemma-x-w4a16"
    with pytest.raises(ConfigError, match="sets no DGEMMA_SERVED_MODEL"):
        served_model("ENV DGEMMA_A=1\n")
    dockerfile = Path(__file__).resolve().parents[3] / "Dockerfile"
    assert image_served_model() == served_model(dockerfile.read_text()) != ""
