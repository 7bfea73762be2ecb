"""The facts of the DNS, TLS, load balancer, network and SLO kinds that are drawn by code
(data/kinds.toml names them)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from .common import _num


def dns_servfail_more(rng: random.Random, level: str, v: float, f: dict[str, Any]) -> dict[str, Any]:
    return {"labels": {"rcode": "SERVFAIL"} if rng.random() < 0.5 else {}}


def dns_nxdomain_more(rng: random.Random, level: str, v: float, f: dict[str, Any]) -> dict[str, Any]:
    return {"labels": {"rcode": "NXDOMAIN"} if rng.random() < 0.5 else {}}


def cert_expiry_info(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "days": (d := rng.randint(35, 60)),
        "value": f"expires in {d} days",
        "num": d,
        "thr": 30,
    }


def cert_expiry_warning(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "days": (d := rng.randint(9, 25)),
        "value": f"expires in {d} days",
        "num": d,
        "thr": 30,
    }


def cert_expiry_error(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "days": (d := rng.randint(1, 5)),
        "value": f"expires in {d} days" if d > 1 else "expires tomorrow",
        "num": d,
        "thr": 7,
    }


def cert_expiry_critical(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "days": 0,
        "value": rng.choice(
            [
                f"expired {rng.randint(1, 20)} hours ago",
                f"expired {rng.randint(1, 6)} days ago",
                "has expired",
            ]
        ),
        "num": -1,
        "thr": 0,
    }


def edge_5xx_more(rng: random.Random, level: str, v: float, f: dict[str, Any]) -> dict[str, Any]:
    return {"code": rng.choice(["502", "503", "504"])}


def vpn_down_warning(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": f"flapped {(n := rng.randint(3, 9))} times in 1h",
        "num": n,
        "thr": 3,
        "state": "traffic survives on reconnect",
    }


def vpn_down_error(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": "1 of 2 tunnels down",
        "num": 1,
        "thr": 2,
        "state": "traffic runs on the backup tunnel",
    }


def vpn_down_critical(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": "both tunnels down",
        "num": 0,
        "thr": 2,
        "state": f"{f['b']} is unreachable",
    }


def error_rate_more(rng: random.Random, level: str, v: float, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "code": rng.choice(["500", "503", "5xx"]),
        "window": rng.choice(["5m", "10m", "15m"]),
    }


def error_budget_show(rng: random.Random, v: float) -> str:
    return f"{_num(v)}x"


def error_budget_more(rng: random.Random, level: str, v: float, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "eta": {"warning": "12 days", "error": "3 days", "critical": "2 hours"}[level],
        "window": rng.choice(["1h", "6h", "30m"]),
    }


def probe_failing_warning(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": "2 failures in 30m",
        "k": 1,
        "n": 3,
        "num": 1,
        "thr": 1,
        "reason": rng.choice(["HTTP 503", "timeout"]),
    }


def probe_failing_error(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": f"failing from 1 of {(n := rng.choice([3, 4, 5]))} locations",
        "k": 1,
        "n": n,
        "num": 1,
        "thr": 1,
        "reason": rng.choice(["HTTP 500", "timeout"]),
    }


def probe_failing_critical(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": f"failing from all {(n := rng.choice([3, 4, 5]))} locations",
        "k": n,
        "n": n,
        "num": n,
        "thr": 1,
        "reason": rng.choice(["HTTP 503", "connection refused", "timeout"]),
    }


def deploy_failed_info(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": "canary rolled back automatically",
        "num": 1,
        "thr": 1,
        "state": "no user impact",
    }


def deploy_failed_warning(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": f"rollout stuck for {rng.choice([30, 40, 60])}m",
        "num": 1,
        "thr": 1,
        "state": "the old version keeps serving",
    }


def deploy_failed_error(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": "rollout failed, rollback failed",
        "num": 1,
        "thr": 1,
        "state": "half of the pods run the broken version",
    }


def thread_pool_warning(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": f"{(v := rng.randint(80, 92))}% of threads busy",
        "num": v,
        "thr": 80,
    }


def thread_pool_error(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": f"all threads busy, {rng.randint(50, 400)} requests queued",
        "num": 100,
        "thr": 95,
    }


def thread_pool_critical(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": f"pool exhausted, {(r := rng.randint(20, 70))}% of requests rejected",
        "num": r,
        "thr": 1,
    }


DRAWERS: dict[str, Callable[..., Any]] = {
    "dns_servfail_more": dns_servfail_more,
    "dns_nxdomain_more": dns_nxdomain_more,
    "cert_expiry_info": cert_expiry_info,
    "cert_expiry_warning": cert_expiry_warning,
    "cert_expiry_error": cert_expiry_error,
    "cert_expiry_critical": cert_expiry_critical,
    "edge_5xx_more": edge_5xx_more,
    "vpn_down_warning": vpn_down_warning,
    "vpn_down_error": vpn_down_error,
    "vpn_down_critical": vpn_down_critical,
    "error_rate_more": error_rate_more,
    "error_budget_show": error_budget_show,
    "error_budget_more": error_budget_more,
    "probe_failing_warning": probe_failing_warning,
    "probe_failing_error": probe_failing_error,
    "probe_failing_critical": probe_failing_critical,
    "deploy_failed_info": deploy_failed_info,
    "deploy_failed_warning": deploy_failed_warning,
    "deploy_failed_error": deploy_failed_error,
    "thread_pool_warning": thread_pool_warning,
    "thread_pool_error": thread_pool_error,
    "thread_pool_critical": thread_pool_critical,
}
