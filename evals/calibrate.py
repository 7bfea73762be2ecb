"""`dgemma calibrate`: read labelled data through the gateway, fit temperatures on a dev split, and
measure them on the test split the fit never saw.

The split is a hash of each item's request, so it does not depend on the file's order and an item
stays on its side when the file grows. A question name with at least `min_samples` dev answers gets
its own temperature; every question type gets one fitted on all its dev answers, the fallback for
names with fewer answers and for questions the data never asked.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.gateway.decisions.calibration import fit_temperature, nll, scaled
from app.gateway.decisions.calibration_file import Calibration, Fit, Kind
from app.jev.wire import ReadPolicy
from evals.data import Item
from evals.errors import EvalDataError, EvalError
from evals.metrics import Bin, Outcome, accuracy, brier, ece, reliability
from evals.run import ask, probabilities

DEV_SHARE = 0.5
MIN_SAMPLES = 50
SPLIT_RULE = "sha256 of the request (sorted-key JSON): first 8 hex digits / 16**8 < dev_share is dev"


def is_dev(item: Item, dev_share: float) -> bool:
    """Which side of the split an item is on: a function of its request alone."""
    canonical = json.dumps(item.request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return int(hashlib.sha256(canonical.encode()).hexdigest()[:8], 16) / 16**8 < dev_share


@dataclass(frozen=True)
class Answer:
    """One scored question's answer: probabilities over its options (file order) and the truth."""

    question: str
    kind: Kind
    probs: tuple[float, ...]
    truth: int
    dev: bool


@dataclass(frozen=True)
class Figures:
    """A question's test-split figures before and after its temperature."""

    question: str
    kind: str
    scope: str  # "name" or "type": which fit it gets
    temperature: float
    dev: int
    test: int
    before: dict[str, float]
    after: dict[str, float]
    bins_before: list[Bin]
    bins_after: list[Bin]


def answers(items: Sequence[Item], responses: Sequence[dict[str, Any]], dev_share: float) -> list[Answer]:
    """The scored answers of every item, refused if the service already calibrates them."""
    out = []
    for item, response in zip(items, responses, strict=True):
        dev = is_dev(item, dev_share)
        for scored in item.scored:
            if response["diagnostics"][scored.name].get("calibrated"):
                raise EvalError(
                    f"line {item.line}: the service already applies a calibration file, so these are not "
                    "the model's own probabilities. Fit on a gateway started without DGEMMA_CALIBRATION_FILE."
                )
            probs = probabilities(scored, response["answers"][scored.name], reversed_order=False)
            out.append(Answer(scored.name, scored.kind, probs, scored.truth, dev))  # type: ignore[arg-type]
    return out


def _fit(samples: Sequence[Answer], kind: Kind) -> Fit:
    pairs = [(a.probs, a.truth) for a in samples]
    t = fit_temperature(pairs)
    return Fit(
        type=kind, temperature=t, samples=len(pairs), nll_before=nll(pairs, 1.0), nll_after=nll(pairs, t)
    )


def fit(all_answers: Sequence[Answer], min_samples: int) -> tuple[dict[str, Fit], dict[Kind, Fit]]:
    """Temperatures from the dev answers only: per question name with enough of them, per type."""
    dev = [a for a in all_answers if a.dev]
    by_name: dict[str, list[Answer]] = defaultdict(list)
    by_type: dict[Kind, list[Answer]] = defaultdict(list)
    for a in dev:
        by_name[a.question].append(a)
        by_type[a.kind].append(a)
    if not dev:
        raise EvalDataError("the dev split is empty: give more items or a larger --dev-share")
    names = {
        name: _fit(group, group[0].kind)
        for name, group in by_name.items()
        if len(group) >= min_samples and len({a.kind for a in group}) == 1
    }
    return names, {kind: _fit(group, kind) for kind, group in by_type.items()}


def _metrics(outcomes: Sequence[Outcome], pairs: Sequence[tuple[tuple[float, ...], int]]) -> dict[str, float]:
    return {
        "accuracy": accuracy(outcomes),
        "ece": ece(outcomes),
        "brier": brier(outcomes),
        "nll": nll(pairs, 1.0),
    }


def figures(all_answers: Sequence[Answer], calibration: Calibration) -> list[Figures]:
    """Per question, on the test split: accuracy, ECE, Brier and NLL before and after."""
    groups: dict[str, list[Answer]] = defaultdict(list)
    for a in all_answers:
        groups[a.question].append(a)
    out = []
    for name, group in groups.items():
        kind = group[0].kind
        test = [a for a in group if not a.dev]
        t = calibration.temperature(name, kind)
        if not test or t is None:
            continue
        raw = [Outcome(a.probs, a.truth) for a in test]
        cal = [Outcome(tuple(scaled(a.probs, t)), a.truth) for a in test]
        out.append(
            Figures(
                question=name,
                kind=kind,
                scope="name"
                if name in calibration.by_name and calibration.by_name[name].type == kind
                else "type",
                temperature=t,
                dev=len(group) - len(test),
                test=len(test),
                before=_metrics(raw, [(o.probs, o.truth) for o in raw]),
                after=_metrics(cal, [(o.probs, o.truth) for o in cal]),
                bins_before=reliability(raw),
                bins_after=reliability(cal),
            )
        )
    return out


@dataclass(frozen=True)
class Result:
    calibration: Calibration
    figures: list[Figures]
    seconds: float


def calibrate(
    url: str,
    items: Sequence[Item],
    *,
    data: Path,
    headers: dict[str, str],
    policy: str | None = None,
    model: str | None = None,
    dev_share: float = DEV_SHARE,
    min_samples: int = MIN_SAMPLES,
    concurrency: int = 4,
    timeout_s: float = 300.0,
) -> Result:
    """Ask every item once (options as written) under `policy` (None: the deployment's default),
    fit on the dev split, measure on the test split. Progress on stderr."""
    asked = ask(url, items, [policy], ("canonical",), "calibrate", headers=headers, model=model,
                concurrency=concurrency, timeout_s=timeout_s)  # fmt: skip
    responses = asked.responses[(policy, "canonical")]
    policies = {json.dumps(r["read_policy"], sort_keys=True) for r in responses}
    if len(policies) != 1:
        raise EvalError(
            f"the service answered under {len(policies)} read policies during the run: {policies}"
        )
    all_answers = answers(items, responses, dev_share)
    by_name, by_type = fit(all_answers, min_samples)
    dev_items = sum(is_dev(item, dev_share) for item in items)
    calibration = Calibration(
        model=responses[0]["model"],
        read_policy=ReadPolicy.model_validate(responses[0]["read_policy"]),
        by_name=by_name,
        by_type=by_type,
        data={
            "path": str(data),
            "sha256": hashlib.sha256(data.read_bytes()).hexdigest(),
            "items": len(items),
            "dev_items": dev_items,
            "test_items": len(items) - dev_items,
            "dev_share": dev_share,
            "split": SPLIT_RULE,
        },
        created=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    )
    result = figures(all_answers, calibration)
    calibration = calibration.model_copy(update={"test": [_summary(f) for f in result]})
    return Result(calibration, result, asked.seconds)


def _summary(f: Figures) -> dict[str, object]:
    return {
        "question": f.question, "type": f.kind, "scope": f.scope, "temperature": round(f.temperature, 4),
        "dev": f.dev, "test": f.test,
        "before": {k: round(v, 4) for k, v in f.before.items()},
        "after": {k: round(v, 4) for k, v in f.after.items()},
    }  # fmt: skip
