"""The toy sweeps as configs (devtools/lab/toy_sweep.py): a sweep's TOML to train_toy.py's command lines,
refused in one line when it is not one, each run started in its own folder with the mix it trains
with, a summary from the runs' logs; and the result folders' sweeps reproduce what their runs drew."""

from __future__ import annotations

import ast
import json
import os
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from app.core.config import ConfigError
from deploy.devstack.stack import script_module
from devtools.lab.toy_sweep import TRAIN_TOY, command, load_sweep, main, toml_text

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
RESULTS = ROOT / "evals" / "alerts" / "results"
SWEEPS = ("toy-sweep-2026-12-02", "toy-sweep-catalogue")


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sweep.toml"
    path.write_text(text)
    return path


def test_a_sweep_lays_each_runs_mix_and_args_over_the_defaults(tmp_path: Path) -> None:
    (tmp_path / "k.toml").write_text("catalogue_share = 0.3\n")
    sweep = _write(
        tmp_path,
        '[defaults]\nargs = ["--device", "cuda"]\n[defaults.mix]\ncatalogue_share = 0.15\n'
        "question_weights = { page = 0.3, team = 0.4, severity = 0.3 }\n"
        '[[run]]\nname = "c0"\n'
        '[[run]]\nname = "t0"\nseed = 2\nmix = { question_weights = { team = 0.55 } }\n'
        'args = ["--steps", "9"]\n'
        '[[run]]\nname = "k"\nmix = "k.toml"\n',
    )
    c0, t0, k = load_sweep(sweep)
    assert c0.mix == {
        "catalogue_share": 0.15,
        "question_weights": {"page": 0.3, "team": 0.4, "severity": 0.3},
    }
    assert t0.mix["question_weights"] == {"page": 0.3, "team": 0.55, "severity": 0.3}
    assert k.mix["catalogue_share"] == 0.3
    work = tmp_path / "work"
    assert command(t0, work, "py") == [
        "py", str(TRAIN_TOY), "train", str(work / "t0" / "out"), "--seed", "2",
        "--mix", str(work / "t0" / "mix.toml"), "--device", "cuda", "--steps", "9",
    ]  # fmt: skip
    assert tomllib.loads(toml_text(t0.mix)) == t0.mix


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[run]\nname = 'a'\n", "not TOML: "),
        ("[[run]]\nname = 'a'\nsed = 1\n", "run 'a': unknown key 'sed' (known: name, note, seed, mix, args)"),
        (
            "[defaults]\nmixes = {}\n[[run]]\nname = 'a'\n",
            ": defaults: unknown key 'mixes' (known: mix, args)",
        ),
        ("[[runs]]\nname = 'a'\n", "unknown key 'runs' (known: defaults, run)"),
        ("[defaults]\n", "no runs; each run is a [[run]] table"),
        (
            "[[run]]\nname = 'a/b'\n",
            "run 'a/b': name: a name of letters, digits, '.', '_' or '-', a letter or digit first",
        ),
        ("[[run]]\nname = 'a'\n[[run]]\nname = 'a'\n", "run 'a': a second run of that name"),
        ("[[run]]\nname = 'a'\nseed = '1'\n", "run 'a': seed: Input should be a valid integer"),
        (
            "[[run]]\nname = 'a'\nargs = '--steps 3'\n",
            "run 'a': args: a list of strings is needed, got '--steps 3'",
        ),
        ("[[run]]\nname = 'a'\nargs = ['--mix', 'm.toml']\n", "run 'a': args: no --mix here"),
        ("[[run]]\nname = 'a'\nmix = 'none.toml'\n", "run 'a': mix file "),
        (
            "[[run]]\nname = 'a'\nmix = 0.3\n",
            "run 'a': mix: a table or a TOML file's name is needed, got 0.3",
        ),
    ],
)
def test_a_sweep_that_is_not_one_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    sweep = _write(tmp_path, text)
    with pytest.raises(ConfigError) as refused:
        load_sweep(sweep)
    assert message in str(refused.value) and "\n" not in str(refused.value)
    assert main(["run", str(sweep), str(tmp_path / "work")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"toy_sweep: sweep {sweep}") and err.count("\n") == 1
    assert not (tmp_path / "work").exists()


def test_a_dry_run_prints_each_runs_command_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep = RESULTS / "toy-sweep-catalogue" / "sweep.toml"
    work = tmp_path / "work"
    assert main(["run", str(sweep), str(work), "--python", "python3", "--dry-run"]) == 0
    commands = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("#")]
    assert len(commands) == 8
    assert commands[0] == f"python3 {TRAIN_TOY} train {work}/s0/out --seed 0 --device cuda --threads 1"
    assert commands[2].endswith(f"--seed 0 --mix {work}/a/mix.toml --device cuda --threads 1")
    assert not work.exists()


