"""The synthetic alert-triage task the toy model is trained on, and its eval JSONL.

Standard library only: the training script (engine python) and `dgemma toy-data` (the kit's python)
both import it. An alert is a one-line text from templates (symptom x severity wording x service x
host x extra, in three sentence forms) with three questions:

  team     (choice): database / network / app, decided by keywords (postgres, DNS, 5xx, ...)
  severity (score) : low / medium / high, decided by wording (outage, degraded, minor, ...)
  page     (noul)  : true iff the severity is high

A fifth of the alerts are worded between two adjacent severity levels and their level is drawn
(BETWEEN below), so no model can always be right on severity and page.

Everything is drawn from a seeded random.Random: a seed gives the same alerts on any machine.
Splits use different seeds (train 0, dev 1, test 2); the templates are shared, so held-out alerts
are new combinations of known phrases, not new phrases.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from typing import Any

TEAMS = ("database", "network", "app")
LEVELS = ("low", "medium", "high")
SPLIT_SEEDS = {"train": 0, "dev": 1, "test": 2}
TRAIN_MIX = (0.35, 0.45, 0.2)  # team, severity, page: how often training asks each question

SYMPTOMS = {
    "database": [
        "postgres replica lag at {n}s", "replica lag growing on {db}", "db connection pool exhausted",
        "deadlocks detected in postgres", "slow queries on {db}", "postgres WAL disk filling",
        "db failover triggered on {db}", "mysql replication broken", "db query timeouts",
        "postgres autovacuum stuck", "replica {db} out of sync",
    ],
    "network": [
        "DNS lookups timing out", "packet loss {n}% between zones", "load balancer health checks failing",
        "BGP session down on edge router", "TLS handshake errors at the load balancer",
        "DNS resolver returning SERVFAIL", "packet loss on uplink", "load balancer dropping connections",
        "high network latency between regions", "DNS propagation failing", "firewall rejecting traffic",
    ],
    "app": [
        "unhandled exception in {svc}", "5xx rate {n}% on {svc}", "OOM kills of {svc} workers",
        "{svc} pods in crash loop", "NullPointerException in {svc}", "5xx errors after deploy of {svc}",
        "{svc} out of memory", "exception storm in {svc} logs", "{svc} thread pool exhausted",
        "OOM on {svc} container", "{svc} returning 5xx",
    ],
}  # fmt: skip
SEVERITY = {
    "high": ["CRITICAL: full outage", "outage, all users affected", "critical, service down",
             "sev1: complete outage", "down for every customer", "critical: 100% of requests failing"],
    "medium": ["degraded performance", "warning: elevated errors for some users",
               "intermittent failures", "partial degradation", "elevated error rate, some users affected",
               "degraded, retries succeed"],
    "low": ["info: minor blip", "low priority, single host", "minor, no user impact",
            "notice: self-recovered", "minor warning, no customers affected", "low: cosmetic alert"],
}  # fmt: skip
SERVICES = ["checkout", "search", "billing", "auth", "inventory", "profile", "payments", "feed",
            "catalog", "orders", "notify", "reports"]  # fmt: skip
DBS = ["db-1", "db-2", "pg-main", "pg-replica-3", "orders-db", "users-db"]
HOSTS = ["host-{k}", "node-{k}", "vm-{k}", "ip-10-0-{k}-7", "worker-{k}"]
EXTRAS = ["", "", "Started {m} min ago.", "Runbook linked.", "Ticket INC-{k}.", "Seen in us-east.",
          "Seen in eu-west.", "Alert fired {m} times."]  # fmt: skip

# Real alerts are not always decidable from their text, and a toy that always is would hide what
# re-reads, debiasing and calibration do. So a share of alerts is ambiguous by construction: the
# wording supports two levels and the label is drawn between them, which caps the best possible
# accuracy below 100 % and makes "0.5" the right probability for those alerts. (The same for team,
# a second team's clue in a fifth of the alerts, stalled learning the team within the budget.)
MIXED_SEVERITY = 0.2  # alerts worded between two adjacent levels...
LOWER = 0.5  # ...labelled the lower level this often, else the higher
BETWEEN = {
    ("low", "medium"): ["warning threshold crossed", "some retries, no complaints yet",
                        "error budget burning slowly"],
    ("medium", "high"): ["error rate climbing fast", "latency far above SLO", "many users may be affected"],
}  # fmt: skip

INSTRUCTIONS = {
    "team": "Which team owns this alert?",
    "severity": "How severe is this alert?",
    "page": "Should on-call be paged now?",
}


def make_alert(rng: random.Random) -> dict[str, Any]:
    """One alert: its text and the three right answers (drawn, for the ambiguous share)."""
    team = rng.choice(TEAMS)
    level = rng.choice(LEVELS)
    symptom = rng.choice(SYMPTOMS[team]).format(
        n=rng.randint(2, 95), db=rng.choice(DBS), svc=rng.choice(SERVICES)
    )
    wording = rng.choice(SEVERITY[level])
    if rng.random() < MIXED_SEVERITY:
        pair = rng.choice(list(BETWEEN))
        wording = rng.choice(BETWEEN[pair])
        level = pair[0] if rng.random() < LOWER else pair[1]
    host = rng.choice(HOSTS).format(k=rng.randint(1, 99))
    extra = rng.choice(EXTRAS).format(m=rng.randint(1, 59), k=rng.randint(1000, 9999))
    service = rng.choice(SERVICES)
    form = rng.randrange(3)
    if form == 0:
        text = f"[{wording}] {service}: {symptom} on {host}. {extra}"
    elif form == 1:
        text = f"{service} alert on {host}: {symptom}; {wording}. {extra}"
    else:
        text = f"{symptom} ({service}, {host}) - {wording}. {extra}"
    return {"state": text.strip(), "team": team, "severity": level, "page": level == "high"}


def alerts(split: str, n: int) -> list[dict[str, Any]]:
    """The first n alerts of a split."""
    rng = random.Random(f"toy-alerts:{SPLIT_SEEDS[split]}")
    return [make_alert(rng) for _ in range(n)]


def train_stream(
    seed: int, canonical_share: Callable[[], float] = lambda: 0.0
) -> Iterator[tuple[str, str, str, list[str], int, bool]]:
    """Endless (state, kind, instructions, options in read order, right index, shuffled?).

    Team options and severity levels come shuffled, so the model has to read the option lines; a
    share of them (`canonical_share()`, asked per example: a curriculum) keeps the canonical order.
    Fully shuffled from the start, neither half of the skill gets a gradient before the other
    exists: which team an alert is (content) and where that team sits among the options (lookup).
    """
    rng = random.Random(f"toy-alerts:train:{seed}")
    while True:
        alert = make_alert(rng)
        # The lookups (a name or level among shuffled options) are the hard part; page is easy.
        name = rng.choices(list(INSTRUCTIONS), weights=TRAIN_MIX)[0]
        if name == "page":
            yield alert["state"], "noul", INSTRUCTIONS[name], ["yes", "no"], 0 if alert["page"] else 1, False
            continue
        options = list(TEAMS if name == "team" else LEVELS)
        shuffled = rng.random() >= canonical_share()
        if shuffled:
            rng.shuffle(options)
        kind = "choice" if name == "team" else "score"
        yield alert["state"], kind, INSTRUCTIONS[name], options, options.index(alert[name]), shuffled


def eval_item(alert: dict[str, Any]) -> dict[str, Any]:
    """One line of eval JSONL: a Jev request (canonical option order) and the expected answers."""
    return {
        "request": {
            "state": alert["state"],
            "questions": {
                "team": {"type": "choice", "instructions": INSTRUCTIONS["team"],
                         "criteria": dict.fromkeys(TEAMS)},
                "severity": {"type": "score", "instructions": INSTRUCTIONS["severity"],
                             "criteria": list(LEVELS)},
                "page": {"type": "noul", "instructions": INSTRUCTIONS["page"]},
            },
        },
        "expected": {
            "team": alert["team"], "severity": LEVELS.index(alert["severity"]), "page": alert["page"],
        },
    }  # fmt: skip


def eval_jsonl(split: str, n: int) -> str:
    """The split's first n alerts as eval JSONL text."""
    return "".join(json.dumps(eval_item(a)) + "\n" for a in alerts(split, n))
