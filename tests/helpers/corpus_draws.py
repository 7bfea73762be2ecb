"""Draws of deploy/models/scripts/alert_corpus, reduced to hashes: every stream and table the training
scripts read, so two processes' draws can be compared (tests/deploy/models/test_alert_corpus_draws.py).

    PYTHONPATH=. .venv/bin/python -m tests.helpers.corpus_draws   # this process's draws, as JSON
"""

from __future__ import annotations

import hashlib
import itertools
import json
from types import ModuleType
from typing import Any

SPLITS = ("train", "dev", "test")
SOURCES = (None, "alertmanager", "grafana", "cloud-monitoring")
FULL = 2  # draws kept whole at the head of each stream, to read a difference


def digest(value: Any) -> str:
    """The first 16 hex digits of the sha256 of the value's JSON, key order kept (it is what the
    model reads)."""
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _streams(corpus: ModuleType) -> dict[str, list[Any]]:
    """Every stream and function the training scripts use (train_toy.py), 3,000 draws in all."""
    policy = corpus.policy_questions(corpus.POLICY)
    out: dict[str, list[Any]] = {}
    for split in SPLITS:  # 1,800
        for source in SOURCES:
            out[f"examples:{split}:{source or 'any'}"] = corpus.examples(split, 150, source)
    for split in SPLITS:  # 300
        out[f"sdk_examples:{split}"] = corpus.sdk_examples(split, 100)
    for seed in (0, 1, 7):  # 600, a varying reordered share for one of them
        share = (lambda: 0.25) if seed != 7 else itertools.cycle([0.0, 0.5, 1.0]).__next__
        out[f"train_stream:{seed}"] = list(itertools.islice(corpus.train_stream(seed, policy, share), 200))
    out["catalogue_stream:3"] = list(itertools.islice(corpus.catalogue_stream(3, policy), 100))  # 100
    dev = corpus.catalogue("dev")  # 200: train_toy.py's dev reads of the catalogue
    out["catalogue:dev"] = [
        corpus.read_of(
            corpus.unlabelled(row["state"]), q, corpus.answer_index(q, name, corpus.catalogue_answers(row)),
            corpus.option_order(len(q.options), k), "",
        )
        for row, name, k in zip(dev[:100], itertools.cycle(("page", "severity")), itertools.cycle((0, 1, 1)))
        for q in (policy[name],)
    ] + [[corpus.needs_page(row["severity"]), row["split"]] for row in dev[:100]]  # fmt: skip
    return out


def _tables(corpus: ModuleType) -> dict[str, Any]:
    """The constants the scripts read, and the kinds' draw weights."""
    orders = {f"{n}:{k}": corpus.option_order(n, k) for n in range(3, 7) for k in range(6)}
    orders |= {f"2:{k}": corpus.option_order(2, k) for k in range(2)}
    return {
        "policy": corpus.policy_questions(corpus.POLICY),
        "sdk_questions": corpus.SDK_QUESTIONS,
        "teams_levels": [corpus.TEAMS, corpus.LEVELS, corpus.SDK_TEAMS, corpus.SDK_LEVELS],
        "weights": [[k.key, k.weight] for k in corpus.kinds()],
        "option_orders": orders,
        "go_float": [corpus.go_value(v) for v in (0.0, 1.0, 97.3, 1e6, 123456.7, 1e-5, 0.0001, -2.5, 1 / 3)],
    }


def record(corpus: ModuleType) -> dict[str, Any]:
    """Per stream its draws' digests and the first FULL draws whole; the tables whole."""
    streams = _streams(corpus)
    return {
        "draws": sum(len(v) for v in streams.values()),
        "tables": json.loads(json.dumps(_tables(corpus))),
        "streams": {
            name: {
                "full": json.loads(json.dumps(draws[:FULL], default=repr)),
                "digests": [digest(d) for d in draws],
            }
            for name, draws in streams.items()
        },
    }


if __name__ == "__main__":
    from deploy.devstack.stack import script_module

    print(json.dumps(record(script_module("alert_corpus")), ensure_ascii=False))
