"""The kinds: the magnitude kinds of data/kinds.toml and the state kinds of data/state_kinds.toml
(their states in data/states.toml), their drawers resolved by name, and every kind's draw weight;
the draw weights and shares of data/weights.toml, with a sweep's mix laid over them (`configure`)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from . import facts_data, facts_edge, facts_hosts, facts_states
from .common import _count, _ms, _pct, _rate, _secs
from .data import frozen, table, with_mix
from .kinds import Facts, Kind, _disk_more, _down_facts, _fixed, _pick, _replica_facts, fields, scale
from .states import DOWN_RULES, State, StateTable, _const, _n, _of, _pcts, _state_facts

_MIX: dict[str, Any] = {}  # configure()'s mix: none, the data as it is

SHOWS: dict[str, Callable[..., str]] = {"pct": _pct, "secs": _secs, "ms": _ms, "count": _count, "rate": _rate}
PER_LEVEL = {"replicas": _replica_facts, "members_down": _down_facts}  # one drawer per level
DRAWERS: dict[str, Callable[..., Any]] = {
    **facts_hosts.DRAWERS,
    **facts_data.DRAWERS,
    **facts_edge.DRAWERS,
    "disk": _disk_more,
}


def _drawer(spec: str | dict[str, Any], level: str) -> Callable[..., dict[str, Any]]:
    """A named drawer (one per level for PER_LEVEL's), or a table of fields."""
    if isinstance(spec, dict):
        return fields(spec)
    return PER_LEVEL[spec](level) if spec in PER_LEVEL else DRAWERS[spec]


def facts(spec: dict[str, Any]) -> Facts:
    """A kind's facts: a value on a scale per level (`scale`, `show`, `more` or `pick`), or a
    drawer per level (`fixed`)."""
    if "fixed" in spec:
        return _fixed({lv: _drawer(name, lv) for lv, name in spec["fixed"].items()})
    show = SHOWS[spec["show"]] if spec["show"] in SHOWS else DRAWERS[spec["show"]]
    more = _pick(spec["pick"]) if "pick" in spec else _drawer(spec["more"], "") if "more" in spec else None
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
            labels=_drawer(k["labels"], "") if "labels" in k else None,
        )
        for k in table("kinds")["kind"]
    ]


def _draw(spec: str | dict[str, Any] | None) -> Callable[..., dict[str, Any]] | None:
    """A state's draw of its values: a named function, `n`, `of`, `pcts`, `const` with its
    arguments, or a table of fields."""
    if spec is None or isinstance(spec, str):
        return None if spec is None else facts_states.DRAWERS[spec]
    if "drawer" not in spec:
        return fields(spec)
    args = {k: v for k, v in spec.items() if k != "drawer"}
    if spec["drawer"] == "n":
        return _n(**args)
    if spec["drawer"] == "of":
        return _of(DOWN_RULES[args["down"]], tuple(args["totals"]), args.get("flag", False))
    if spec["drawer"] == "pcts":
        return _pcts(**args)
    if spec["drawer"] == "const":
        return _const(**args)
    raise ValueError(f"no drawer {spec['drawer']!r}")


def state_table(states: dict[str, Any]) -> StateTable:
    """A table of data/states.toml: technology ("*": any) -> level -> states."""
    return {
        tech: {
            level: [
                State(
                    tuple(s["names"]),
                    tuple(s["whats"]),
                    s["value"],
                    _draw(s.get("draw")),
                    s.get("scope", "instance"),
                    tuple(s.get("notes", ())),
                    s.get("metric", ""),
                )
                for s in listed
            ]
            for level, listed in levels.items()
        }
        for tech, levels in states.items()
    }


def state_kinds() -> list[Kind]:
    """The kinds whose level follows what broke, in draw order, with their draw weights."""
    tables = table("states")
    weights = weights_table()["state_weights"]
    out = []
    for k in table("state_kinds")["state_kind"]:
        states = state_table(tables[k["table"]])
        out.append(
            Kind(
                k["key"],
                k["subject"],
                tuple(k["roles"]),
                ("{Tech} Alert",),
                k["levels"],
                _state_facts(states),
                ("{line}",),
                ("{detail}",),
                k["metric"],
                tuple(k["techs"]),
                weight=weights[k["key"]],
                states=states,
            )
        )
    return out


def configure(mix: Mapping[str, Any] | None = None) -> None:
    """Draw with `mix`: entries of data/weights.toml (the catalogue's share, its unlabelled share, the
    questions' weights, a kind's weight...) in place of the file's, for every draw that follows
    (training streams and dev splits alike). None or {}: the data as it is. A mix naming an entry the
    file lacks is refused (ValueError) and leaves the mix in force unchanged."""
    with_mix(table("weights"), dict(mix or {}))
    _MIX.clear()
    _MIX.update(mix or {})
    weights_table.cache_clear()
    kinds.cache_clear()


@functools.cache
def weights_table() -> dict[str, Any]:
    """data/weights.toml with the configured mix laid over it: `ambiguous`, `catalogue_share`,
    `catalogue_unlabelled`, `state_weights`, `host_weights`, `question_weights`."""
    return with_mix(table("weights"), _MIX)


@functools.cache
def kinds() -> tuple[Kind, ...]:
    """Every kind in draw order, each with its draw weight (data/weights.toml's `host_weights`
    applied: host resources on role-named hosts are drawn about as often as other kinds)."""
    host = weights_table()["host_weights"]
    every = (*magnitude_kinds(), *state_kinds())
    return tuple(k._replace(weight=k.weight * host.get(k.key, 1.0)) for k in every)


def kind(key: str) -> Kind:
    """The kind of this key."""
    return next(k for k in kinds() if k.key == key)
