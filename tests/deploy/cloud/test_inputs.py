"""What `dgemma deploy`, `destroy`, `keys` and `fit` refuse on this machine, before any cloud call and
in a dry run too (deploy/cloud/inputs.py): every flag's bad values, judged by the module's own
variable validations (the real Terraform, offline) and the checks the module cannot make; and what
the image build would upload, as the real gcloud lists it."""

from __future__ import annotations

import json
import os
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
from deploy.models import TOY_DIR
from deploy.runtime.gpu_budget import BIG_CONFIG, Arch
from deploy.runtime.tensors import check_contents, read_header
from deploy.runtime.weights import verify
from tests.helpers.checkpoints import bf16_tensors, w4a16_checkpoint, w4a16_tensors, write_safetensors
from tests.helpers.deploy import Cloud

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
    """The 26B-A4B as a W4A16 checkpoint (its tensors' data a sparse hole: 14.5 GB that take no
    disk), or `config` beside an empty weights file; `weights=False`: no weights file."""
    if config is None:
        w4a16_checkpoint(root, json.loads(BIG_CONFIG.read_text()), sparse=True)
    else:
        root.mkdir(parents=True, exist_ok=True)
        (root / "config.json").write_text(json.dumps(config))
        (root / "model.safetensors").write_bytes(b"")
    if not weights:
        (root / "model.safetensors").unlink()
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
    (["--weights-prefix", "../x"], "--weights-prefix ../x: expected a folder without . or .. segments"),
    (["--weights-prefix", "models/../../x"], "--weights-prefix models/../../x: expected a folder"),
    (["--weights-prefix", "a/./b"], "--weights-prefix a/./b"),
    (["--weights-prefix", "a//b"], '--weights-prefix "a//b": weights_prefix must be a relative'),
    (["--weights-prefix", ""], '--weights-prefix "": weights_prefix must be a relative'),
    (
        ["--weights-mode", "download", "--memory", "16Gi"],
        "--weights-mode download with --memory 16Gi: weights mode 'download' needs 2",
    ),
    (
        ["--notify", "projects/other-project/notificationChannels/123"],
        "--notify projects/other-project/notificationChannels/123: a channel of project other-project, "
        "not of --project my-gpu-project",
    ),
    (
        ["--deadman-notify", "projects/other-project/notificationChannels/9"],
        "--deadman-notify projects/other-project/notificationChannels/9: a channel of project other-project",
    ),
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
            "--weights-prefix", "models/dgemma-w4a16/v2", "--weights-mode", "download",
            "--notify", "projects/my-gpu-project/notificationChannels/1",
            "--deadman-notify", "projects/123456789012/notificationChannels/2",  # a number: preflight's
        )
    )  # fmt: skip
    check_deploy(_config("--weights-mode", "baked", "--memory", "16Gi"))
    check_deploy(_config("--weights-mode", "gcs_fuse", "--memory", "16Gi"))
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


def _header(path: Path) -> dict[str, tuple[tuple[int, ...], str]]:
    return {t.name: (t.shape, t.dtype) for t in read_header(path)}


TOY_CONFIG = json.loads((TOY_DIR / "config.json").read_text())
ENGINE_PY = ROOT / ".venv-engine" / "bin" / "python"


def test_the_stand_in_checkpoints_have_the_real_ones_tensors() -> None:
    """tests/helpers/checkpoints.py writes the tensors transformers saved for the toy, by name and
    shape (the W4A16 layout follows from them by w4a16.py's plan: held to `dgemma model random`'s
    output below)."""
    assert bf16_tensors(TOY_CONFIG) == _header(TOY_DIR / "model.safetensors")


