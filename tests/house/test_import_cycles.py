"""No two modules of the kit import each other, directly or round a loop: every import counts,
function-level and TYPE_CHECKING ones too (two modules that name each other are one module in two
files, whichever loads first)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
KIT = ("app", "deploy", "evals", "loadtest", "devtools")
ENGINE_SCRIPTS = ("deploy/models/scripts", "deploy/devstack/engine")  # run by the engine's python


def kit_sources(root: Path = ROOT) -> dict[str, str]:
    """Each module of the kit by its dotted name (a package by its own), and its source."""
    sources = {}
    for room in KIT:
        for path in (root / room).rglob("*.py"):
            if any(path.is_relative_to(root / scripts) for scripts in ENGINE_SCRIPTS):
                continue
            parts = path.relative_to(root).with_suffix("").parts
            sources[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path.read_text()
    return sources


def import_graph(sources: dict[str, str]) -> dict[str, set[str]]:
    """Module -> the kit's modules it imports (`from a import b`: a.b where that is a module, else a)."""
    graph: dict[str, set[str]] = {}
    for module, source in sources.items():
        named: set[str] = set()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                named |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                subs = {f"{node.module}.{a.name}" for a in node.names}
                named |= {s if s in sources else node.module for s in subs}
        graph[module] = set()
        for name in named:
            while name and name not in sources:  # a name in a module: the module that defines it
                name = name.rpartition(".")[0]
            if name and name != module:
                graph[module].add(name)
    return graph


def import_cycles(sources: dict[str, str]) -> list[list[str]]:
    """The loops of the import graph: each strongly connected set of more than one module, sorted."""
    graph = import_graph(sources)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in graph[module]:
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            loop = []
            while True:
                top = stack.pop()
                loop.append(top)
                if top == module:
                    break
            if len(loop) > 1:
                cycles.append(sorted(loop))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(cycles)


def test_no_module_of_the_kit_imports_itself_round_a_loop() -> None:
    assert import_cycles(kit_sources()) == []


def test_a_loop_is_found_through_type_checking_and_function_imports() -> None:
    """The loop the GPU check had: a report importing the check's records for its types only, the
    check importing the report inside a function."""
    sources = {
        "deploy.gpucheck": "",
        "deploy.gpucheck.check": "def run():\n    from deploy.gpucheck.report import write\n",
        "deploy.gpucheck.report": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n"
            "    from deploy.gpucheck.check import Check\n"
        ),
        "deploy.gpucheck.record": "",
    }
    assert import_cycles(sources) == [["deploy.gpucheck.check", "deploy.gpucheck.report"]]
    sources["deploy.gpucheck.report"] = "from deploy.gpucheck import record\n"
    assert import_cycles(sources) == []
