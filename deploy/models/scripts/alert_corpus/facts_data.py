"""The facts of the database, cache and queue kinds that are drawn by code (data/kinds.toml names
them)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from .common import _count
from .kinds import ETA


def db_connections_more(rng: random.Random, level: str, v: float, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "max": (m := rng.choice([100, 200, 500, 1000])),
        "used": max(1, round(m * v / 100)),
        "note": "New connections are refused." if level == "critical" else "",
    }


def backup_failed_show(rng: random.Random, v: float) -> str:
    return f"{round(v)}h" if v < 72 or rng.random() < 0.4 else f"{round(v / 24)} days"


def wal_disk_more(rng: random.Random, level: str, v: float, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "dir": "pg_wal" if f["engine"] == "postgres" else "binlog",
        "eta": rng.choice(ETA[level]),
    }


def cache_hit_rate_more(rng: random.Random, level: str, v: float, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "cache": rng.choice(
            [f"memcached-{f['service']}", f"{f['service']}-cache", "redis-cache", "session-cache"]
        )
    }


def kafka_lag_more(rng: random.Random, level: str, v: float, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "msgs": _count(rng, v * rng.choice([20, 50, 200, 1000])),
        "note": rng.choice(
            {
                "info": ["Catching up."],
                "warning": ["Consumers keep up slowly."],
                "error": ["Processing is minutes behind."],
                "critical": [
                    "Orders are not being shipped.",
                    "Payments are not confirmed to customers.",
                    "Customers see stale order status.",
                ],
            }[level]
        ),
    }


def broker_down_error(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": f"1 of {(t := rng.choice([3, 5]))} brokers down",
        "num": t - 1,
        "thr": t,
    }


def queue_age_labels(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {rng.choice(["queue_name", "subscription", "stream"]): f["queue"]}


DRAWERS: dict[str, Callable[..., Any]] = {
    "queue_age_labels": queue_age_labels,
    "db_connections_more": db_connections_more,
    "backup_failed_show": backup_failed_show,
    "wal_disk_more": wal_disk_more,
    "cache_hit_rate_more": cache_hit_rate_more,
    "kafka_lag_more": kafka_lag_more,
    "broker_down_error": broker_down_error,
}
