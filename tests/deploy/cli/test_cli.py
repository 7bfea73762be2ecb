"""The command registry, the one error-to-exit-code table, and what the image's CLI can run."""

from __future__ import annotations

import argparse
import ast
import importlib.metadata
import importlib.util
import re
import sys
from pathlib import Path

import pytest

from deploy import cli
from deploy import commands as registry
from loadtest.gate import GateError, GateProfile, ProfileError

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
OURS = ("app", "deploy", "evals", "loadtest")


def _subcommands(parser: object) -> set[str]:
    action = next(a for a in parser._actions if a.dest == "command")  # type: ignore[attr-defined]
    return set(action.choices)


def test_every_command_module_registers_and_dispatches() -> None:
    commands = registry.all_commands()
    assert [c.NAME for c in commands] == list(registry.NAMES)
    assert _subcommands(cli.build_parser()) == set(registry.NAMES)
    for command in commands:
        assert command.HELP and callable(command.run) and callable(command.add_arguments)


def test_a_command_whose_modules_are_missing_is_not_offered(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "locust" else real(name, *a)
    )
    parser = cli.build_parser()
    assert "loadtest" not in _subcommands(parser)
    assert "loadtest (needs locust)" in (parser.epilog or "")


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ModuleNotFoundError, ValueError):
        return False


