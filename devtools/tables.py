"""Markdown tables, the one way devtools writes them: the lab's reports (engine arms, cold starts,
profiles) and the reliability report.

`header("arm", "runs", "p50", align="lr")` is a table's first two lines, `row(...)` each line after.
"""

from __future__ import annotations

ALIGN = {"l": "---", "r": "---:"}


def row(*cells: object) -> str:
    """One line of a table: the cells as text, between pipes (an empty cell as `| |`)."""
    return "|" + "".join(f" {text} |" if (text := str(c)) else " |" for c in cells)


def header(*names: str, align: str = "l") -> list[str]:
    """A table's head and its separator. `align` has a letter per column, `l` (left) or `r`
    (right: figures); the columns past its end take its last letter (`lr`: the first column left,
    every other one right)."""
    if not align or set(align) - set(ALIGN):
        raise ValueError(f"align is letters l or r, not {align!r}")
    letters = align[: len(names)].ljust(len(names), align[-1])
    return [row(*names), "|" + "".join(f" {ALIGN[a]} |" for a in letters)]