def test_the_real_checkpoints_pass_the_contents_check(tmp_path: Path) -> None:
    """The trained toy and the tiny random model (bf16, transformers' own files) hold their
    architecture's tensors; so does the full 26B-A4B in the W4A16 layout, and the checks of
    `--checkpoint` accept it."""
    for model in (TOY_DIR, ROOT / ".cache" / "model"):  # the tiny one, where a session made it
        if (model / "model.safetensors").is_file():
            config = json.loads((model / "config.json").read_text())
            check_contents(model, Arch.from_config(config), "bf16", 64)
    check_checkpoint(_checkpoint(tmp_path / "26b"), _config())


@pytest.mark.skipif(not ENGINE_PY.is_file(), reason="`dgemma model random` needs the engine's python")
def test_a_random_checkpoint_passes_the_checks_of_a_deploy(tmp_path: Path) -> None:
    """`dgemma model random` (the engine's torch and transformers; no engine started) on the toy's
    architecture: the W4A16 layout the stand-ins write, accepted by `--checkpoint`'s checks."""
    out = tmp_path / "random"
    done = _cli(
        "model", "random", str(out), "--config", str(TOY_DIR / "config.json"), "--tokenizer", str(TOY_DIR),
        "--group-size", "64", "--canvas", "16",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert _header(out / "model.safetensors") == w4a16_tensors(TOY_CONFIG, 64)
    check_checkpoint(out, _config())


def _toy(root: Path) -> Path:
    """The toy's architecture as a W4A16 checkpoint with random weights."""
    return w4a16_checkpoint(root, TOY_CONFIG)


def _rewrite(path: Path, specs: dict[str, tuple[tuple[int, ...], str]]) -> None:
    write_safetensors(path / "model.safetensors", specs)


def _without(prefix: str) -> dict[str, tuple[tuple[int, ...], str]]:
    return {n: s for n, s in w4a16_tensors(TOY_CONFIG).items() if not n.startswith(prefix)}


def _wrong_expert(specs: dict[str, tuple[tuple[int, ...], str]]) -> dict[str, tuple[tuple[int, ...], str]]:
    name = "model.decoder.layers.1.experts.2.up_proj.weight_packed"
    return {**specs, name: ((64, 8), "I32")}


def _two_shards(path: Path) -> None:
    specs = w4a16_tensors(TOY_CONFIG)
    (path / "model.safetensors").unlink()
    names = list(specs)
    write_safetensors(path / "model-00001-of-00002.safetensors", {n: specs[n] for n in names[:100]})
    write_safetensors(path / "model-00002-of-00002.safetensors", {n: specs[n] for n in names[99:]})


def _cut(path: Path) -> None:
    weights = path / "model.safetensors"
    with weights.open("r+b") as f:
        f.truncate(weights.stat().st_size - 100)


BAD_CONTENTS = [
    ("empty", lambda p: (p / "model.safetensors").write_bytes(b""), "model.safetensors: 0 bytes, not a"),
    (
        "1 MiB of random bytes",
        lambda p: (p / "model.safetensors").write_bytes(os.urandom(2**20)),
        "model.safetensors: its first 8 bytes give a header of",
    ),
    ("cut short", _cut, "(cut short?)"),
    (
        "a header that is not JSON",
        lambda p: (p / "model.safetensors").write_bytes(b"\x08" + b"\0" * 7 + b"not json"),
        "model.safetensors: its header is not JSON",
    ),
    (
        "a layer missing",
        lambda p: _rewrite(p, _without("model.decoder.layers.3.")),
        "model.safetensors: no tensors of layers [3], where config.json has 4 layers",
    ),
    (
        "no embedding",
        lambda p: _rewrite(p, _without("model.decoder.embed_tokens")),
        "model.safetensors: no embedding of [2048, 128] (vocab x hidden): none",
    ),
    (
        "an expert of the wrong shape",
        lambda p: _rewrite(p, _wrong_expert(w4a16_tensors(TOY_CONFIG))),
        "model.safetensors: model.decoder.layers.1.experts.2.up_proj.weight_packed is [64, 8], "
        "config.json's experts make it [64, 16]",
    ),
    (
        "a kind missing",
        lambda p: _rewrite(p, _without("model.decoder.self_conditioning.")),
        "model.safetensors: 0 self-conditioning parameters, where config.json's architecture has 98,304",
    ),
    (
        "bf16 weights under a W4A16 config",
        lambda p: _rewrite(p, bf16_tensors(TOY_CONFIG)),
        "model.safetensors: 2,626,600 bytes of text-model tensors, where `dgemma fit` computes 1,236,896 "
        "for config.json's architecture in w4a16 (group size 64)",
    ),
    (
        "another group size",
        lambda p: _rewrite(p, w4a16_tensors(TOY_CONFIG, 32)),
        "model.safetensors: 1,267,072 bytes of text-model tensors, where `dgemma fit` computes 1,236,896",
    ),
    ("a tensor in two shards", _two_shards, "model-00002-of-00002.safetensors: tensor 'model.decoder"),
    (
        "an index that names another file",
        lambda p: (p / "model.safetensors.index.json").write_text(
            json.dumps({"weight_map": {"model.decoder.norm.weight": "model-00001.safetensors"}})
        ),
        "model.safetensors.index.json: puts 'model.decoder.norm.weight' in model-00001.safetensors, but "
        "it is in model.safetensors",
    ),
]


@pytest.mark.parametrize(
    ("spoil", "expected"), [b[1:] for b in BAD_CONTENTS], ids=[b[0] for b in BAD_CONTENTS]
)
def test_a_checkpoint_whose_tensors_are_not_its_architectures_is_refused(
    tmp_path: Path, spoil: object, expected: str
) -> None:
    path = _toy(tmp_path / "ckpt")
    check_checkpoint(path, _config())  # as made, it passes
    spoil(path)  # type: ignore[operator]
    with pytest.raises(ConfigError) as refused:
        check_checkpoint(path, _config())
    message = str(refused.value)
    assert message.startswith(f"--checkpoint {path}: ") and expected in message, message
    assert "\n" not in message


@pytest.mark.parametrize("weights", [b"", os.urandom(2**20)], ids=["empty", "1 MiB of random bytes"])
def test_the_dry_run_refuses_diffusiongemmas_config_beside_no_real_weights(
    tmp_path: Path, weights: bytes
) -> None:
    path = _checkpoint(tmp_path / "ckpt")
    (path / "model.safetensors").write_bytes(weights)
    done = _cli("deploy", *GOOD, "--checkpoint", str(path), "--dry-run")
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert f"--checkpoint {path}: model.safetensors: " in done.stderr and not done.stdout


def _stand_ins(tmp_path: Path) -> Cloud:
    """The stand-in project, nothing deployed, nothing answering: a refusal must come before it."""
    return Cloud(tmp_path, "http://127.0.0.1:9", "http://127.0.0.1:9", tmp_path / "no-checkpoint")


def test_a_weights_mode_that_does_not_fit_the_memory_is_refused_before_any_cloud_call(tmp_path: Path) -> None:
    cloud = _stand_ins(tmp_path)
    done = cloud.dgemma("deploy", "--weights-mode", "download", "--memory", "16Gi", "--allow-dirty")
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "--weights-mode download with --memory 16Gi: weights mode 'download' needs" in done.stderr
    assert cloud.state["calls"] == [], "no gcloud or terraform call before the refusal"


def test_a_workdir_that_is_a_file_is_refused_in_one_line(tmp_path: Path) -> None:
    cloud = _stand_ins(tmp_path / "cloud")
    file = tmp_path / "notes.txt"
    file.write_text("not a folder")
    for command in (["deploy", "--allow-dirty"], ["destroy", "--yes"], ["keys", "list"]):
        argv = [sys.executable, "-m", "deploy.cli", *command, *GOOD, "--workdir", str(file / "sub")]
        done = subprocess.run(argv, env=cloud.env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, done.stderr[-2000:]
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
        assert f"--workdir {file / 'sub'}: {file} is a file, not a folder" in done.stderr
    assert cloud.state["calls"] == []
