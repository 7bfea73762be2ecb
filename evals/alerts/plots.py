"""The eval's and the shadow trial's plots (matplotlib, where installed: the router's image has none)."""

from __future__ import annotations

import datetime as dt
import importlib.util
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evals.alerts.render import Report
    from evals.alerts.shadow import ShadowSummary


def unavailable(what: str) -> str | None:
    """Why there are no `what` (plots) here, or None when matplotlib is installed."""
    if importlib.util.find_spec("matplotlib") is not None:
        return None
    return f"no {what}: matplotlib is not installed (pip install 'dgemma-kit[loadtest]')"


def eval_plots(report: Report, out: Path) -> list[Path]:
    """sweep.png (page recall against the share of alerts paged as the threshold moves, the
    policy's point marked; p(page) by expected label) and teams.png (the confusion matrix)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    f = report.figures
    t = report.thresholds
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.4))
    curve = [p for p in f.sweep if p.recall.value is not None]
    left.plot([p.share for p in curve], [p.recall.value for p in curve], marker=".", markersize=3,
              label="p(page) threshold swept")  # fmt: skip
    marks: dict[tuple[float, float], list[float]] = {}  # every tenth threshold, by where it lands
    for p in curve:
        if round(p.threshold * 100) % 10 == 0:
            marks.setdefault((p.share, p.recall.value or 0.0), []).append(p.threshold)
    for (x, y), at in marks.items():
        text = f"{at[0]:.1f}" if len(at) == 1 else f"{at[0]:.1f}-{at[-1]:.1f}"
        left.annotate(text, (x, y), textcoords="offset points", xytext=(4, -10), fontsize=7)
    if f.current.recall.value is not None:
        left.scatter([f.current.share], [f.current.recall.value], marker="*", s=160, color="red", zorder=3,
                     label=f"the policy (uncertain = {f.current.threshold})")  # fmt: skip
    if f.suggestion is not None:
        chosen = next(p for p in f.sweep if p.threshold == f.suggestion.threshold)
        if chosen.recall.value is not None:
            left.scatter([chosen.share], [chosen.recall.value], marker="D", s=50, color="green", zorder=3,
                         label=f"suggested ({chosen.threshold:.2f})")  # fmt: skip
    left.set_xlabel("share of alerts paged (labels: the p(page) threshold)")
    left.set_ylabel("page recall")
    left.set_xlim(0, 1.02)
    left.set_ylim(0, 1.02)
    left.legend(loc="lower right", fontsize=8)
    left.set_title("page recall against pages")
    groups = [[r.p_page for r in report.rows if r.item.expected.page is label and r.p_page is not None]
              for label in (True, False)]  # fmt: skip
    labels = [f"expected page ({len(groups[0])})", f"expected no page ({len(groups[1])})"]
    bins = [i / 20 for i in range(21)]
    right.hist(groups, bins=bins, stacked=True, color=["tab:red", "tab:blue"], label=labels)
    for name, style in (("ticket", ":"), ("uncertain", "-"), ("page", "--")):
        if isinstance(t.get(name), float):
            right.axvline(t[name], color="black", linestyle=style, linewidth=1, label=f"{name} = {t[name]}")
    right.set_xlabel("p(page)")
    right.set_ylabel("alerts")
    right.legend(fontsize=8)
    right.set_title("p(page) by expected label")
    fig.suptitle(f"{f.alerts} alerts of {Path(report.file).name}")
    fig.tight_layout()
    sweep_png = out / "sweep.png"
    fig.savefig(sweep_png, dpi=110)
    plt.close(fig)

    teams = list(f.confusion)
    matrix = [[f.confusion[e].get(d, 0) for d in teams] for e in teams]
    fig, ax = plt.subplots(figsize=(1.6 + 1.1 * len(teams), 1.2 + 1.0 * len(teams)))
    ax.imshow(matrix, cmap="Blues")
    most = max((n for row in matrix for n in row), default=0)
    for i, row in enumerate(matrix):
        for j, n in enumerate(row):
            color = "white" if n > most / 2 else "black"
            ax.text(j, i, str(n), ha="center", va="center", fontsize=9, color=color)
    ax.set_xticks(range(len(teams)), teams, rotation=30, ha="right")
    ax.set_yticks(range(len(teams)), teams)
    ax.set_xlabel("the model's team")
    ax.set_ylabel("expected team")
    ax.set_title(f"teams: accuracy {f.team}", fontsize=10)
    fig.tight_layout()
    teams_png = out / "teams.png"
    fig.savefig(teams_png, dpi=110)
    plt.close(fig)
    return [sweep_png, teams_png]


def shadow_plot(summary: ShadowSummary, path: str) -> None:
    """Per day: pages sent (the sender's), pages the policy would have sent, and missed pages."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sent, would = summary.sent_by_day, summary.would_page_by_day
    lost: Counter[dt.date] = Counter(row.record.at.date() for row in summary.missed)
    order = sorted(set(sent) | set(would))
    x = range(len(order))
    fig, ax = plt.subplots(figsize=(max(6, len(order) * 0.6), 3.5))
    ax.bar([i - 0.3 for i in x], [sent[d] for d in order], 0.3, label="paged (as sent)")
    ax.bar(list(x), [would[d] for d in order], 0.3, label="the policy would page")
    ax.bar([i + 0.3 for i in x], [lost[d] for d in order], 0.3, label="would have missed", color="tab:red")
    ax.set_xticks(list(x), [f"{d:%m-%d}" for d in order], rotation=45)
    ax.set_ylabel("alerts")
    ax.set_title("Shadow trial, per day")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