FAKE_TRAIN = """\
import json, pathlib, sys
out = pathlib.Path(sys.argv[3])
out.mkdir(parents=True)
steps = [{"step": 50, "policy:team": {"acc": 0.4}}, {"step": 100, "toy:noul": {"acc": 0.9}}]
log = {"args": sys.argv[4:], "steps": steps, "steps_done": 100, "train_seconds": 1.5,
       "mean_prompt_tokens": 189.0, "dev_accuracy": {"policy": {}}, "weights_sha256": "ab"}
(out / "train_log.json").write_text(json.dumps(log))
sys.exit(3 if "--seed" in sys.argv and sys.argv[sys.argv.index("--seed") + 1] == "9" else 0)
"""


def test_a_run_starts_each_training_in_its_folder_and_summarises_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With a stand-in for the engine's python that writes a train_log.json (the second run fails)."""
    python = tmp_path / "python"
    (tmp_path / "fake.py").write_text(FAKE_TRAIN)
    python.write_text(f'#!/bin/sh\nexec {sys.executable} {tmp_path / "fake.py"} "$@"\n')
    os.chmod(python, 0o755)
    sweep = _write(
        tmp_path,
        '[[run]]\nname = "a"\nnote = "a note"\nmix = { catalogue_share = 0.3 }\n'
        '[[run]]\nname = "b"\nseed = 9\n',
    )
    work = tmp_path / "work"
    assert main(["run", str(sweep), str(work), "--python", str(python)]) == 1
    assert (work / "sweep.toml").read_bytes() == sweep.read_bytes()
    assert tomllib.loads((work / "a" / "mix.toml").read_text()) == {"catalogue_share": 0.3}
    assert not (work / "b" / "mix.toml").exists()
    summary = json.loads((work / "summary.json").read_text())
    assert list(summary) == ["a", "b"]
    assert summary["a"] == {
        "note": "a note", "seed": 0, "mix": {"catalogue_share": 0.3}, "args": [], "exit_status": 0,
        "steps_done": 100, "train_seconds": 1.5, "mean_prompt_tokens": 189.0, "dev": {"policy": {}},
        "team_train_curve": [[50, 0.4]], "weights_sha256": "ab",
    }  # fmt: skip
    assert summary["b"]["exit_status"] == 3
    assert "b: exit status 3" in capsys.readouterr().out
    assert main(["run", str(sweep), str(work), "--python", str(python)]) == 2  # the folders are taken


def _variant(log: Path) -> tuple[float, float | None, dict[str, float], float]:
    """What v.py printed first: catalogue share, [unlabelled share,] question weights, kinds' weight sum."""
    line = log.read_text().splitlines()[0]
    m = re.fullmatch(r"variant: ([\d.]+) (?:([\d.]+) )?(\{.*\}) ([\d.]+)", line)
    assert m, line
    unl = float(m[2]) if m[2] else None
    return float(m[1]), unl, ast.literal_eval(m[3]), float(m[4])


@pytest.fixture
def corpus() -> Iterator[ModuleType]:
    module = script_module("alert_corpus")
    yield module
    module.configure()


@pytest.mark.parametrize("folder", SWEEPS)
def test_the_result_folders_sweeps_draw_what_their_runs_drew(corpus: ModuleType, folder: str) -> None:
    """Each run's mix gives the weights its log's first line recorded (v.py at 8651380)."""
    runs = load_sweep(RESULTS / folder / "sweep.toml")
    assert sorted(r.name for r in runs) == sorted(p.stem for p in (RESULTS / folder / "logs").glob("*.log"))
    for run in runs:
        share, unlabelled, questions, total = _variant(RESULTS / folder / "logs" / f"{run.name}.log")
        corpus.configure(run.mix)
        weights = corpus.weights_table()
        assert weights["catalogue_share"] == share, run.name
        if unlabelled is not None:
            assert weights["catalogue_unlabelled"] == unlabelled, run.name
        assert weights["question_weights"] == pytest.approx(questions), run.name
        assert round(sum(k.weight for k in corpus.kinds()), 1) == total, run.name
        assert run.args[:4] == ("--device", "cuda", "--threads", "1")
