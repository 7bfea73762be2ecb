"""The magnitude kinds of data/kinds.toml, their facts' drawers resolved by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import facts_data, facts_edge, facts_hosts
from .common import _count, _ms, _pct, _rate, _secs
from .data import frozen, table
from .kinds import Facts, Kind, _disk_more, _down_facts, _fixed, _pick, _replica_facts, scale

SHOWS: dict[str, Callable[..., str]] = {"pct": _pct, "secs": _secs, "ms": _ms, "count": _count, "rate": _rate}
PER_LEVEL = {"replicas": _replica_facts, "members_down": _down_facts}  # one drawer per level
DRAWERS: dict[str, Callable[..., Any]] = {
    **facts_hosts.DRAWERS,
    **facts_data.DRAWERS,
    **facts_edge.DRAWERS,
    "disk": _disk_more,
}


def facts(spec: dict[str, Any]) -> Facts:
    """A kind's facts: a value on a scale per level (`scale`, `show`, `more` or `pick`), or a
    drawer per level (`fixed`)."""
    if "fixed" in spec:
        fixed = spec["fixed"]
        return _fixed(
            {lv: PER_LEVEL[name](lv) if name in PER_LEVEL else DRAWERS[name] for lv, name in fixed.items()}
        )
    show = SHOWS[spec["show"]] if spec["show"] in SHOWS else DRAWERS[spec["show"]]
    more = _pick(spec["pick"]) if "pick" in spec else DRAWERS[spec["more"]] if "more" in spec else None
    return scale({lv: (lo, hi) for lv, (lo, hi) in spec["scale"].items()}, show, more)


def magnitude_kinds() -> list[Kind]:
    """The kinds whose value decides the level, and the others of data/kinds.toml, in draw order."""
    return [
        Kind(
            k["key"],
            k["subject"],
            tuple(k["roles"]),
            frozen(k["names"]),
            k["levels"],
            facts(k["facts"]),
            tuple(k["summaries"]),
            tuple(k["descriptions"]),
            k["metric"],
            tuple(k.get("engines", ())),
            k.get("numeric", False),
        )
        for k in table("kinds")["kind"]
    ]
