"""The questions' terms (teams, levels, sources), the page rule, and small helpers: values as
rules print them, names in each sender's habits."""

from __future__ import annotations

import random
import string
from pathlib import Path
from typing import Any

from .data import frozen, table

_TERMS = table("terms")

TEAMS: tuple[str, ...] = frozen(_TERMS["teams"])  # the default policy's teams, in its order
LEVELS: tuple[str, ...] = frozen(_TERMS["levels"])  # the default policy's severity levels
SOURCES: tuple[str, ...] = frozen(_TERMS["sources"])
SPLIT_SEEDS: dict[str, int] = _TERMS["split_seeds"]
POLICY = Path(__file__).resolve().parents[4] / "app" / "alerts" / "default_policy.toml"

# The README's SDK example (examples/alert_triage.py): its questions and their answer scale.
SDK_TEAMS: tuple[str, ...] = frozen(_TERMS["sdk_teams"])
SDK_LEVELS: tuple[str, ...] = frozen(_TERMS["sdk_levels"])
SDK_PAGE: str = _TERMS["sdk_page"]
# Warnings are "low" like toy_task's "minor, no user impact"; errors its "degraded, some users".
TO_SDK_LEVEL: dict[str, str] = _TERMS["to_sdk_level"]


def needs_page(severity: str) -> bool:
    """The page answer: a human is needed now exactly when the alert is critical (the default
    policy's `page_severity`)."""
    return severity == "critical"


# -- small helpers -------------------------------------------------------------------------------


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _alnum(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(n))


def _num(v: float, digits: int = 1) -> str:
    """A number as people write it: no trailing .0."""
    text = f"{v:.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _pct(rng: random.Random, v: float) -> str:
    return f"{v:.0f}%" if rng.random() < 0.5 and v >= 10 else f"{_num(v, 1 if v >= 1 else 2)}%"


def _secs(rng: random.Random, v: float) -> str:
    """A duration in seconds as monitoring tools show it: 912s, 15m12s, 2h 3m."""
    s = round(v)
    if v < 10:
        return f"{_num(v, 2 if v < 1 else 1)}s"
    if s < 120 or rng.random() < 0.4:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60}s" if rng.random() < 0.5 else f"{s // 60}m"
    return f"{s // 3600}h{(s % 3600) // 60}m" if rng.random() < 0.5 else f"{_num(s / 3600)}h"


def _ms(rng: random.Random, v: float) -> str:
    """A latency given in seconds, shown in ms or s."""
    return f"{round(v * 1000)}ms" if v < 1 or rng.random() < 0.4 else f"{_num(v, 2)}s"


def _count(rng: random.Random, v: float) -> str:
    n = round(v)
    if n >= 10_000 and rng.random() < 0.4:
        return f"{_num(n / 1000)}k" if n < 1_000_000 else f"{_num(n / 1_000_000)}M"
    return f"{n:,}" if rng.random() < 0.5 else str(n)


def _rate(rng: random.Random, v: float) -> str:
    return f"{_num(v)}/min" if rng.random() < 0.6 else f"{_num(v)} per minute"


def _dur(rng: random.Random) -> str:
    return rng.choice(["5m", "10m", "15m", "15m", "30m", "1h", "2m", "20m"])


def _fill(template: str, fields: dict[str, Any]) -> str:
    return template.format_map(fields)


# -- names: one kind's words, in each sender's habits --------------------------------------------


def _is_acronym(word: str) -> bool:
    return any(c.isupper() for c in word[1:]) or word.isupper()


def camel_identifier(words: list[str]) -> str:
    """`["disk", "full", "on", "NFS/v4"]` -> `DiskFullOnNFSv4`: each word's first letter up, the rest as
    written (acronyms kept), no `/`: a Prometheus alert name."""
    return "".join(w[:1].upper() + w[1:] for w in words).replace("/", "")


def snake(words: list[str]) -> str:
    return "_".join(w.lower().replace("/", "_") for w in words)


def sentence(words: list[str]) -> str:
    rest = [w if _is_acronym(w) else w.lower() for w in words[1:]]
    return " ".join([words[0][:1].upper() + words[0][1:], *rest])


def alert_name(rng: random.Random, words: list[str], source: str) -> str:
    """Prometheus names are identifiers (CamelCase mostly, snake_case in some shops); Grafana and
    Cloud Monitoring names are free text as often as not."""
    words = [w for w in words if w]
    r = rng.random()
    if source == "alertmanager":
        return camel_identifier(words) if r < 0.7 else snake(words)
    if source == "grafana":
        return sentence(words) if r < 0.55 else camel_identifier(words) if r < 0.9 else snake(words)
    return sentence(words) if r < 0.75 else camel_identifier(words)
