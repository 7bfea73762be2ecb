"""Regenerate README's settings tables from the settings sections; `--check` fails when stale.

The sections, each owned by the room of the process that reads it, are listed here and nowhere
else; a field inherited from a listed section appears once, under the section that declares it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from app.config import KitSettings, env_names
from app.settings import GatewaySettings
from deploy.settings import EngineSettings, SupervisorSettings
from loadtest.settings import LoadtestSettings

README = Path(__file__).resolve().parent.parent / "README.md"
START, END = "<!-- settings:start -->", "<!-- settings:end -->"
# (heading, section, the file that declares it, who reads it)
SECTIONS: list[tuple[str, type[KitSettings], str, str]] = [
    ("Every process", KitSettings, "app/config.py", "every entry point"),
    ("Gateway", GatewaySettings, "app/settings.py", "`dgemma serve` (started by the supervisor)"),
    ("Engine", EngineSettings, "deploy/settings.py", "the supervisor, `dgemma fit`, `model`, `quantize`"),
    ("Supervisor", SupervisorSettings, "deploy/settings.py", "`dgemma run`, `dgemma dev`"),
    ("Load-test gate", LoadtestSettings, "loadtest/settings.py", "`dgemma loadtest`"),
]


def declared(section: type[KitSettings]) -> list[str]:
    """Fields a section declares itself (or takes from a base that is not a listed section)."""
    listed = {s for _, s, _, _ in SECTIONS if s is not section}
    inherited = {
        name
        for base in section.__mro__[1:]
        if base in listed
        for name in base.model_fields  # type: ignore[attr-defined]
    }
    return [name for name in section.model_fields if name not in inherited]


def tables() -> str:
    out = []
    for heading, section, path, reader in SECTIONS:
        names = env_names(section)
        rows = [
            f"**{heading}** (`{section.__name__}`, {path}; read by {reader})",
            "",
            "| env var | default | what it does |",
            "| --- | --- | --- |",
        ]
        for name in declared(section):
            f = section.model_fields[name]
            env = " / ".join(f"`{n}`" for n in names[name])
            default = f.get_default(call_default_factory=True)
            if isinstance(default, bool):
                default = str(default).lower()  # as the env var is written
            shown = "(none)" if default in (None, [], "") else f"`{default}`"
            desc = " ".join((f.description or "").split()).replace("|", "\\|")
            rows.append(f"| {env} | {shown} | {desc} |")
        out.append("\n".join(rows))
    return "\n\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    text = README.read_text()
    if START not in text or END not in text:
        print(f"README.md lacks the {START} ... {END} markers", file=sys.stderr)
        return 1
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{START}\n{tables()}\n{END}{tail}"
    if args.check:
        if new != text:
            print("README.md's settings tables are stale: run `make docs`", file=sys.stderr)
            return 1
        return 0
    README.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
