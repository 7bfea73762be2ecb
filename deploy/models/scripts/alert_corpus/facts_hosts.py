"""The facts of the host and Kubernetes kinds that are drawn by code (data/kinds.toml names them)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from .common import _num
from .kinds import _disk_more


def host_cpu_more(rng: random.Random, level: str, v: float, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "cores": (c := rng.choice([4, 8, 16, 32])),
        "load": _num(c * v / 100 * rng.uniform(1.0, 1.6)),
    }


def node_not_ready_critical(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "k": (k := rng.randint(5, 9)),
        "nodes": (t := k + rng.randint(0, 5)),
        "value": f"{k}/{t} nodes NotReady",
        "num": k,
        "thr": 2,
        "dur": "10m",
    }


def pvc_full_more(rng: random.Random, level: str, v: float, f: dict[str, Any]) -> dict[str, Any]:
    return {
        **_disk_more(rng, level, v, {**f, "mount": "/data"}),
        "labels": {"persistentvolumeclaim": f"data-{f['pod']}"},
    }


def job_failed_info(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return rng.choice(
        [
            {
                "value": "failed once, the retry succeeded",
                "num": 1,
                "thr": 1,
                "note": "The retry succeeded.",
            },
            {
                "value": f"took {rng.randint(2, 5)}h, usually 40m; it completed",
                "num": 1,
                "thr": 1,
                "note": "It completed, slower than usual.",
            },
        ]
    )


def job_failed_error(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": f"failed {(n := rng.randint(2, 3))} runs in a row; last success {rng.randint(3, 9)}h ago",
        "num": n,
        "thr": 2,
        "note": f"BackoffLimitExceeded for {f['job']}; the pod exited with code 1.",
    }


def job_failed_critical(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": f"failed {(n := rng.randint(6, 30))} runs in a row; no success for {rng.randint(2, 6)} days",
        "num": n,
        "thr": 5,
        "note": "BackoffLimitExceeded on every run; nothing has succeeded for days.",
    }


DRAWERS: dict[str, Callable[..., Any]] = {
    "host_cpu_more": host_cpu_more,
    "node_not_ready_critical": node_not_ready_critical,
    "pvc_full_more": pvc_full_more,
    "job_failed_info": job_failed_info,
    "job_failed_error": job_failed_error,
    "job_failed_critical": job_failed_critical,
}
