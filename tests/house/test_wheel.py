"""The package ships what it runs: the wheel built from the checkout holds every file of the kit's
folders but the checkout's own (`CHECKOUT_ONLY`, each with its reason), and the kit installed from
it, in a venv of its own and run from outside the checkout, imports only its own files, finds every
file its modules name inside their packages, and answers `--help` for every console entry point and
every `dgemma` command and action. About 20 s on 2 cores: the build (uv, setuptools from its cache)
about 4, the probe 3, the 35 or so `--help` processes about 10."""

from __future__ import annotations

import configparser
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("app", "deploy", "evals", "loadtest")
# The files of the kit's folders that stay in the checkout, and why; every other one ships.
CHECKOUT_ONLY = {
    "deploy/models/scripts/train_toy.py": "the toy's training: `dgemma toy train` runs from a checkout",
    "deploy/models/scripts/alert_corpus/*": "the generated alerts it trains on, and their tables",
    "deploy/models/scripts/data/*": "the public rule catalogue those alerts draw from",
    "evals/alerts/*.jsonl": "the labelled sets: files `dgemma alerts eval` is given",
    "evals/alerts/*.md": "their README and NOTICE",
    "evals/alerts/results/*": "recorded results",
}
# Imported by Locust in Locust's own process (it monkey-patches the interpreter), never by the kit.
NOT_IMPORTED = ("loadtest.locustfile",)

# Run by the installed venv's python: every module of the installed kit imported, then where each
# came from, every absolute path a module names at its top level, the toy verified where it is
# installed, and the `dgemma` command lines whose --help to ask for.
PROBE = f"""
import argparse, importlib, json, pkgutil, sys
from pathlib import Path

for top in {PACKAGES!r}:
    for info in pkgutil.walk_packages(importlib.import_module(top).__path__, top + "."):
        if info.name not in {NOT_IMPORTED!r}:
            importlib.import_module(info.name)
ours = {{n: m for n, m in list(sys.modules.items()) if n.split(".")[0] in {PACKAGES!r}}}

from deploy import cli, commands
from deploy.devstack.stack import verify_toy_model

def actions(parser):
    found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(found[0].choices) if found else {{}}

argvs = []
for command in commands.all_commands():
    if not commands.missing(command):  # else not offered here
        parser = actions(cli.build_parser(command.NAME))[command.NAME]
        argvs += [[command.NAME], *([command.NAME, action] for action in actions(parser))]
print(json.dumps({{
    "modules": {{n: m.__file__ for n, m in ours.items() if getattr(m, "__file__", None)}},
    "paths": {{f"{{n}}.{{k}}": str(v) for n, m in ours.items() for k, v in vars(m).items()
               if isinstance(v, Path) and v.is_absolute()}},
    "toy": str(verify_toy_model()),
    "argvs": argvs,
}}))
"""


def _checkout_only(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in CHECKOUT_ONLY)


