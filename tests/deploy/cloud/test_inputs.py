"""What `dgemma deploy`, `destroy`, `keys` and `fit` refuse on this machine, before any cloud call and
in a dry run too (deploy/cloud/inputs.py): every flag's bad values, judged by the module's own
variable validations (the real Terraform, offline) and the checks the module cannot make; and what
the image build would upload, as the real gcloud lists it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from dockerfile_parse import DockerfileParser

from app.core.config import ConfigError
from deploy.cloud.config import ROOT, DeployConfig
from deploy.cloud.inputs import check_checkpoint, check_deploy, check_upload
from deploy.runtime.gpu_budget import BIG_CONFIG
from deploy.runtime.weights import verify

pytestmark = pytest.mark.integration

GOOD = ["--project", "my-gpu-project", "--region", "europe-west4"]


def _config(*flags: str) -> DeployConfig:
    from deploy.cli import build_parser
    from deploy.commands.deploy import config

    args = build_parser("deploy").parse_args(["deploy", *GOOD, *flags, "--dry-run"])
    cfg = config(args)
    assert isinstance(cfg, DeployConfig)
    return cfg


def _checkpoint(root: Path, *, config: dict[str, object] | None = None, weights: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    if config is None:
        config = json.loads(BIG_CONFIG.read_text())
        config["quantization_config"] = {"quant_method": "compressed-tensors"}
    (root / "config.json").write_text(json.dumps(config))
    if weights:
        (root / "model.safetensors").write_bytes(b"\0" * 1024)
    return root


BAD_FLAGS = [
    (["--project", "Bad_Project!"], '--project "Bad_Project!": project_id must be'),
    (["--project", ""], '--project "": project_id must be'),
    (["--project", "ab"], "--project"),
    (["--service", "Bad_Name"], '--service "Bad_Name": service_name must be'),
    (["--service", "a" * 30], "--service"),
    (["--region", "mars-north1"], '--region "mars-north1": region must be a Cloud Run region with NVIDIA L4'),
    (["--max-instances", "0"], "--l4-quota, --max-instances: max_instance_count must be between 1"),
    (["--max-instances", "3"], "--max-instances 3 with --l4-quota 3: the gate's candidate needs an L4"),
    (["--max-instances", "9", "--l4-quota", "4"], "--l4-quota, --max-instances"),
    (["--l4-quota", "0"], "--l4-quota"),
    (
        ["--cold-start-budget", "5000"],
        "--cold-start-budget 5000: cold_start_budget_s must be between 60 and 1800",
    ),
    (["--cold-start-budget", "-1"], "--cold-start-budget -1"),
    (["--invoker", "allUsers"], "--invoker"),
    (["--invoker", "bob@example.com"], "--invoker"),
    (["--weights-prefix", "/abs/path"], '--weights-prefix "/abs/path"'),
    (["--warmup-seconds", "-5"], "--warmup-seconds -5: expected more than 0"),
    (["--warmup-seconds", "0"], "--warmup-seconds 0"),
    (["--latency-seconds", "0"], "--latency-seconds 0: expected at least 1"),
    (["--throughput-seconds", "-3"], "--throughput-seconds -3"),
    (
        ["--alerts-policy", "/nonexistent/policy.toml"],
        "--alerts-policy /nonexistent/policy.toml: not a readable file",
    ),
    (["--calibration", "/nonexistent/cal.json"], "--calibration /nonexistent/cal.json: not a readable file"),
    (["--checkpoint", "/nonexistent/ckpt"], "--checkpoint /nonexistent/ckpt: not found"),
    (["--label", "team"], "--label team: expected KEY=VALUE"),
    (["--label", "Team=sre"], '--label {"Team": "sre"}: labels must be keys of 1-63 lowercase'),
    (["--label", "team=S R E"], "--label"),
    (["--cpu", "2"], '--cpu "2": cpu must be 4, 6 or 8'),
    (["--memory", "48Gi"], '--memory "48Gi": memory must be between 16Gi and 32Gi'),
    (["--memory", "32G"], "--memory"),
    (["--log-level", "TRACE"], '--log-level "TRACE": log_level must be DEBUG'),
    (["--router-min-instances", "-1"], "--router-min-instances: router_min_instance_count must be between 0"),
    (["--router-min-instances", "4"], "--router-min-instances"),
    (["--billing-account", "my-account", "--budget", "3"], '--billing-account "my-account": billing_account'),
    (["--billing-account", "012345-6789AB-CDEF01"], "--billing-account, --budget: budget_amount and"),
    (["--budget", "300"], "--billing-account, --budget: budget_amount and billing_account go together"),
    (["--billing-account", "012345-6789AB-CDEF01", "--budget", "-5"], "--budget -5: budget_amount must"),
    (["--base-image", "vllm/vllm-openai"], "--base-image vllm/vllm-openai: expected REPOSITORY:TAG or"),
    (["--base-image", "vllm/vllm-openai@sha256:abc"], "--base-image vllm/vllm-openai@sha256:abc"),
    (["--base-image", "vllm/vllm-openai:v1,_IMAGE=x"], "--base-image"),
]


@pytest.mark.parametrize(("flags", "expected"), BAD_FLAGS, ids=[" ".join(f) or "empty" for f, _ in BAD_FLAGS])
def test_a_bad_flag_is_refused_before_the_cloud_with_its_reason(flags: list[str], expected: str) -> None:
    with pytest.raises(ConfigError) as refused:
        check_deploy(_config(*flags))
    assert expected in str(refused.value)


def test_good_flags_pass() -> None:
    check_deploy(_config("--max-instances", "2", "--invoker", "user:ops@example.com"))
    check_deploy(
        _config(
            "--label", "team=sre", "--cpu", "4", "--memory", "16Gi", "--router-min-instances", "0",
            "--billing-account", "012345-6789AB-CDEF01", "--budget", "300",
            "--base-image", "vllm/vllm-openai@sha256:" + "a" * 64,
        )
    )  # fmt: skip


def test_every_problem_is_named_at_once() -> None:
    with pytest.raises(ConfigError) as refused:
        check_deploy(
            _config("--service", "Bad_Name", "--cold-start-budget", "5000", "--warmup-seconds", "-1")
        )
    message = str(refused.value)
    assert "--service" in message and "--cold-start-budget" in message and "--warmup-seconds" in message


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda p: (p.write_text("x"), p)[1], "not a directory"),
        (lambda p: _checkpoint(p, config={"architectures": ["LlamaForCausalLM"]}), "is not DiffusionGemma's"),
        (lambda p: _checkpoint(p, config={**json.loads(BIG_CONFIG.read_text())}), "not quantized"),
        (lambda p: _checkpoint(p, weights=False), "no *.safetensors"),
        (lambda p: (p.mkdir(), (p / "config.json").write_text("{not json"), p)[2], "no readable config.json"),
    ],
    ids=["a file", "another model", "bf16", "no weights", "junk config"],
)
def test_a_checkpoint_that_is_not_diffusiongemma_w4a16_is_refused(
    tmp_path: Path, make: object, expected: str
) -> None:
    path = make(tmp_path / "ckpt")  # type: ignore[operator]
    with pytest.raises(ConfigError, match="--checkpoint") as refused:
        check_checkpoint(path, _config())
    assert expected in str(refused.value)


def test_a_checkpoint_that_does_not_fit_the_l4_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DGEMMA_ENGINE_MAX_NUM_SEQS", "512")
    with pytest.raises(ConfigError, match="--checkpoint"):
        check_checkpoint(_checkpoint(tmp_path / "ckpt"), _config())


def test_an_empty_manifest_does_not_verify(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text('{"files": []}')
    assert verify(tmp_path) == [f"{tmp_path / 'manifest.json'} lists no files"]


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the checkout's tracked files (what a clone holds), .gcloudignore included."""
    copy = tmp_path_factory.mktemp("checkout")
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True
    ).stdout
    for name in listed.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    return copy


