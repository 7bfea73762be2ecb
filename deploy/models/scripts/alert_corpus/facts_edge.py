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


def vpn_down_critical(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": "both tunnels down",
        "num": 0,
        "thr": 2,
        "state": f"{f['b']} is unreachable",
    }


def error_budget_show(rng: random.Random, v: float) -> str:
    return f"{_num(v)}x"


def error_budget_more(rng: random.Random, level: str, v: float, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "eta": {"warning": "12 days", "error": "3 days", "critical": "2 hours"}[level],
        "window": rng.choice(["1h", "6h", "30m"]),
    }


DRAWERS: dict[str, Callable[..., Any]] = {
    "dns_servfail_more": dns_servfail_more,
    "dns_nxdomain_more": dns_nxdomain_more,
    "cert_expiry_error": cert_expiry_error,
    "cert_expiry_critical": cert_expiry_critical,
    "vpn_down_critical": vpn_down_critical,
    "error_budget_show": error_budget_show,
    "error_budget_more": error_budget_more,
}
