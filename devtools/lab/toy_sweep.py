"""A sweep of toy trainings (deploy/models/scripts/train_toy.py), side by side on the host it runs on.

    python3 -m devtools.lab.toy_sweep run SWEEP.toml WORK_DIR [--python PY] [--dry-run]
    python3 -m devtools.lab.toy_sweep summary WORK_DIR

The sweep is a TOML file. Each `[[run]]` table is one training, started as its own process at once
(a GPU takes them all: ten ran side by side on an H200):

    [defaults]                 # optional: laid under every run's own entries
    mix = {catalogue_share = 0.15}
    args = ["--device", "cuda", "--threads", "1"]

    [[run]]
    name = "k0"                # the run's folder, WORK_DIR/k0 (letters, digits, '.', '_', '-')
    note = "catalogue 0.2"     # optional, copied into the summary
    seed = 0                   # train_toy.py --seed (default 0)
    mix = {question_weights = {team = 0.55, page = 0.225, severity = 0.225}}  # or "k0.toml"
    args = ["--toy-share", "0.15"]  # more train_toy.py arguments, after the defaults'

`mix` is train_toy.py's --mix: entries of deploy/models/scripts/alert_corpus/data/weights.toml to draw
with instead of the file's, as a table or the name of a TOML file beside the sweep's; a run's entries
are laid over the defaults' (a table's one by one). Every table is a record of devtools/lab/sweep.py, as
engine_arms' arms and coldstart's starts are: one name rule, one-line refusals. Each run's folder gets
the mix it trained with (`mix.toml`), its log (`train.log`) and its checkpoint (`out/`, with
train_log.json). WORK_DIR gets a copy of the sweep's TOML (`sweep.toml`) and, once every run has ended,
`summary.json`: per run its note, seed, mix, arguments and exit status, and from its train_log.json the
steps done, the training seconds, the mean prompt length, the dev report and the team question's train
accuracy per logged step (the policy's team reads). `summary` rebuilds it from WORK_DIR, e.g. after runs
this process no longer waits on.

The sweep's file is read as devtools/lab/sweep.py's records (the kit's packages: pydantic). Run from a
checkout on any host whose `--python` (default: this one) has torch and transformers (a pinned
transformers wheel can be put on PYTHONPATH; the environment passes through); `--device cuda` in the
runs' arguments wants a GPU and its driver. `--dry-run` checks the sweep and prints each run's command,
and writes nothing.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from pydantic import Field, StrictInt, field_validator, model_validator

from app.core.config import ConfigError
from devtools.lab.sweep import Entry, Record, entry_label, read_toml, validated

ROOT = Path(__file__).resolve().parents[2]
TRAIN_TOY = ROOT / "deploy" / "models" / "scripts" / "train_toy.py"


def _mix(value: Any) -> Any:
    if not isinstance(value, dict):
        raise ValueError(f"a table or a TOML file's name is needed, got {value!r}")
    return value


def _args(value: Any) -> Any:
    if not isinstance(value, list | tuple) or not all(isinstance(a, str) for a in value):
        raise ValueError(f"a list of strings is needed, got {value!r}")
    if "--mix" in value:
        raise ValueError("no --mix here; the run's mix is its `mix` entry")
    return tuple(value)


class Defaults(Record):
    """`[defaults]`: laid under every run's own entries."""

    mix: dict[str, Any] = Field(default_factory=dict)
    args: tuple[str, ...] = ()

    _mix = field_validator("mix", mode="before")(_mix)
    _args = field_validator("args", mode="before")(_args)


class Run(Entry):
    """One training of a sweep (a `[[run]]` table)."""

    note: str = ""
    seed: StrictInt = 0
    mix: dict[str, Any] = Field(default_factory=dict)
    args: tuple[str, ...] = ()

    _mix = field_validator("mix", mode="before")(_mix)
    _args = field_validator("args", mode="before")(_args)


class Sweep(Record):
    """A sweep file."""

    defaults: Defaults = Field(default_factory=Defaults)
    run: tuple[Run, ...] = ()

    @model_validator(mode="after")
    def _names_once(self) -> Sweep:
        if not self.run:
            raise ValueError("no runs; each run is a [[run]] table")
        names = [r.name for r in self.run]
        twice = next((n for i, n in enumerate(names) if n in names[:i]), None)
        if twice:
            raise ValueError(f"run {twice!r}: a second run of that name")
        return self


