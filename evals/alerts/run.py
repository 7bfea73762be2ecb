"""The flow of `dgemma alerts eval` (read, check, classify, score, print, write) and of `dgemma
alerts report` (read the record, summarize, print, write)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from app.alerts.policy import Policy
from app.core.config import ConfigError
from app.jev.client import JevClient
from evals.alerts import plots
from evals.alerts.classify import Row, classify
from evals.alerts.labelled import check, read_labelled, severity_label, without_severity
from evals.alerts.render import Report, markdown, print_report, shadow_markdown, to_json
from evals.alerts.score import score
from evals.asking import RETRY, progress_bar
from evals.errors import LabelledFileError

if TYPE_CHECKING:
    from app.alerts.settings import AlertRouterSettings
    from app.core.identity import IdTokens


def write(report: Report, out: Path) -> tuple[list[Path], str | None]:
    """report.json, report.md and the plots in `out`; the paths written, and why there are no plots
    when matplotlib is not installed (the router's image has none)."""
    out.mkdir(parents=True, exist_ok=True)
    skipped = plots.unavailable("plots")
    drawn = [] if skipped else plots.eval_plots(report, out)
    data, md = out / "report.json", out / "report.md"
    data.write_text(json.dumps(to_json(report), indent=1) + "\n")
    md.write_text(markdown(report, drawn))
    return [data, md, *drawn], skipped


def evaluate(
    settings: AlertRouterSettings,
    file: Path,
    *,
    out: Path,
    strip_severity: bool = False,
    target: float | None = None,
    seed: int = 0,
    concurrency: int = 4,
    id_tokens: IdTokens | None = None,
) -> int:
    """`dgemma alerts eval`: read, check, classify (a progress bar on stderr), score, print, write;
    `id_tokens` mints the gateway's ID tokens (a private service)."""
    from rich.console import Console
    from rich.markup import escape

    if target is not None and not 0 < target <= 1:
        raise ConfigError(f"--suggest must be a page recall in (0, 1], got {target}")
    if concurrency < 1:
        raise ConfigError(f"--concurrency must be at least 1, got {concurrency}")
    policy = Policy.load(settings.alerts_policy_file)
    items = read_labelled(file)
    check(items, policy)
    removed, label = 0, severity_label(policy)
    if strip_severity:
        stripped = [dataclasses.replace(i, alert=without_severity(i.alert, label)) for i in items]
        removed = sum(a.alert is not b.alert for a, b in zip(items, stripped, strict=True))
        items = stripped
    if target is not None and sum(i.expected.page for i in items) < 2:
        raise LabelledFileError(f"{file}: --suggest needs at least 2 alerts expected to page (one per half)")

    async def go() -> list[Row]:
        gateway = JevClient(
            settings.alerts_gateway_url,
            api_key=settings.gateway_key(),
            id_tokens=id_tokens,
            timeout_s=300.0,
            retry=RETRY,
        )
        try:
            with progress_bar("alerts eval", len(items)) as advance:
                return await classify(items, policy, gateway, concurrency=concurrency, progress=advance)
        finally:
            await gateway.aclose()

    started = time.monotonic()
    rows = asyncio.run(go())
    report = Report(
        file=str(file),
        policy=policy.source,
        gateway=settings.alerts_gateway_url,
        without_severity=label if strip_severity else None,
        severity_labels_removed=removed,
        seconds=round(time.monotonic() - started, 1),
        thresholds=policy.spec.thresholds.model_dump(mode="json"),
        figures=score(rows, policy, target=target, seed=seed),
        rows=rows,
    )
    console = Console(width=None if sys.stdout.isatty() else 120, soft_wrap=False)
    print_report(report, console)
    written, skipped = write(report, out)
    if skipped:
        console.print(skipped)
    console.print(escape(f"wrote {out}: {', '.join(p.name for p in written)}"))
    return 0


def shadow_report(file: Path, *, missed_after_min: float, team_label: str, out: Path | None) -> int:
    """`dgemma alerts report`: the record's summary printed, and with `out` written (report.md,
    shadow.png)."""
    import datetime as dt

    from rich.console import Console
    from rich.markdown import Markdown

    from app.alerts.audit import read_records
    from evals.alerts.shadow import summarize

    if missed_after_min <= 0:
        raise ConfigError("--missed-after must be more than 0 minutes")
    try:
        records = read_records(file)
    except (OSError, ValueError) as e:
        raise ConfigError(f"{file}: {e}" if str(file) not in str(e) else str(e)) from e
    missed_after = dt.timedelta(minutes=missed_after_min)
    summary = summarize(records, missed_after=missed_after, team_label=team_label)
    text = shadow_markdown(summary, missed_after=missed_after, source=str(file))
    Console(soft_wrap=True).print(Markdown(text))
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.md").write_text(text)
        skipped = plots.unavailable("plot")
        if skipped:
            Console(stderr=True).print(skipped)
        elif summary.decisions:
            plots.shadow_plot(summary, str(out / "shadow.png"))
    return 0
