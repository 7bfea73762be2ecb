"""A kind of alert and how its facts are drawn (a value on a scale, or a state per level)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, NamedTuple

from .common import _num
from .data import table

_PHRASINGS = table("phrasings")

# -- kinds ---------------------------------------------------------------------------------------

Facts = Callable[[random.Random, str, "tuple[str, str] | None", dict[str, Any]], dict[str, Any]]


class Kind(NamedTuple):
    """One kind of alert. `subject` is what it is about (see `subject()`); `roles` are the teams
    whose things it can be about (its team follows the thing's role: disk of a database host is the
    database team's); `facts` draws the template fields for a level (or for a boundary between two
    levels, for the ambiguous share): at least `value` (short, for SDK states), `num` and `thr`
    (the metric's value and the rule's threshold, for Cloud Monitoring)."""

    key: str
    subject: str
    roles: tuple[str, ...]
    names: tuple[str, ...] | dict[str, tuple[str, ...]]  # space-separated words; per level if a dict
    levels: dict[str, float]  # level -> weight
    facts: Facts
    summaries: tuple[str, ...]
    descriptions: tuple[str, ...] = ()
    metric: str = ""
    engines: tuple[str, ...] = ()  # engines of "db" subjects; technologies of "tech" subjects
    numeric: bool = False  # has boundaries, so an ambiguous share
    weight: float = 1.0  # how often it is drawn, against the others
    states: dict[str, dict[str, list[Any]]] | None = None  # state kinds: tech ("*": any) -> level -> states
    labels: Callable[[random.Random, dict[str, Any]], dict[str, Any]] | None = None  # the kind's own labels


def scale(
    ranges: dict[str, tuple[float, float]],
    show: Callable[[random.Random, float], str],
    more: Callable[[random.Random, str, float, dict[str, Any]], dict[str, Any]] | None = None,
) -> Facts:
    """Facts for a metric whose value decides the level: `ranges` per level (adjacent levels share a
    boundary). A value is drawn inside its level's range, away from the boundaries; the ambiguous
    share is drawn within a tenth of a range from a boundary, where the level is a coin flip."""

    def facts(
        rng: random.Random, level: str, pair: tuple[str, str] | None, f: dict[str, Any]
    ) -> dict[str, Any]:
        if pair is None:
            lo, hi = ranges[level]
            margin = 0.12 * (hi - lo)
            v = rng.uniform(lo + margin, hi - margin)
        else:
            a, b = ranges[pair[0]], ranges[pair[1]]
            edge = a[1] if a[1] == b[0] else a[0]
            width = 0.08 * min(a[1] - a[0], b[1] - b[0])
            v = rng.uniform(edge - width, edge + width)
        first, last = ranges[next(iter(ranges))], ranges[list(ranges)[-1]]
        rising = last[0] >= first[0]
        rule = pair[0] if pair else level  # the rule that fired: the lower one at a boundary
        thr = ranges[rule][0] if rising else ranges[rule][1]
        out = {"num": v, "thr": thr, "value": show(rng, v), "threshold": show(rng, thr), "above": rising}
        if more is not None:
            out.update(more(rng, level if pair is None else rule, v, f))
        return out

    return facts


def _pick(
    table: dict[str, list[str]],
) -> Callable[[random.Random, str, float, dict[str, Any]], dict[str, Any]]:
    """Extra fields: a phrase per level."""

    def draw(rng: random.Random, level: str, v: float, f: dict[str, Any]) -> dict[str, Any]:
        return {"note": rng.choice(table[level])}

    return draw


ETA: dict[str, list[str]] = _PHRASINGS["eta"]


def _disk_more(rng: random.Random, level: str, v: float, f: dict[str, Any]) -> dict[str, Any]:
    size = rng.choice([50, 100, 200, 500, 1000, 2000])
    free = size * (100 - v) / 100
    mount = f.get("mount") or rng.choice(
        ["/var/lib/postgresql", "/var/lib/mysql", "/data"]
        if f["role"] == "database"
        else ["/", "/var", "/data", "/var/log", "/srv"]
    )
    return {
        "free": f"{_num(free)}GiB" if free >= 1 else f"{round(free * 1024)}MiB",
        "eta": rng.choice(ETA[level]),
        "mount": mount,
        "device": rng.choice(["/dev/sda1", "/dev/nvme0n1p1", "/dev/vdb", "/dev/mapper/data"]),
        "labels": {"mountpoint": mount, "device": rng.choice(["nvme0n1p1", "sda1", "vdb", "dm-0"])}
        if rng.random() < 0.6
        else {},
    }


def fields(spec: dict[str, Any]) -> Callable[..., dict[str, Any]]:
    """A drawer of the fields of a data table, in order: a number or text as it is, an array one of
    its items (`rng.choice`), {randint = [a, b]}, {uniform = [a, b]}, {format = "{} of {}", args =
    [...]} (the args drawn in order), {var = "n"} (a value named earlier with `as = "n"`), {fact =
    "topic"} (the alert's own fact, the drawer's last argument)."""

    def draw(rng: random.Random, *args: Any) -> dict[str, Any]:
        names: dict[str, Any] = {}
        return {name: _field(rng, s, names, args[-1]) for name, s in spec.items()}

    return draw


def _field(rng: random.Random, spec: Any, names: dict[str, Any], fact: dict[str, Any]) -> Any:
    if isinstance(spec, list):
        return rng.choice(spec)
    if not isinstance(spec, dict):
        return spec
    if "choice" in spec:
        value = rng.choice(spec["choice"])
    elif "randint" in spec:
        value = rng.randint(*spec["randint"])
    elif "uniform" in spec:
        value = rng.uniform(*spec["uniform"])
    elif "format" in spec:
        value = spec["format"].format(*(_field(rng, a, names, fact) for a in spec["args"]))
    elif "fact" in spec:
        value = fact[spec["fact"]]
    else:
        value = names[spec["var"]]
    if "as" in spec:
        names[spec["as"]] = value
    return value


def _fixed(table: dict[str, Callable[[random.Random, dict[str, Any]], dict[str, Any]]]) -> Facts:
    """Facts for a kind whose level is a state (down, expired, 0 of 3 ready): one draw per level."""

    def facts(
        rng: random.Random, level: str, pair: tuple[str, str] | None, f: dict[str, Any]
    ) -> dict[str, Any]:
        out = table[level](rng, f)
        out.setdefault("above", out["num"] >= out["thr"])
        out.setdefault("threshold", _num(out["thr"]))
        return out

    return facts


def _replicas(rng: random.Random, level: str) -> tuple[int, int]:
    total = rng.choice([3, 4, 5, 6, 8, 10, 12])
    ready = {
        "info": total,
        "warning": total - 1,
        "error": max(1, total // 2 - rng.randint(0, 1)),
        "critical": 0,
    }[level]
    return ready, total


def _replica_facts(level: str) -> Callable[[random.Random, dict[str, Any]], dict[str, Any]]:
    def draw(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
        ready, total = _replicas(rng, level)
        return {
            "ready": ready,
            "total": total,
            "value": f"{ready}/{total} ready",
            "num": ready,
            "thr": total,
            "down": total - ready,
            "restarts": rng.randint(
                *{"warning": (3, 6), "error": (8, 30), "critical": (10, 60), "info": (1, 2)}[level]
            ),
        }

    return draw


def _down_facts(level: str) -> Callable[[random.Random, dict[str, Any]], dict[str, Any]]:
    """n of total members down: warning one of many, error about half or a redundant one, critical all."""

    def draw(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
        total = rng.choice([2, 3, 4, 6])
        down = {"warning": 1, "error": max(total - 1 if total < 4 else 2, total // 2), "critical": total}[
            level
        ]
        if level == "warning":
            total = max(total, 4)
        return {
            "down": down,
            "total": total,
            "up": total - down,
            "value": f"{total - down}/{total} up",
            "num": total - down,
            "thr": total,
        }

    return draw