def laid_over(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`base` with `over`'s entries in its place, a table's entries one by one."""
    out = dict(base)
    for key, value in over.items():
        both = isinstance(value, dict) and isinstance(base.get(key), dict)
        out[key] = laid_over(base[key], value) if both else value
    return out


def _read_mix_files(data: dict[str, Any], folder: Path, where: str) -> dict[str, Any]:
    """`data` with each mix given as a TOML file's name (relative to the sweep's folder) read in."""
    runs: list[Any] = data["run"] if isinstance(data.get("run"), list) else []
    labelled = [
        ("defaults", data.get("defaults")),
        *((entry_label("run", i, t), t) for i, t in enumerate(runs)),
    ]
    for entry, table in labelled:
        if isinstance(table, dict) and isinstance(table.get("mix"), str):
            table["mix"] = read_toml(folder / table["mix"], f"{where}: {entry}: mix file")
    return data


def load_sweep(path: Path) -> list[Run]:
    """The runs of a sweep file, their defaults laid under them; a ConfigError names what is wrong."""
    where = f"sweep {path}"
    data = _read_mix_files(read_toml(path, "sweep"), path.parent, where)
    sweep = validated(Sweep, data, where, entries="run")
    base = sweep.defaults
    return [
        run.model_copy(update={"mix": laid_over(base.mix, run.mix), "args": base.args + run.args})
        for run in sweep.run
    ]


def toml_text(table: dict[str, Any], prefix: str = "") -> str:
    """A table of numbers, booleans, strings and tables as TOML (a mix, for --mix)."""
    lines, tables = [], []
    for key, value in table.items():
        if isinstance(value, dict):
            tables.append((key, value))
        elif isinstance(value, str):
            lines.append(f"{key} = {json.dumps(value)}")
        elif isinstance(value, bool):
            lines.append(f"{key} = {str(value).lower()}")
        elif isinstance(value, int | float):
            lines.append(f"{key} = {value!r}")
        else:
            raise ConfigError(f"mix: {prefix}{key} = {value!r}; a number, a boolean, a string or a table")
    for key, value in tables:
        lines += ["", f"[{prefix}{key}]", toml_text(value, f"{prefix}{key}.").rstrip("\n")]
    return "\n".join(lines).strip("\n") + "\n"


def command(run: Run, work: Path, python: str) -> list[str]:
    """train_toy.py's command line for a run in WORK/NAME."""
    folder = work / run.name
    mix = ["--mix", str(folder / "mix.toml")] if run.mix else []
    return [python, str(TRAIN_TOY), "train", str(folder / "out"), "--seed", str(run.seed), *mix, *run.args]


def start(runs: list[Run], sweep: Path, work: Path, python: str) -> list[tuple[Run, subprocess.Popen[bytes]]]:
    """Each run's folder, its mix and its process (output to train.log), and the sweep's copy."""
    clash = [r.name for r in runs if (work / r.name).exists()]
    if clash:
        raise ConfigError(f"work dir {work}: {clash[0]} is there already; a sweep starts in new folders")
    work.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(sweep, work / "sweep.toml")
    started = []
    for run in runs:
        folder = work / run.name
        folder.mkdir()
        if run.mix:
            (folder / "mix.toml").write_text(toml_text(run.mix))
        (folder / "run.json").write_text(json.dumps(_described(run), indent=1) + "\n")
        with (folder / "train.log").open("wb") as log:
            argv = command(run, work, python)
            started.append((run, subprocess.Popen(argv, cwd=folder, stdout=log, stderr=subprocess.STDOUT)))
    return started


def _described(run: Run) -> dict[str, Any]:
    return {"note": run.note, "seed": run.seed, "mix": run.mix, "args": list(run.args)}


def run_summary(folder: Path) -> dict[str, Any]:
    """What a run's folder says: its description, exit status, and its train_log.json's figures."""
    out: dict[str, Any] = json.loads((folder / "run.json").read_text())
    if (folder / "exit_status").exists():
        out["exit_status"] = int((folder / "exit_status").read_text())
    log_path = folder / "out" / "train_log.json"
    if not log_path.exists():
        return out
    log = json.loads(log_path.read_text())
    out.update(
        {key: log[key] for key in ("steps_done", "train_seconds", "mean_prompt_tokens") if key in log},
        dev=log.get("dev_accuracy"),
        team_train_curve=[
            [row["step"], row["policy:team"]["acc"]] for row in log["steps"] if "policy:team" in row
        ],
        weights_sha256=log.get("weights_sha256"),
    )
    return out


def summarize(work: Path) -> dict[str, Any]:
    """summary.json of WORK: per run of its sweep.toml that has a folder, in the sweep's order."""
    tables = read_toml(work / "sweep.toml", "sweep").get("run", [])
    names = [str(t["name"]) for t in tables if isinstance(t, dict) and isinstance(t.get("name"), str)]
    summary = {name: run_summary(work / name) for name in names if (work / name / "run.json").exists()}
    (work / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python3 -m devtools.lab.toy_sweep", description=__doc__.split("\n", 1)[0]
    )
    actions = parser.add_subparsers(dest="action", required=True)
    run = actions.add_parser("run", help="start every run of a sweep, wait for them, write the summary")
    run.add_argument("sweep", type=Path, help="the sweep's TOML ([[run]] tables)")
    run.add_argument("work", type=Path, help="where each run's folder, the sweep's copy and the summary go")
    run.add_argument("--python", default=sys.executable, help="the python with torch (default: this one)")
    run.add_argument(
        "--dry-run", action="store_true", help="check the sweep, print the commands, write nothing"
    )
    summary = actions.add_parser("summary", help="(re)write WORK/summary.json from the runs' folders")
    summary.add_argument("work", type=Path)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.action == "summary":
            summarize(args.work)
            print(args.work / "summary.json")
            return 0
        runs = load_sweep(args.sweep)
        for run in runs:
            toml_text(run.mix)  # each mix checked before anything starts
            if args.dry_run:
                print(f"# {run.name}: {run.note}" if run.note else f"# {run.name}")
                if run.mix:
                    print(f"#   mix.toml: {json.dumps(run.mix)}")
                print(shlex.join(command(run, args.work, args.python)))
        if args.dry_run:
            return 0
        started = start(runs, args.sweep, args.work, args.python)
    except ConfigError as e:
        print(f"toy_sweep: {e}", file=sys.stderr)
        return 2
    print(f"{len(started)} runs started in {args.work}", flush=True)
    failed = 0
    try:
        for run, process in started:
            status = process.wait()
            (args.work / run.name / "exit_status").write_text(f"{status}\n")
            failed += status != 0
            print(f"{run.name}: exit status {status}", flush=True)
    finally:
        for _, process in started:  # interrupted: the runs go with the sweep
            if process.poll() is None:
                process.terminate()
    summarize(args.work)
    print(args.work / "summary.json")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
