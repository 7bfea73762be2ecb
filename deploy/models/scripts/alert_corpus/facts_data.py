"""The facts of the database, cache and queue kinds that are drawn by code (data/kinds.toml names
them)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from .common import _count
from .kinds import ETA


def db_down_error(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": "down",
        "num": 0,
        "thr": 1,
        "member": rng.choice(["replica", "standby", "secondary", "read replica"]),
        "state": rng.choice(
            [
                "the primary is healthy",
                "2 of 3 members are up",
                "reads fail over to the other replicas",
            ]
        ),
    }


def db_down_critical(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": "down",
        "num": 0,
        "thr": 1,
        "member": rng.choice(["primary", "master", "leader", "only node"]),
        "state": rng.choice(
            ["writes are failing", "every application query fails", "no replica can take over"]
        ),
    }


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


def split_brain_critical(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": "2 primaries",
        "num": 2,
        "thr": 1,
        "state": rng.choice(["both accept writes", "data is diverging"]),
    }


def split_brain_warning(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": "failover completed",
        "num": 1,
        "thr": 1,
        "state": rng.choice(["the new primary is healthy", "replicas follow the new leader"]),
    }


def search_health_warning(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": "yellow",
        "shards": rng.randint(1, 8),
        "kind_": "replica",
        "num": 1,
        "thr": 1,
        "dur": "10m",
    }


def search_health_error(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": "yellow",
        "shards": rng.randint(20, 90),
        "kind_": "replica",
        "num": 1,
        "thr": 1,
        "dur": "2h",
    }


def search_health_critical(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": "red",
        "shards": rng.randint(1, 30),
        "kind_": "primary",
        "num": 2,
        "thr": 2,
        "dur": "5m",
    }


def db_readonly_error(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": "replica read-only",
        "num": 1,
        "thr": 1,
        "state": "replication to it stopped; the others take writes",
    }


def db_readonly_critical(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": "primary read-only",
        "num": 1,
        "thr": 1,
        "state": "all writes are rejected",
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


def broker_down_warning(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": f"{(n := rng.randint(2, 20))} under-replicated partitions",
        "num": n,
        "thr": 1,
    }


def broker_down_error(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": f"1 of {(t := rng.choice([3, 5]))} brokers down",
        "num": t - 1,
        "thr": t,
    }


def broker_down_critical(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": f"{(n := rng.randint(3, 40))} partitions offline, producers failing",
        "num": n,
        "thr": 1,
    }


DRAWERS: dict[str, Callable[..., Any]] = {
    "db_down_error": db_down_error,
    "db_down_critical": db_down_critical,
    "db_connections_more": db_connections_more,
    "backup_failed_show": backup_failed_show,
    "wal_disk_more": wal_disk_more,
    "split_brain_critical": split_brain_critical,
    "split_brain_warning": split_brain_warning,
    "search_health_warning": search_health_warning,
    "search_health_error": search_health_error,
    "search_health_critical": search_health_critical,
    "db_readonly_error": db_readonly_error,
    "db_readonly_critical": db_readonly_critical,
    "cache_hit_rate_more": cache_hit_rate_more,
    "kafka_lag_more": kafka_lag_more,
    "broker_down_warning": broker_down_warning,
    "broker_down_error": broker_down_error,
    "broker_down_critical": broker_down_critical,
}