def _sources() -> list[str]:
    """The kit's files in the checkout: tracked, and new ones git does not ignore."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "-co", "--exclude-standard", "--", *PACKAGES],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return sorted({n for n in listed.split("\0") if n and (ROOT / n).is_file()})


def _env(**extra: str) -> dict[str, str]:
    """The environment of a run from the installed kit: nothing of the checkout's Python set."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON") and k != "VIRTUAL_ENV"}
    return {**kept, **extra}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a copy of the checkout's sources (the build writes build/ and egg-info
    beside them), as the images' install builds it from theirs."""
    src = tmp_path_factory.mktemp("src")
    for name in ["pyproject.toml", "README.md", *_sources()]:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, src / name)
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "uv", "build", "--wheel", "--python", sys.executable, "--out-dir", str(out),
         str(src)],
        capture_output=True, text=True, cwd=out,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-4000:]
    (found,) = out.glob("*.whl")
    return found


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv holding the wheel, no dependencies: those come from the checkout's venv, whose
    site-packages a .pth names. A folder named by a .pth has its own .pth files left unread, so the
    checkout's editable install (a .pth that installs a finder) stays out."""
    home = tmp_path_factory.mktemp("installed")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(home / "venv")], check=True)
    python = home / "venv" / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "uv", "pip", "install", "-q", "--no-deps", "--offline",
         "--python", str(python), str(wheel)],
        check=True, cwd=home,
    )  # fmt: skip
    site = Path(
        subprocess.run(
            [str(python), "-I", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    )  # fmt: skip
    dependencies = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "checkout_dependencies.pth").write_text("".join(f"{p}\n" for p in sorted(dependencies)))
    return home / "venv"


def _site(venv: Path) -> Path:
    (site,) = (venv / "lib").glob("python*/site-packages")
    return site


@pytest.fixture(scope="module")
def probe(venv: Path) -> dict[str, object]:
    """PROBE's findings, from the installed venv's python."""
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-I", "-c", PROBE],
        capture_output=True, text=True, cwd=venv.parent, env=_env(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    found: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return found


def test_the_wheel_holds_every_file_of_the_kit_but_the_checkouts(wheel: Path) -> None:
    names = {n for n in zipfile.ZipFile(wheel).namelist() if ".dist-info/" not in n}
    sources = set(_sources())
    missing = sorted(n for n in sources - names if not _checkout_only(n))
    assert not missing, (
        f"not in the wheel: {missing}; ship each (pyproject.toml's package-data) or name it in CHECKOUT_ONLY"
    )
    assert not sorted(n for n in names if _checkout_only(n)), "the wheel carries a checkout's files"
    assert not names - sources, f"the wheel holds what the checkout lacks: {sorted(names - sources)}"
    stale = [p for p in CHECKOUT_ONLY if not any(fnmatch.fnmatch(n, p) for n in sources)]
    assert not stale, f"CHECKOUT_ONLY names what the checkout no longer holds: {stale}"
    # What issue 50 asked: alert_corpus ships with its data, or not at all.
    assert not any("/alert_corpus/" in n for n in names)
    assert "deploy/models/dgemma-toy-alerts/model.safetensors" in names  # `dgemma dev`'s model


def test_the_installed_kit_reads_only_its_own_files(venv: Path, probe: dict[str, object]) -> None:
    site = _site(venv)
    modules = probe["modules"]
    assert isinstance(modules, dict) and len(modules) > 100
    outside = {n: f for n, f in modules.items() if not Path(f).is_relative_to(site)}
    assert not outside, f"modules imported from outside the installed wheel: {outside}"
    paths = probe["paths"]
    assert isinstance(paths, dict)
    inside = [site / top for top in PACKAGES]
    packaged = {n: Path(p) for n, p in paths.items() if any(Path(p).is_relative_to(i) for i in inside)}
    assert "app.alerts.settings.DEFAULT_POLICY" in packaged and "deploy.models.TOY_DIR" in packaged
    absent = sorted(n for n, p in packaged.items() if not p.exists())
    assert not absent, f"paths the installed modules name that the wheel lacks: {absent}"
    # A path outside the packages is the checkout's (terraform/, the Dockerfile): only the cloud
    # deploy names one, a checkout's command.
    checkouts = sorted(n for n in paths if n not in packaged and not n.startswith("deploy.cloud."))
    assert not checkouts, f"installed modules that name the checkout: {checkouts}"
    assert Path(str(probe["toy"])) == site / "deploy/models/dgemma-toy-alerts"  # and it verifies


def test_every_entry_points_help_runs_from_the_installed_wheel(
    wheel: Path, venv: Path, probe: dict[str, object]
) -> None:
    """Each console script of the wheel's metadata, then each `dgemma` command and action."""
    points = configparser.ConfigParser()
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt")]
        points.read_string(archive.read(metadata).decode())
    scripts = list(points["console_scripts"])
    assert scripts == ["dgemma"]
    argvs = probe["argvs"]
    assert isinstance(argvs, list) and ["toy", "train"] in argvs and ["alerts", "report"] in argvs
    runs = [[script] for script in scripts] + [["dgemma", *argv] for argv in argvs]
    for script, *argv in runs:
        done = subprocess.run(
            [str(venv / "bin" / script), *argv, "--help"],
            capture_output=True, text=True, cwd=venv.parent, env=_env(),
        )  # fmt: skip
        assert done.returncode == 0, (argv, done.stderr[-2000:])
        assert done.stdout.startswith(f"usage: {' '.join([script, *argv])}"), argv


def test_the_toy_from_the_installed_wheel(venv: Path) -> None:
    """`dgemma toy data` reads its task from the installed scripts; `toy train` refuses, exit 2,
    before it looks for the engine's environment (named here as one that exists, so that a refusal
    gone missing fails at once instead of creating one)."""
    dgemma = str(venv / "bin" / "dgemma")
    data = subprocess.run(
        [dgemma, "toy", "data", "-n", "3"], capture_output=True, text=True, cwd=venv.parent, env=_env()
    )
    assert data.returncode == 0, data.stderr
    assert [sorted(json.loads(line)) for line in data.stdout.splitlines()] == [["expected", "request"]] * 3
    train = subprocess.run(
        [dgemma, "toy", "train", str(venv.parent / "toy")],
        capture_output=True, text=True, cwd=venv.parent, env=_env(DGEMMA_ENGINE_PYTHON="/bin/false"),
    )  # fmt: skip
    assert train.returncode == 2, train.stderr
    assert "run it from a checkout" in " ".join(train.stderr.split())
    assert not (venv.parent / "toy").exists()