def _uploaded(root: Path) -> list[str]:
    done = subprocess.run(
        ["gcloud", "meta", "list-files-for-upload", str(root)], capture_output=True, text=True, check=True
    )
    return done.stdout.split()


def test_the_build_uploads_the_images_sources_only(checkout: Path) -> None:
    """The quickstart's checkpoints sit in the checkout: the real gcloud leaves them out, and
    everything else that is not the images' sources (docs, tests, terraform...)."""
    _checkpoint(checkout / "dgemma-w4a16")
    _checkpoint(checkout / "diffusiongemma-26b-a4b")
    uploaded = _uploaded(checkout)
    tops = {name.split("/", 1)[0] for name in uploaded}
    assert tops == {
        "Dockerfile", ".dockerignore", "cloudbuild.yaml", "pyproject.toml", "README.md",
        "app", "deploy", "evals", "loadtest", "requirements", "scripts",
    }  # fmt: skip
    assert [n for n in uploaded if n.startswith("scripts/")] == ["scripts/install_kit.sh"]
    assert not any(n.endswith(".safetensors") for n in uploaded)
    check_upload(checkout)  # what it measures passes


def test_the_build_uploads_every_file_the_dockerfile_reads(checkout: Path) -> None:
    """Each COPY source and each file the build's RUN steps bind-mount from the context (the install
    script, the lock) is uploaded: Cloud Build has nothing else."""
    read: set[str] = set()
    for ins in DockerfileParser(path=str(checkout / "Dockerfile")).structure:
        words = ins["value"].split()
        if ins["instruction"] == "COPY" and not any(w.startswith("--from=") for w in words):
            read |= {w for w in words[:-1] if not w.startswith("--")}
        if ins["instruction"] == "RUN":
            for mount in re.findall(r"--mount=(\S+)", ins["value"]):
                options = dict(kv.partition("=")[::2] for kv in mount.split(","))
                if options.get("type") == "bind" and "from" not in options:
                    read.add(options.get("source", "."))
    assert {"app", "requirements/gateway.lock", "scripts/install_kit.sh"} <= read
    uploaded = _uploaded(checkout)
    missing = [r for r in sorted(read) if not any(u == r or u.startswith(f"{r}/") for u in uploaded)]
    assert not missing, f"the Dockerfile reads what gcloud leaves out (.gcloudignore): {missing}"


