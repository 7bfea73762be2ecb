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


def host_reboot_info(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": "rebooted for a kernel update",
        "num": 1,
        "thr": 1,
        "note": rng.choice(["Planned maintenance window.", "Patch reboot, services came back."]),
    }


def host_reboot_warning(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": f"rebooted unexpectedly {rng.randint(3, 50)}m ago",
        "num": 1,
        "thr": 1,
        "note": rng.choice(["Services are back up.", "Cause unknown; host healthy since."]),
    }


def host_reboot_error(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": f"rebooted {rng.randint(3, 8)} times in the last hour",
        "num": rng.randint(3, 8),
        "thr": 2,
        "note": rng.choice(["The host is in a reboot loop.", "Kernel panics on boot."]),
    }


def nic_errors_more(rng: random.Random, level: str, v: float, f: dict[str, Any]) -> dict[str, Any]:
    return {"iface": rng.choice(["eth0", "ens5", "eno1", "bond0", "enp3s0"])}


def oom_killed_info(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "kills": 1,
        "window": "24h",
        "value": "1 OOM kill in 24h",
        "num": 1,
        "thr": 1,
        "state": "it restarted and is healthy",
    }


def oom_killed_warning(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "kills": (k := rng.randint(2, 4)),
        "window": "1h",
        "value": f"{k} OOM kills in 1h",
        "num": k,
        "thr": 2,
        "state": "other replicas are serving",
    }


def oom_killed_error(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "kills": (k := rng.randint(6, 20)),
        "window": "1h",
        "value": f"{k} OOM kills in 1h",
        "num": k,
        "thr": 5,
        "state": "half of the replicas are down at any time",
    }


def oom_killed_critical(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "kills": (k := rng.randint(10, 40)),
        "window": "30m",
        "value": f"all replicas OOM-killed, {k} kills in 30m",
        "num": k,
        "thr": 5,
        "state": "no replica stays up",
    }


def pods_pending_warning(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "n": (n := rng.randint(1, 3)),
        "value": f"{n} pods pending",
        "num": n,
        "thr": 1,
        "dur": rng.choice(["10m", "15m"]),
        "state": "the other replicas are serving",
    }


def pods_pending_error(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "n": (n := rng.randint(5, 25)),
        "value": f"{n} pods pending",
        "num": n,
        "thr": 5,
        "dur": rng.choice(["1h", "45m"]),
        "state": "capacity is short for the next traffic peak",
    }


def pods_pending_critical(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "n": (n := rng.randint(3, 12)),
        "value": f"0/{n} replicas scheduled",
        "num": n,
        "thr": 1,
        "dur": rng.choice(["20m", "30m"]),
        "state": "no replica is running",
    }


def node_not_ready_warning(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "k": 1,
        "nodes": (t := rng.randint(8, 40)),
        "value": f"1/{t} nodes NotReady",
        "num": 1,
        "thr": 1,
        "dur": "5m",
    }


def node_not_ready_error(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "k": (k := rng.randint(2, 4)),
        "nodes": (t := rng.randint(10, 30)),
        "value": f"{k}/{t} nodes NotReady",
        "num": k,
        "thr": 2,
        "dur": "30m",
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


def hpa_maxed_info(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "max": (m := rng.choice([5, 10, 20])),
        "value": f"at {m}/{m} replicas, CPU {rng.randint(55, 70)}%",
        "num": m,
        "thr": m,
        "dur": "10m",
    }


def hpa_maxed_warning(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "max": (m := rng.choice([5, 10, 20])),
        "value": f"at {m}/{m} replicas, CPU {rng.randint(85, 97)}%",
        "num": m,
        "thr": m,
        "dur": "45m",
    }


def hpa_maxed_error(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "max": (m := rng.choice([5, 10, 20])),
        "value": f"at {m}/{m} replicas, requests queueing",
        "num": m,
        "thr": m,
        "dur": "2h",
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


def job_failed_warning(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": "failed; next run in 1h",
        "num": 1,
        "thr": 1,
        "note": "BackoffLimitExceeded; the next run is in 1h.",
    }


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
    "host_reboot_info": host_reboot_info,
    "host_reboot_warning": host_reboot_warning,
    "host_reboot_error": host_reboot_error,
    "nic_errors_more": nic_errors_more,
    "oom_killed_info": oom_killed_info,
    "oom_killed_warning": oom_killed_warning,
    "oom_killed_error": oom_killed_error,
    "oom_killed_critical": oom_killed_critical,
    "pods_pending_warning": pods_pending_warning,
    "pods_pending_error": pods_pending_error,
    "pods_pending_critical": pods_pending_critical,
    "node_not_ready_warning": node_not_ready_warning,
    "node_not_ready_error": node_not_ready_error,
    "node_not_ready_critical": node_not_ready_critical,
    "pvc_full_more": pvc_full_more,
    "hpa_maxed_info": hpa_maxed_info,
    "hpa_maxed_warning": hpa_maxed_warning,
    "hpa_maxed_error": hpa_maxed_error,
    "job_failed_info": job_failed_info,
    "job_failed_warning": job_failed_warning,
    "job_failed_error": job_failed_error,
    "job_failed_critical": job_failed_critical,
}
