"""The states' values drawn by code (data/states.toml names them)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from .states import CRASH_ERRS, PROBE_FAILURES, WHY_RESTART, _pcts


def crashing_any_critical_0(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "n": (n := rng.randint(5, 40)),
        "num": n,
        "thr": 3,
        "err": rng.choice(CRASH_ERRS),
    }


def crashing_any_error_0(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "n": (n := rng.randint(4, 12)),
        "num": n,
        "thr": 3,
        "total": (t := rng.choice([3, 4, 5])),
        "up": t - 1,
    }


def crashing_any_info_0(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {"n": rng.randint(3, 50), "num": 1, "thr": 1, "why": rng.choice(WHY_RESTART)}


def throughput_any_critical_0(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "now": (v := rng.choice([0, 0, 0.1, 0.2, 0.5])),
        "base": rng.choice([120, 450, 900, 2400]),
        "num": v,
        "thr": 1,
        "above": False,
    }


def throughput_any_warning_0(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "pct": (p := rng.randint(35, 60)),
        "base": (b := rng.choice([120, 450, 900, 2400])),
        "now": round(b * (100 - p) / 100),
        "num": round(b * (100 - p) / 100),
        "thr": b * 0.7,
    }


def throughput_any_info_0(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "pct": (p := rng.randint(15, 28)),
        "base": (b := rng.choice([120, 450, 900])),
        "now": round(b * (100 - p) / 100),
        "num": round(b * (100 - p) / 100),
        "thr": b * 0.9,
    }


def client_requests_any_critical_0(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "n": (n := rng.randint(1, 60)),
        "num": n,
        "thr": 0,
        "rw": (rw := rng.choice(["read", "write"])),
        "RW": rw.title(),
        "cl": rng.choice(["QUORUM", "LOCAL_QUORUM"]),
    }


def storage_postgres_error_0(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {"n": (n := rng.randint(16, 19)), "left": 2100 - n * 100, "num": n, "thr": 15}


def brokers_litellm_error_0(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        **_pcts(10, 30, 10)(rng, f),
        "provider": rng.choice(["openai", "anthropic", "vertex_ai", "azure"]),
    }


def versions_any_warning_0(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "num": 2,
        "thr": 1,
        "n": rng.randint(3, 20),
        "v1": f"{(a := rng.randint(1, 9))}.{rng.randint(0, 20)}",
        "v2": f"{a + 1}.0",
    }


def workloads_any_error_0(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "total": (t := rng.choice([4, 6, 8])),
        "ready": t // 2,
        "num": t // 2,
        "thr": t,
    }


def workloads_any_warning_0(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "total": (t := rng.choice([3, 4, 6, 10])),
        "ready": t - 1,
        "num": t - 1,
        "thr": t,
    }


def workloads_any_info_0(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "total": (t := rng.choice([3, 4, 6])),
        "ready": rng.randint(1, t - 1),
        "a": t - 1,
        "num": 1,
        "thr": 1,
    }


def probes_any_critical_0(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {"num": 0, "thr": 1, "reason": rng.choice(PROBE_FAILURES[f["tech"]])}


def probes_http_critical_1(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {"n": (n := rng.randint(1, 9)), "num": -n, "thr": 0}


def probes_http_error_1(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {"n": (n := rng.randint(2, 6)), "num": n, "thr": 7, "above": False}


def probes_http_warning_0(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {"n": (n := rng.randint(11, 19)), "num": n / 10, "thr": 1}


def probes_http_warning_1(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {"n": (n := rng.randint(10, 25)), "num": n, "thr": 30, "above": False}


def probes_http_info_0(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {"n": (n := rng.randint(30, 45)), "num": n, "thr": 45, "above": False}


DRAWERS: dict[str, Callable[..., Any]] = {
    "crashing_any_critical_0": crashing_any_critical_0,
    "crashing_any_error_0": crashing_any_error_0,
    "crashing_any_info_0": crashing_any_info_0,
    "throughput_any_critical_0": throughput_any_critical_0,
    "throughput_any_warning_0": throughput_any_warning_0,
    "throughput_any_info_0": throughput_any_info_0,
    "client_requests_any_critical_0": client_requests_any_critical_0,
    "storage_postgres_error_0": storage_postgres_error_0,
    "brokers_litellm_error_0": brokers_litellm_error_0,
    "versions_any_warning_0": versions_any_warning_0,
    "workloads_any_error_0": workloads_any_error_0,
    "workloads_any_warning_0": workloads_any_warning_0,
    "workloads_any_info_0": workloads_any_info_0,
    "probes_any_critical_0": probes_any_critical_0,
    "probes_http_critical_1": probes_http_critical_1,
    "probes_http_error_1": probes_http_error_1,
    "probes_http_warning_0": probes_http_warning_0,
    "probes_http_warning_1": probes_http_warning_1,
    "probes_http_info_0": probes_http_info_0,
}
