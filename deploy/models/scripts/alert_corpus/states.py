"""State kinds' facts: a state per technology and level, its lines and values."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, NamedTuple

from .common import _fill, _num
from .data import frozen, table
from .kinds import Facts

_PHRASINGS = table("phrasings")


class State(NamedTuple):
    """One state of a state kind: alert names, clauses saying what broke (after the thing's name:
    "is down", "has no leader"), the short value of SDK states, and a draw of the metric's value
    (`num`: 0/1 or a small count) and of the fields its clauses use."""

    names: tuple[str, ...]
    whats: tuple[str, ...]
    value: str
    draw: Callable[[random.Random, dict[str, Any]], dict[str, Any]] | None = None
    scope: str = "instance"
    notes: tuple[str, ...] = ()
    metric: str = ""


def _s(
    names: str,
    whats: str,
    value: str,
    draw: Callable[[random.Random, dict[str, Any]], dict[str, Any]] | None = None,
    scope: str = "instance",
    notes: str = "",
    metric: str = "",
) -> State:
    """A state from "|"-separated names, clauses and notes."""
    return State(
        tuple(names.split("|")),
        tuple(whats.split("|")),
        value,
        draw,
        scope,
        tuple(notes.split("|")) if notes else (),
        metric,
    )


# How rule authors put the thing and the clause together, per scope: as summaries, and as the
# one sentence of the community template ("<sentence>\n  VALUE = ...\n  LABELS = map[...]").
LINES: dict[str, tuple[str, ...]] = frozen(_PHRASINGS["lines"])
SENTENCE: dict[str, str] = _PHRASINGS["sentence"]

StateTable = dict[str, dict[str, list[State]]]  # tech ("*": any) -> level -> states


def _state_facts(table: StateTable, own_share: float = 0.65) -> Facts:
    """Facts of a state kind: one of the level's states (the technology's own, or the common
    ones), its name, summary line and description sentence."""

    def facts(
        rng: random.Random, level: str, pair: tuple[str, str] | None, f: dict[str, Any]
    ) -> dict[str, Any]:
        own = table.get(f.get("tech", ""), {}).get(level, [])
        common = table.get("*", {}).get(level, [])
        st = rng.choice(own if own and (not common or rng.random() < own_share) else common)
        d = {"num": 0, "thr": 1, **(st.draw(rng, f) if st.draw else {})}
        g = {**f, **d}
        what = _fill(rng.choice(st.whats), g)
        g["what"] = what
        sent = _fill(SENTENCE[st.scope], g)
        sent = sent[:1].upper() + sent[1:]
        note = _fill(rng.choice(st.notes), g) if st.notes else ""
        detail = rng.choice(
            [
                "",
                note,
                note,
                note
                if any(c in what for c in ";:(") or " for " in what
                else f"{sent} for more than {g['dur']}.",
            ]
        )
        out = {
            **d,
            "alert_title": _fill(rng.choice(st.names), g),
            "line": _fill(rng.choice(LINES[st.scope]), g),
            "detail": detail,
            "sentence": sent,
            "value": _fill(st.value, g),
            "threshold": _num(d["thr"]),
            "above": d.get("above", d["num"] >= d["thr"]),
        }
        if st.metric:
            out["metric_name"] = _fill(st.metric, g)
        return out

    return facts


def _n(
    key: str, lo: int, hi: int, thr: float | None = None
) -> Callable[[random.Random, dict[str, Any]], dict[str, Any]]:
    """A small count `key` in [lo, hi], the metric's value."""

    def draw(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
        n = rng.randint(lo, hi)
        return {key: n, "num": n, "thr": lo if thr is None else thr}

    return draw


def _of(
    down: Callable[[int], int], totals: tuple[int, ...], flag: bool = False
) -> Callable[[random.Random, dict[str, Any]], dict[str, Any]]:
    """k of n members down; `num` how many are up (`sum(up)`, under the total), or 0 for a flag
    metric (has_leader)."""

    def draw(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
        total = rng.choice(totals)
        k = down(total)
        num = 0 if flag else total - k
        return {"total": total, "down": k, "up": total - k, "k": k, "num": num, "thr": 1 if flag else total}

    return draw


def _pcts(lo: float, hi: float, thr: float) -> Callable[[random.Random, dict[str, Any]], dict[str, Any]]:
    """A percentage `pct` in [lo, hi], the metric's value."""

    def draw(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
        v = rng.uniform(lo, hi)
        return {"pct": f"{v:.0f}" if v >= 10 else _num(v), "num": round(v, 2), "thr": thr}

    return draw


def _one(total: int) -> int:
    return 1


def _half(total: int) -> int:
    return total // 2


def _majority(total: int) -> int:
    return total // 2 + 1


def _every(total: int) -> int:
    return total


def _one_of_two_else_half(total: int) -> int:
    return total - 1 if total == 2 else total // 2


# How many of `total` members are down, for `_of` (data/states.toml's `down`).
DOWN_RULES: dict[str, Callable[[int], int]] = {
    "one": _one,
    "half": _half,
    "majority": _majority,
    "all": _every,
    "one_of_two_else_half": _one_of_two_else_half,
}


def _const(**fields: Any) -> Callable[[random.Random, dict[str, Any]], dict[str, Any]]:
    """These fields, as they are."""

    def draw(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
        return dict(fields)

    return draw


CRASH_ERRS: tuple[str, ...] = frozen(_PHRASINGS["crash_errs"])
WHY_RESTART: tuple[str, ...] = frozen(_PHRASINGS["why_restart"])
PROBE_FAILURES: dict[str, tuple[str, ...]] = frozen(_PHRASINGS["probe_failures"])
