"""The one record of a campaign's entries: an engine arm (engine_arms), a toy training (toy_sweep), a
start (coldstart). Each is an `Entry`, a StrictModel with a name of one rule, read from a TOML file's
array of tables or from a command line's `NAME:OPTION,...` shorthand; every refusal is one
`ConfigError` line that names the file or flag, the entry and the key."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError, field_validator, model_validator

from app.core.config import ConfigError
from app.core.models import Loc, StrictModel, dotted, validation_problems

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
NAME_RULE = "a name of letters, digits, '.', '_' or '-', a letter or digit first"

M = TypeVar("M", bound=StrictModel)


class Record(StrictModel):
    """A table of a campaign's file: an unknown key is refused with the keys it may have."""

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            known = [f.alias or name for name, f in cls.model_fields.items()]
            extra = sorted(set(data) - set(known))
            if extra:
                raise ValueError(f"unknown key {extra[0]!r} (known: {', '.join(known)})")
        return data


class Entry(Record):
    """One run of a campaign: its name is its folder and how the report names it."""

    name: str

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, value: Any) -> Any:
        if not isinstance(value, str) or not NAME.fullmatch(value):
            raise ValueError(f"{NAME_RULE}, got {value!r}")
        return value


def read_toml(path: Path, what: str) -> dict[str, Any]:
    """A campaign's TOML file; a file that cannot be read or parsed, in one line."""
    try:
        return tomllib.loads(path.read_text())
    except OSError as e:
        raise ConfigError(f"{what} {path}: {e.strerror or e}") from e
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{what} {path}: not TOML: {' '.join(str(e).split())}") from e


def shorthand(spec: str) -> tuple[str, list[str]]:
    """`NAME:OPTION,OPTION` -> (NAME, [OPTION, ...]), spaces around each part dropped."""
    name, _, rest = spec.partition(":")
    return name.strip(), [part.strip() for part in rest.split(",") if part.strip()]


def entry_label(entries: str, index: int, table: Any) -> str:
    """How a refusal names the entry `index` of the array `entries`: `run 'k0'` by its name, or
    `arm 2` by its place when it has none."""
    name = table.get("name") if isinstance(table, dict) else None
    return f"{entries} {name!r}" if isinstance(name, str) else f"{entries} {index + 1}"


def _entry_path(data: Any, entries: str) -> Callable[[Loc], str]:
    """Where an error is, the entry named as the file names it: `run 'k0': seed`, `arm 2: fields`."""

    def path(loc: Loc) -> str:
        if len(loc) >= 2 and loc[0] == entries and isinstance(loc[1], int):
            tables = data.get(entries) if isinstance(data, dict) else None
            table = tables[loc[1]] if isinstance(tables, list) and loc[1] < len(tables) else None
            return ": ".join(filter(None, (entry_label(entries, loc[1], table), dotted(loc[2:]))))
        return dotted(loc)

    return path


def validated(model: type[M], data: Any, where: str, entries: str = "") -> M:
    """`data` as `model`, or a ConfigError `where: ...` naming each problem (an entry of the array
    `entries` by its name, or its place when it has none)."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise ConfigError(f"{where}: {validation_problems(e, path=_entry_path(data, entries))}") from e