def _third_party_imports(module: str, seen: set[str]) -> set[str]:
    """Top-level third-party modules `module` imports, at any depth in our packages, functions too."""
    if module in seen:
        return set()
    seen.add(module)
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None, module
    found: set[str] = set()
    for node in ast.walk(ast.parse(Path(spec.origin).read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        for name in names:
            top = name.split(".")[0]
            if top in OURS:
                if _is_module(name):
                    found |= _third_party_imports(name, seen)
            elif top not in sys.stdlib_module_names and top != "__future__":
                found.add(top)
    return found


def _lock_distributions() -> set[str]:
    lock = (ROOT / "requirements/gateway.lock").read_text()
    return {m.group(1).lower().replace("_", "-") for m in re.finditer(r"^([A-Za-z0-9_.-]+)==", lock, re.M)}


def test_the_image_offers_only_commands_its_lock_can_run() -> None:
    locked = _lock_distributions()
    dists = importlib.metadata.packages_distributions()
    for command in registry.all_commands():
        needed = _third_party_imports(f"deploy.commands.{registry.module(command.NAME)}", set())
        unlocked = {
            m for m in needed if not {d.lower().replace("_", "-") for d in dists.get(m, [m])} & locked
        }
        # Whatever the lock lacks must be declared, so that the image does not offer the command
        # (or, for what it does without, named as optional).
        declared = set(command.REQUIRES) | set(getattr(command, "OPTIONAL", ()))
        assert unlocked <= declared, (command.NAME, unlocked - declared)
    by_name = {command.NAME: command for command in registry.all_commands()}
    assert {"locust", "matplotlib"} <= set(by_name["deploy"].REQUIRES)


def test_exit_codes_come_from_one_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert cli.main(["loadtest", "--host", "http://127.0.0.1:9", "--profile", "nope"]) == 2
    assert "load-test profile: unknown profile 'nope'" in capsys.readouterr().err
    assert cli.main(["fit", "--canvas", "8"]) == 2  # an input fit cannot size
    assert "cannot fit: vLLM's structured decisions need a canvas of at least 16" in capsys.readouterr().err
    assert cli.main(["fit", "--canvas", "256"]) == 1  # sized, and the answer is no
    assert "does not fit" in capsys.readouterr().err
    assert cli.main(["weights", "verify", str(tmp_path)]) == 1
    assert "manifest.json is missing" in capsys.readouterr().err
    # A folder that is not there is named before credentials are looked for (none here).
    assert cli.main(["weights", "upload", str(tmp_path / "nope"), "gs://b/p"]) == 2
    assert f"weights upload {tmp_path / 'nope'}: no such folder" in " ".join(capsys.readouterr().err.split())
    assert cli.main(["weights", "upload", str(tmp_path), "s3://b/p"]) == 2


def test_an_invalid_setting_is_a_refusal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DGEMMA_ENGINE_CANVAS", "1")
    assert cli.main(["fit"]) == 2
    assert "invalid configuration: invalid setting DGEMMA_ENGINE_CANVAS" in capsys.readouterr().err


def test_profile_overrides_are_checked() -> None:
    profile = GateProfile.load("cpu-smoke").overridden(["latency_p95_ms=1"], latency_seconds=3)
    assert profile.targets["latency_p95_ms"] == {"max": 1.0, "source": "command line override"}
    assert profile.latency_seconds == 3 and GateProfile.load("cpu-smoke").latency_seconds == 8
    with pytest.raises(ProfileError, match="unknown target 'nope'"):
        GateProfile.load("cpu-smoke").overridden(["nope=1"])
    with pytest.raises(ProfileError, match="is not a number"):
        GateProfile.load("cpu-smoke").overridden(["latency_p95_ms=fast"])
    assert issubclass(GateError, RuntimeError) and not issubclass(GateError, SystemExit)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_every_commands_help_prints(capsys: pytest.CaptureFixture[str]) -> None:
    """`dgemma --help`, each `dgemma COMMAND --help` and each `dgemma COMMAND ACTION --help`, as
    `main` builds the parser for them (a `%` in a summary once crashed the first)."""
    argvs: list[list[str]] = [["--help"]]
    for command in registry.all_commands():
        argvs.append([command.NAME, "--help"])
        parser = _subparsers(cli.build_parser(command.NAME))[command.NAME]
        argvs += [[command.NAME, name, "--help"] for name in _subparsers(parser)]
    assert ["alerts", "report", "--help"] in argvs and ["toy", "train", "--help"] in argvs
    for argv in argvs:
        with pytest.raises(SystemExit) as done:
            cli.main(argv)
        assert done.value.code == 0, argv
    out = capsys.readouterr().out
    assert "gpu-check" in out and "%%" not in out, "a summary's `%` is printed as it is written"
    assert "a candidate revision at 0 %," in " ".join(out.split())


def test_every_typed_failure_of_the_kit_carries_its_exit_code() -> None:
    """One base (`KitError`): the CLI's exit code is the error's own, for every room's failures."""
    from app.alerts.policy import PolicyError
    from app.core.config import ConfigError
    from app.core.errors import KitError, ServiceError
    from app.core.identity import IdentityError
    from deploy.errors import DeployError, GpuCheckError, WeightsError
    from deploy.runtime.gpu_budget import FitError
    from deploy.runtime.supervisor import StartRefused
    from evals.errors import EvalDataError, EvalError

    refused = (ConfigError, PolicyError, WeightsError, FitError, StartRefused, ProfileError, IdentityError)
    answered_no = (GateError, DeployError, GpuCheckError, EvalError, ServiceError)
    assert all(issubclass(e, KitError) and e.exit_code == 2 for e in (*refused, EvalDataError))
    assert all(issubclass(e, KitError) and e.exit_code == 1 for e in answered_no)
    assert (
        PolicyError.label == ConfigError.label == "invalid configuration"
    )  # a subclass reports as its room's


def test_the_routers_image_serves_without_the_lab(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The router's image leaves `evals/` out (the Dockerfile's router-source): `alerts serve` is
    offered and parses; the eval and the report refuse with where to run them, exit 2."""
    for name in [m for m in sys.modules if m == "evals" or m.startswith("evals.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "evals", None)  # as if not installed: its import fails
    with pytest.raises(SystemExit) as help_exit:
        cli.main(["alerts", "serve", "--help"])
    assert help_exit.value.code == 0
    audit = tmp_path / "audit.jsonl"
    audit.write_text("")
    assert cli.main(["alerts", "report", str(audit)]) == 2
    assert cli.main(["alerts", "eval", str(audit)]) == 2
    err = capsys.readouterr().err
    assert err.count("the alert router's image does not carry: run them from a checkout") == 2


def test_toy_train_passes_a_mix_and_a_device_to_the_trainer(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`dgemma toy train` runs train_toy.py with the sweep's knobs (devtools/lab/toy_sweep.py runs take
    them)."""
    import subprocess

    from deploy.devstack import stack

    ran: list[list[str]] = []
    monkeypatch.setattr(stack, "ensure_engine_env", lambda python: None)

    def trainer(argv: list[str]) -> subprocess.CompletedProcess[bytes]:
        ran.append(argv)
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(subprocess, "run", trainer)
    mix = tmp_path / "mix.toml"
    mix.write_text("[kinds]\n")
    assert cli.main(["toy", "train", str(tmp_path / "out"), "--mix", str(mix), "--device", "cuda"]) == 0
    (argv,) = ran
    assert argv[1].endswith("train_toy.py") and argv[argv.index("--mix") + 1] == str(mix.resolve())
    assert argv[argv.index("--device") + 1] == "cuda"
    assert cli.main(["toy", "train", str(tmp_path / "out"), "--mix", str(tmp_path / "none.toml")]) == 2
    assert len(ran) == 1  # refused before the trainer ran
