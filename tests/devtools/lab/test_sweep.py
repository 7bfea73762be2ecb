"""The one record of the three campaigns (devtools/lab/sweep.py): an engine arm, a toy training and a
start take the same names, refuse the same ones in one line, and a file's table and the command
line's shorthand give the same record."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from app.core.config import ConfigError
from devtools.lab.coldstart import parse_start
from devtools.lab.engine_arms import Arm, load_arms, parse_arms
from devtools.lab.sweep import Entry, read_toml, shorthand
from devtools.lab.toy_sweep import Run, load_sweep

pytestmark = pytest.mark.unit

GOOD = ("baseline", "h200.seqs-64", "k0", "restored_2", "9")
BAD = ("", "-x", ".x", "a b", "a/b", "é")


def _arm_file(tmp_path: Path, name: str) -> list[Arm]:
    (tmp_path / "arms.toml").write_text(f"[[arm]]\nname = {name!r}\n")
    return load_arms(tmp_path / "arms.toml")


def _run_file(tmp_path: Path, name: str) -> list[Run]:
    (tmp_path / "sweep.toml").write_text(f"[[run]]\nname = {name!r}\n")
    return load_sweep(tmp_path / "sweep.toml")


READERS: dict[str, Callable[[Path, str], list[Entry]]] = {
    "--arm": lambda _, name: list(parse_arms([name])),
    "arms file": lambda tmp, name: list(_arm_file(tmp, name)),
    "sweep": lambda tmp, name: list(_run_file(tmp, name)),
    "--start": lambda _, name: [parse_start(name)],
}


@pytest.mark.parametrize("reader", READERS)
def test_every_campaign_takes_the_same_names(tmp_path: Path, reader: str) -> None:
    for name in GOOD:
        (entry,) = READERS[reader](tmp_path, name)
        assert isinstance(entry, Entry) and entry.name == name
    for name in BAD:
        with pytest.raises(ConfigError) as refused:
            READERS[reader](tmp_path, name)
        text = str(refused.value)
        assert "name: a name of letters, digits, '.', '_' or '-', a letter or digit first" in text, text
        assert "\n" not in text


def test_a_table_and_its_shorthand_are_one_record(tmp_path: Path) -> None:
    (tmp_path / "arms.toml").write_text(
        '[[arm]]\nname = "two"\nfields = { engine_async_scheduling = false }\nreplicas = 2\n'
        "env = { TORCH_COMPILE_JOB_ID = 7 }\n"
    )
    (from_file,) = load_arms(tmp_path / "arms.toml")
    (from_flag,) = parse_arms(["two: engine_async_scheduling=false , replicas=2, env.TORCH_COMPILE_JOB_ID=7"])
    assert from_file == from_flag
    assert (
        from_file.settings == {"engine_async_scheduling": "false"}
        and from_file.extra_env["TORCH_COMPILE_JOB_ID"] == "7"
    )
    assert shorthand(" a : b=1,, c ") == ("a", ["b=1", "c"])


def test_a_file_that_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^sweep .*none.toml: No such file"):
        read_toml(tmp_path / "none.toml", "sweep")
    (tmp_path / "bad.toml").write_text("[[arm]\n")
    with pytest.raises(ConfigError) as refused:
        read_toml(tmp_path / "bad.toml", "arms file")
    assert "not TOML" in str(refused.value) and "\n" not in str(refused.value)
