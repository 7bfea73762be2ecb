"""Regenerate README's settings table from `app/settings.py`; `--check` fails when it is stale."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pydantic import AliasChoices

from app.settings import Settings

README = Path(__file__).resolve().parent.parent / "README.md"
START, END = "<!-- settings:start -->", "<!-- settings:end -->"


def table() -> str:
    rows = ["| env var | default | what it does |", "| --- | --- | --- |"]
    prefix = Settings.model_config.get("env_prefix", "")
    for name, f in Settings.model_fields.items():
        alias = f.validation_alias
        if isinstance(alias, AliasChoices):
            env = " / ".join(f"`{a}`" for a in alias.choices)
        else:
            env = f"`{prefix}{name.upper()}`"
        default = f.default
        shown = "(none)" if default in (None, [], "") else f"`{default}`"
        desc = " ".join((f.description or "").split()).replace("|", "\\|")
        rows.append(f"| {env} | {shown} | {desc} |")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    text = README.read_text()
    if START not in text or END not in text:
        print(f"README.md lacks the {START} ... {END} markers", file=sys.stderr)
        return 1
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{START}\n{table()}\n{END}{tail}"
    if args.check:
        if new != text:
            print("README.md's settings table is stale: run `make docs`", file=sys.stderr)
            return 1
        return 0
    README.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