def test_weights_or_a_big_tree_inside_the_sources_are_refused(checkout: Path) -> None:
    inside = checkout / "deploy" / "my-checkpoint"
    inside.mkdir()
    (inside / "model.safetensors").write_bytes(b"\0" * (2 * 2**20))
    try:
        with pytest.raises(ConfigError, match=r"would upload .*deploy/my-checkpoint/model\.safetensors"):
            check_upload(checkout)
        (inside / "model.safetensors").unlink()
        (inside / "data.bin.txt").write_bytes(b"\0" * (60 * 2**20))
        with pytest.raises(ConfigError, match=r"would upload 6[0-9] MiB"):
            check_upload(checkout)
    finally:
        shutil.rmtree(inside)


def _cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deploy.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_the_cli_says_it_in_one_line_exit_2_and_makes_no_folder(tmp_path: Path) -> None:
    work = tmp_path / "work"
    done = _cli("deploy", *GOOD, "--service", "Bad_Name", "--dry-run", "--workdir", str(work))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "--service" in done.stderr and not work.exists()
    destroy = ["destroy", "--project", "Bad_Project!", "--region", "europe-west4", "--dry-run"]
    keys = ["keys", "add", "--project", "my-gpu-project", "--region", "mars", "--dry-run"]
    for argv in (destroy, keys):
        done = _cli(*argv)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr


def test_fit_refuses_a_missing_checkpoint_and_no_memory() -> None:
    done = _cli("fit", "/nonexistent")
    assert done.returncode == 2 and "Traceback" not in done.stderr and "/nonexistent" in done.stderr
    done = _cli("fit", "--memory-gib", "0")
    assert done.returncode == 2 and "--memory-gib" in done.stderr


def test_a_dry_run_of_keys_add_prints_no_key() -> None:
    done = _cli("keys", "add", *GOOD, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "<a new key>"
