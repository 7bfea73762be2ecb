"""One alert, source-free: its kind, wording, labels, value and the three right answers."""

from __future__ import annotations

import random
from typing import Any

from .catalog import kinds, weights_table
from .common import _alnum, _dur, _fill, needs_page
from .data import table
from .subjects import CLUSTERS, ENGINES, ENVS, REGIONS, SERVICES, _service, subject
from .tech import _tech_subject

_PHRASINGS = table("phrasings")
_CHOICES: dict[str, list[Any]] = _PHRASINGS["alert"]


EXCEPTIONS: list[str] = _PHRASINGS["exceptions"]
SEVERITY_LABEL: dict[str, list[str]] = _PHRASINGS["severity_label"]
PRIORITY: dict[str, str] = _PHRASINGS["priority"]
IMPACT: dict[str, list[str]] = _PHRASINGS["impact"]


def _job_subject(rng: random.Random, role: str) -> dict[str, Any]:
    f = subject(rng, "pod", "application", ())
    if role == "database":
        job = rng.choice(_CHOICES["backup_jobs"])
        f["namespace"] = rng.choice(_CHOICES["job_namespaces"])
    else:
        role = "application"
        job = rng.choice(
            [
                f"{rng.choice(SERVICES)}-sync",
                "invoice-export",
                "report-nightly",
                "email-digest",
                "cleanup-sessions",
                "search-reindex",
                f"{rng.choice(SERVICES)}-migrate",
            ]
        )
    run = f"{job}-{rng.randint(28_000_000, 29_999_999)}"
    f.update(job=job, pod=f"{run}-{_alnum(rng, 5)}", team=role, role=role, subject=job, subject_key="job")
    f["labels"] = {
        "namespace": f["namespace"],
        rng.choice(_CHOICES["job_label_keys"]): run if rng.random() < 0.5 else job,
        "job": "kube-state-metrics",
    }
    return f


def _target_subject(rng: random.Random, role: str) -> dict[str, Any]:
    if role == "database":
        job = rng.choice(ENGINES[rng.choice(list(ENGINES))]["jobs"])
    elif role == "network":
        job = rng.choice(_CHOICES["network_target_jobs"])
    else:
        job = _service(rng)
    return {
        "role": role,
        "team": role,
        "job": job,
        "region": rng.choice(REGIONS),
        "cluster": rng.choice(CLUSTERS),
        "labels": {"job": job},
        "subject": job,
        "subject_key": "job",
    }


# -- one alert -------------------------------------------------------------------------------------


def make_alert(rng: random.Random) -> dict[str, Any]:
    """One alert, source-free: its kind, wording, labels, value and the three right answers."""
    every = kinds()
    kind = rng.choices(every, weights=[k.weight for k in every])[0]
    role = rng.choice(kind.roles)
    if kind.subject == "job":
        f = _job_subject(rng, rng.choice(_CHOICES["job_roles"]))
    elif kind.subject == "target":
        f = _target_subject(rng, role)
    elif kind.subject == "tech":
        f = _tech_subject(rng, rng.choice(kind.engines))
    else:
        f = subject(rng, kind.subject, role, kind.engines)
    weights = kind.levels
    if kind.states is not None:  # the levels this technology has states for
        have = set(kind.states.get("*", {})) | set(kind.states.get(f.get("tech", ""), {}))
        weights = {lv: w for lv, w in kind.levels.items() if lv in have}
    levels = list(weights)
    level = rng.choices(levels, weights=list(weights.values()))[0]
    pair = None
    if kind.numeric and rng.random() < weights_table()["ambiguous"]:
        i = rng.randrange(len(levels) - 1)
        pair = (levels[i], levels[i + 1])
        level = pair[rng.randrange(2)]
    f.setdefault("dur", _dur(rng))
    f.update(
        reason=rng.choice(_CHOICES["pending_reasons"]),
        limit=rng.choice(_CHOICES["memory_limits"]),
        version=f"v{rng.randint(1, 9)}.{rng.randint(0, 40)}.{rng.randint(0, 9)}",
        exc=rng.choice(EXCEPTIONS),
        size=rng.choice(_CHOICES["pvc_sizes"]),
        ago=rng.choice(_CHOICES["last_success_ago"]),
        free_mem=f"{rng.choice(_CHOICES['free_mem_mib'])}MiB",
        job=f.get("job", f.get("service", "node")),
    )
    facts = kind.facts(rng, level, pair, f)
    extra_labels = facts.pop("labels", {})
    f.update(facts)
    if "state" in f:
        f["State"] = f["state"][:1].upper() + f["state"][1:]
    if kind.labels is not None:  # the queue kinds' own labels
        extra_labels = {**kind.labels(rng, f), **extra_labels}
    f["nodes"] = f.get("nodes", rng.randint(6, 40))
    names = kind.names[level] if isinstance(kind.names, dict) else kind.names
    words = (f["alert_title"] if "alert_title" in f else _fill(rng.choice(names), f)).split()
    summary = _fill(rng.choice(kind.summaries), f).strip()
    description = _fill(rng.choice(kind.descriptions), f).strip() if kind.descriptions else ""
    description = " ".join(description.split())
    if rng.random() < 0.25:
        description = f"{description} {rng.choice(IMPACT[level])}".strip()
    labels = {**f["labels"], **extra_labels}
    if rng.random() < 0.45:
        labels["cluster" if kind.subject in ("pod", "job", "dns", "service", "queue") else "region"] = f[
            "cluster" if kind.subject in ("pod", "job", "dns", "service", "queue") else "region"
        ]
    if rng.random() < 0.4:
        labels["env"] = rng.choice(ENVS)
    return {
        "kind": kind.key,
        "team": f["team"],
        "severity": level,
        "page": needs_page(level),
        "ambiguous": pair is not None,
        "words": words,
        "summary": summary,
        "description": description,
        "labels": labels,
        "value": str(f["value"]),
        "num": float(f["num"]),
        "thr": float(f["thr"]),
        "threshold": str(f.get("threshold", f["thr"])),
        "above": bool(f["above"]),
        "metric": _fill(f.get("metric_name") or kind.metric, f),
        "subject": str(f["subject"]),
        "subject_key": f["subject_key"],
        "dur": f["dur"],
        "resource": f.get("host")
        or f.get("node")
        or f.get("pod")
        or f.get("lb")
        or f.get("device")
        or f.get("domain")
        or f.get("service")
        or str(f["subject"]),
        "category": kind.subject,
        "engine": f.get("engine", ""),
        "sentence": f.get("sentence", ""),  # the community template's one sentence
        "state_kind": kind.states is not None,
    }
