"""The eval's outputs: a table on the terminal, a JSON file, and a reliability diagram."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from evals.calibrate import Result
from evals.metrics import Bin
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


Curve = tuple[str, list[Bin]]  # a legend label and its reliability bins


def reliability_diagram(report: Report, path: Path) -> None:
    """One panel per question: accuracy against confidence per bin, a line per read policy."""
    panels: dict[str, list[Curve]] = {}
    for r in report.rows:
        panels.setdefault(r.question, []).append((f"{r.policy} (ECE {r.ece:.3f})", r.bins))
    diagram(panels, f"Reliability: {report.model}, {report.items} items of {Path(report.data).name}", path)


def calibration_diagram(result: Result, path: Path) -> None:
    """One panel per question: the test split before and after its temperature."""
    panels = {
        f"{f.question} (T = {f.temperature:.2f})": [
            (f"before (ECE {f.before['ece']:.3f})", f.bins_before),
            (f"after (ECE {f.after['ece']:.3f})", f.bins_after),
        ]
        for f in result.figures
    }
    cal = result.calibration
    title = f"Calibration: {cal.model}, test split ({cal.data['test_items']} items), {cal.read_policy.mode}"
    diagram(panels, title, path)


def diagram(panels: dict[str, list[Curve]], title: str, path: Path) -> None:
    """Reliability panels side by side: accuracy against mean confidence per non-empty bin, each
    bin's marker sized by (and labelled with) its count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.2), squeeze=False)
    for ax, (panel, curves) in zip(axes[0], panels.items(), strict=True):
        ax.plot([0, 1], [0, 1], color="grey", linestyle=":", label="calibrated")
        for label, bins in curves:
            full = [b for b in bins if b.count]
            xs, ys = [b.confidence for b in full], [b.accuracy for b in full]
            (line,) = ax.plot(xs, ys, label=label)
            # A bin's weight in the ECE is its count: the area of its marker, its number beside it.
            total = sum(b.count for b in full)
            ax.scatter(xs, ys, s=[12 + 240 * b.count / total for b in full], color=line.get_color(), zorder=3)
            for b in full:
                ax.annotate(
                    str(b.count), (b.confidence, b.accuracy), textcoords="offset points", xytext=(5, -9),
                    fontsize=7, color=line.get_color(),
                )  # fmt: skip
        ax.set_title(panel)
        ax.set_xlabel("confidence (answer's probability)")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.legend(loc="upper left", fontsize=8)
    axes[0][0].set_ylabel("accuracy")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def calibration_table(result: Result) -> Any:
    from rich.table import Table

    cal = result.calibration
    t = Table(
        title=f"{cal.model} under {cal.read_policy.mode}: fitted on {cal.data['dev_items']} dev items, "
        f"measured on {cal.data['test_items']} test items ({result.seconds:.0f} s)"
    )
    for header in ("question", "fit", "T", "dev", "test", "accuracy", "ECE", "Brier", "NLL"):
        t.add_column(header, justify="left" if header in ("question", "fit") else "right")
    for f in result.figures:
        b, a = f.before, f.after
        t.add_row(
            f"{f.question} ({f.kind})", f.scope, f"{f.temperature:.3f}", str(f.dev), str(f.test),
            f"{a['accuracy']:.3f}", f"{b['ece']:.3f} -> {a['ece']:.3f}",
            f"{b['brier']:.3f} -> {a['brier']:.3f}", f"{b['nll']:.3f} -> {a['nll']:.3f}",
        )  # fmt: skip
    return t
