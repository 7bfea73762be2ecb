"""Overload: the capacity of a running gateway measured closed-loop, then Locust offering 2x and 5x
that rate open-loop (paced users), every outcome recorded by the users themselves
(`overload_locust.py`): admitted and valid, shed (429/503 with Retry-After), or hung (no answer by
the client's deadline).
"""

from __future__ import annotations

import collections
import json
import math
import os
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from loadtest.overhead import percentile

LOCUSTFILE = Path(__file__).with_name("overload_locust.py")


@dataclass
class Level:
    """One load level's outcomes."""

    name: str
    users: int
    pace_s: float
    seconds: float
    offered_rps: float  # what was sent, per second
    sent: int = 0
    ok: int = 0  # 200 with a body that validates
    invalid: int = 0  # 200 with a body that does not
    shed: int = 0  # 429 or 503
    shed_without_retry_after: int = 0
    hung: int = 0  # no answer by the deadline
    dropped: int = 0  # no answer, long before the deadline (the connection closed or was refused)
    other: dict[str, int] = field(default_factory=dict)  # any other status
    answered_rps: float = 0.0  # valid answers per second
    ok_p50_ms: float = 0.0
    ok_p99_ms: float = 0.0
    shed_p99_ms: float = 0.0
    slowest_ms: float = 0.0  # of every response, shed or not

    @property
    def shed_share(self) -> float:
        return self.shed / self.sent if self.sent else 0.0


def run_locust(
    url: str, key: str, *, users: int, pace_s: float, seconds: int, deadline_s: float, out: Path, name: str
) -> Level:
    """Locust headless for `seconds` (users started evenly over one pace), then the records read back."""
    out.mkdir(parents=True, exist_ok=True)
    records = out / f"{name}.jsonl"
    records.unlink(missing_ok=True)
    spawn_rate = users / pace_s if pace_s else users
    cmd = [
        sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "--only-summary",
        "-u", str(users), "-r", f"{spawn_rate:.3f}", "--run-time", f"{seconds}s", "--host", url,
        "--stop-timeout", str(math.ceil(deadline_s) + 2), "--csv", str(out / name),
    ]  # fmt: skip
    env = {
        **os.environ,
        "DGEMMA_OVERLOAD_PACE_S": str(pace_s),
        "DGEMMA_OVERLOAD_DEADLINE_S": str(deadline_s),
        "DGEMMA_OVERLOAD_KEY": key,
        "DGEMMA_OVERLOAD_RECORDS": str(records),
    }
    with (out / f"{name}.locust.log").open("w") as log:
        subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
    rows = [json.loads(line) for line in records.read_text().splitlines()] if records.exists() else []
    if not rows:
        raise RuntimeError(f"Locust recorded nothing; see {out / f'{name}.locust.log'}")
    return summarize(name, users, pace_s, rows, deadline_s)


def summarize(name: str, users: int, pace_s: float, rows: list[dict[str, Any]], deadline_s: float) -> Level:
    first = min(r["sent"] for r in rows)
    span = max(r["sent"] for r in rows) - first or 1.0
    level = Level(name, users, pace_s, round(span, 1), offered_rps=len(rows) / span, sent=len(rows))
    ok_ms, shed_ms, other = [], [], collections.Counter[str]()
    for r in rows:
        ms = r["seconds"] * 1000
        status = r["status"]
        if status == 200 and not r.get("invalid"):
            level.ok += 1
            ok_ms.append(ms)
        elif status == 200:
            level.invalid += 1
        elif status in (429, 503):
            level.shed += 1
            shed_ms.append(ms)
            level.shed_without_retry_after += not r.get("retry_after")
        elif status == 0 and r["seconds"] >= deadline_s - 0.5:
            level.hung += 1
        elif status == 0:
            level.dropped += 1
        else:
            other[str(status)] += 1
        if status:
            level.slowest_ms = max(level.slowest_ms, ms)
    level.other = dict(other)
    level.answered_rps = level.ok / span
    if ok_ms:
        level.ok_p50_ms, level.ok_p99_ms = percentile(ok_ms, 50), percentile(ok_ms, 99)
    if shed_ms:
        level.shed_p99_ms = percentile(shed_ms, 99)
    return level


def plot(levels: list[Level], deadline_s: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [lv.name for lv in levels]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    bottom = [0.0] * len(levels)
    for label, values, color in (
        ("answered (valid)", [lv.ok / lv.sent for lv in levels], "tab:green"),
        ("shed (429/503, Retry-After)", [lv.shed / lv.sent for lv in levels], "tab:orange"),
        ("hung past the deadline", [lv.hung / lv.sent for lv in levels], "tab:red"),
        ("dropped connection", [lv.dropped / lv.sent for lv in levels], "tab:purple"),
        ("other", [(lv.invalid + sum(lv.other.values())) / lv.sent for lv in levels], "tab:gray"),
    ):
        left.bar(names, values, bottom=bottom, label=label, color=color)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    left.set_ylabel("share of requests")
    left.set_title("Outcomes by offered load")
    left.legend(fontsize=8)
    xs = range(len(levels))
    right.plot(xs, [lv.ok_p50_ms / 1000 for lv in levels], "o-", label="admitted p50")
    right.plot(xs, [lv.ok_p99_ms / 1000 for lv in levels], "o-", label="admitted p99")
    right.plot(xs, [lv.slowest_ms / 1000 for lv in levels], "x--", label="slowest response")
    right.axhline(deadline_s, color="tab:red", linestyle=":", label=f"client deadline {deadline_s:g} s")
    right.set_xticks(list(xs), [f"{lv.name}\n{lv.offered_rps:.1f} req/s" for lv in levels])
    right.set_ylabel("seconds")
    right.set_title("Latency of what was answered")
    right.legend(fontsize=8)
    for ax in (left, right):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def as_dict(level: Level) -> dict[str, Any]:
    return {**asdict(level), "shed_share": level.shed_share}
