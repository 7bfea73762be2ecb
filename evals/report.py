"""The eval's outputs: a table on the terminal, a JSON file, and a reliability diagram."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from evals.run import Report


def to_json(report: Report) -> dict[str, Any]:
    return dataclasses.asdict(report)


def write(report: Report, out: Path) -> tuple[Path, Path]:
    """`eval.json` and `reliability.png` in `out`; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    data = out / "eval.json"
    data.write_text(json.dumps(to_json(report), indent=1) + "\n")
    plot = out / "reliability.png"
    reliability_diagram(report, plot)
    return data, plot


def table(report: Report) -> Any:
    from rich.table import Table

    t = Table(
        title=f"{report.model}: {report.items} items of {Path(report.data).name} ({report.seconds:.0f} s)"
    )
    for header in ("policy", "question", "accuracy", "reversed", "baseline", "ECE", "Brier", "reads", "flip"):
        t.add_column(header, justify="left" if header in ("policy", "question") else "right")
    for r in report.rows:
        flip = "-" if r.flip_rate is None else f"{r.flip_rate:.3f}"
        t.add_row(
            r.policy, f"{r.question} ({r.kind})", f"{r.accuracy:.3f}", f"{r.accuracy_reversed:.3f}",
            f"{r.baseline:.3f}", f"{r.ece:.3f}", f"{r.brier:.3f}", f"{r.reads:.2f}", flip,
        )  # fmt: skip
    return t


def reliability_diagram(report: Report, path: Path) -> None:
    """One panel per question: accuracy against confidence per bin, a line per read policy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    questions = list(dict.fromkeys(r.question for r in report.rows))
    fig, axes = plt.subplots(1, len(questions), figsize=(4.2 * len(questions), 4.2), squeeze=False)
    for ax, question in zip(axes[0], questions, strict=True):
        ax.plot([0, 1], [0, 1], color="grey", linestyle=":", label="calibrated")
        for r in (r for r in report.rows if r.question == question):
            full = [b for b in r.bins if b.count]
            ax.plot(
                [b.confidence for b in full], [b.accuracy for b in full], marker="o",
                label=f"{r.policy} (ECE {r.ece:.3f})",
            )  # fmt: skip
        ax.set_title(f"{question}")
        ax.set_xlabel("confidence (answer's probability)")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.legend(loc="upper left", fontsize=8)
    axes[0][0].set_ylabel("accuracy")
    fig.suptitle(f"Reliability: {report.model}, {report.items} items of {Path(report.data).name}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
