"""Technologies: what the state kinds are about, with their exporters' jobs, ports and labels."""

from __future__ import annotations

import random
from typing import Any, NamedTuple

from .common import _alnum, _hex
from .data import frozen, table
from .subjects import CLUSTERS, REGIONS, _service

_TECHNOLOGIES = table("technologies")
_CHOICES: dict[str, list[Any]] = _TECHNOLOGIES["choices"]

# -- technologies: what the state kinds are about -------------------------------------------------


class Tech(NamedTuple):
    """A technology as its exporters and rule authors name it; its team is the default policy's
    owner of such systems (etcd, a replicated key-value store: database; Zookeeper, coordinating
    brokers: application; blackbox probes and meshes: network)."""

    team: str
    names: tuple[str, ...]
    jobs: tuple[str, ...]  # "" : the service's own job
    hosts: tuple[str, ...]  # "" : the service's own name (app runtimes)
    ports: tuple[int, ...]
    unit: str  # what one member is called
    m: str  # metric prefix
    ns: tuple[str, ...] = ()  # namespaces when run in Kubernetes
    k8s: float = 0.3  # share of its alerts from pods


TECH: dict[str, Tech] = {k: Tech(**frozen(t)) for k, t in _TECHNOLOGIES["tech"].items()}
POOL_KIND: dict[str, str] = _TECHNOLOGIES["pool_kind"]
# What a store or a broker or a proxy does many times a second, for the throughput kind.
OPS: dict[str, tuple[str, ...]] = frozen(_TECHNOLOGIES["ops"])


def _plural(word: str) -> str:
    if word.endswith("y") and word[-2:] != "ey":
        return word[:-1] + "ies"
    return word + ("es" if word.endswith(("s", "x")) else "s")


def _tech_subject(rng: random.Random, key: str) -> dict[str, Any]:
    """A member of a technology's deployment: host or pod, scrape labels, cluster name."""
    t = TECH[key]
    svc = _service(rng)
    prefix = rng.choice(t.hosts) or svc
    port = rng.choice(t.ports)
    job = rng.choice(t.jobs) or svc.split("-")[0]
    labels: dict[str, str] = {}
    if t.ns and rng.random() < t.k8s:
        pod = (
            f"{prefix}-{rng.randint(0, 4)}"
            if rng.random() < 0.5 or t.unit in ("member", "broker", "node", "server", "replica")
            else f"{prefix}-{_hex(rng, 9)}-{_alnum(rng, 5)}"
        )
        ns = rng.choice(t.ns)
        host = pod
        instance = f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}:{port}"
        labels.update(instance=instance, job=job, namespace=ns, pod=pod)
        if rng.random() < 0.2:
            labels["service"] = prefix if rng.random() < 0.5 else f"{prefix}-metrics"
    else:
        n = rng.randint(1, 12)
        host = rng.choice(
            [f"{prefix}-{n}", f"{prefix}{n:02d}", f"{prefix}-prod-{n}", f"{prefix}-{n}.prod.internal"]
        )
        instance = f"{host}:{port}" if rng.random() < 0.85 else host
        labels.update(instance=instance, job=job)
    base = prefix.split("-")[0] if prefix != svc else key
    cname = rng.choice(
        [f"{base}-prod", f"{base}-main", f"{prefix}", f"{base}-{rng.choice(_CHOICES['cluster_suffixes'])}"]
    )
    if rng.random() < 0.2:
        labels[rng.choice(_CHOICES["cluster_label_keys"])] = cname
    unit = t.unit
    ops = OPS.get(key, ("request",))
    op = rng.choice(ops)
    pool = _service(rng)
    return {
        "role": t.team,
        "team": t.team,
        "tech": key,
        "Tech": rng.choice(t.names),
        "unit": unit,
        "Unit": unit[:1].upper() + unit[1:],
        "units": _plural(unit),
        "m": t.m,
        "host": host,
        "instance": instance,
        "port": port,
        "job": job,
        "cname": cname,
        "service": svc,
        "namespace": labels.get("namespace", rng.choice(t.ns or ("default",))),
        "pool": pool,
        "pool_kind": POOL_KIND.get(key, "backend"),
        "server": rng.choice(
            [f"{pool}-{rng.randint(1, 6)}", f"10.0.{rng.randint(0, 9)}.{rng.randint(2, 250)}:8080"]
        ),
        "op": op,
        "Op": op.title(),
        "ops": _plural(op),
        "ops_m": _plural(op).replace(" ", "_"),
        "topic": rng.choice(_CHOICES["topics"]),
        "queue": rng.choice(_CHOICES["queues"]),
        "group": f"{svc.split('-')[0]}-consumer",
        "app": svc.split("-")[0],
        "dbname": rng.choice(_CHOICES["dbnames"]),
        "region": rng.choice(REGIONS),
        "cluster": rng.choice(CLUSTERS),
        "labels": labels,
        **(
            {"subject": instance, "subject_key": "instance"}
            if rng.random() < 0.6
            else {"subject": host, "subject_key": rng.choice(["host", "server", unit])}
        ),
    }
