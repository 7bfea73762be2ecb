"""What the sinks say about a page: the dedup key, the headline, answers in words, links, and the
generic JSON documents (the webhook's body, the console's line)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from app.alerts.records import Alert, Page

SCHEMA_VERSION = "1"  # of the webhook's and the console's JSON documents
_DEDUP_MAX = 255  # PagerDuty's limit on dedup_key


def dedup_key(alert: Alert) -> str:
    """PagerDuty's `dedup_key` for the alert: its key, or (past PagerDuty's 255 characters) a prefix
    and a digest of it, so every delivery about the alert still carries the same one."""
    if len(alert.key) <= _DEDUP_MAX:
        return alert.key
    digest = hashlib.sha256(alert.key.encode()).hexdigest()
    return f"{alert.key[: _DEDUP_MAX - len(digest) - 1]}:{digest}"


def _markers(page: Page) -> str:
    tags = []
    if page.action != "page":
        tags.append(f"[{page.action}]")
    if not page.classified:
        tags.append("[unclassified]")
    if page.low_confidence:
        tags.append("[low confidence]")
    return " ".join(tags)


def headline(page: Page) -> str:
    """One line a person reads first: markers (`[ticket]`, `[unclassified]`, `[low confidence]`),
    then the alert's title and summary."""
    alert = page.alert
    text = alert.title
    if alert.summary and alert.summary != alert.title:
        text = f"{text}: {alert.summary}"
    markers = _markers(page)
    return f"{markers} {text}" if markers else text


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _links(alert: Alert) -> list[dict[str, str]]:
    """The alert's URL, then every annotation holding a URL (runbook_url, dashboard_url...)."""
    links = [{"href": alert.url, "text": f"Open in {alert.source}"}] if alert.url else []
    for key, value in alert.annotations.items():
        if key.lower().endswith("url") and value.startswith(("https://", "http://")):
            links.append({"href": value, "text": key})
    return links


def answer_text(name: str, answer: Any) -> str:
    """One Jev answer in a few words: `page: yes 0.93`, `team: payments (0.81)`, `severity: 2.4 (0.77)`."""
    if isinstance(answer, Mapping):
        kind = answer.get("type")
        if kind == "noul" and isinstance(answer.get("noul"), int | float):
            return f"{name}: p(yes) {answer['noul']:.2f}"
        if kind == "choice" and "choice" in answer:
            conf = answer.get("confidence")
            return f"{name}: {answer['choice']}" + (f" ({conf:.2f})" if isinstance(conf, int | float) else "")
        if kind == "score" and isinstance(answer.get("score"), int | float):
            conf = answer.get("confidence")
            tail = f" ({conf:.2f})" if isinstance(conf, int | float) else ""
            return f"{name}: {answer['score']:.1f}{tail}"
    return f"{name}: {_clip(json.dumps(answer, default=str), 80)}"


def page_document(page: Page) -> dict[str, Any]:
    """The generic JSON document of a delivery (the webhook's body, the console's line), schema `"1"`:

    {"version": "1", "event": "trigger", "dedup_key": str,   # dedup_key: the alert's key
     "headline": str,                                        # markers + title + summary
     "page": {"action": "page"|"ticket"|"drop", "route": str,
              "severity": "critical"|"error"|"warning"|"info", "classified": bool,
              "low_confidence": bool, "calibrated": bool, "reason": str,
              "answers": {question: Jev answer, probabilities included}},
     "alert": {"source", "key", "status", "title", "summary", "labels": {str: str},
               "annotations": {str: str}, "started_at": ISO 8601 | null, "url": str | null}}
    """
    return {
        "version": SCHEMA_VERSION,
        "event": "trigger",
        "dedup_key": page.alert.key,
        "headline": headline(page),
        "page": _page_fields(page),
        "alert": _alert_document(page.alert),
    }


def _page_fields(page: Page) -> dict[str, Any]:
    """What the router decided, as every sink shows it."""
    return {
        "action": page.action,
        "route": page.route,
        "severity": page.severity,
        "classified": page.classified,
        "low_confidence": page.low_confidence,
        "calibrated": page.calibrated,
        "reason": page.reason,
        "answers": page.answers,
    }


def resolve_document(alert: Alert) -> dict[str, Any]:
    """A resolution: `{"version": "1", "event": "resolve", "dedup_key", "headline", "page": null,
    "alert": {...}}` (the alert as in `page_document`)."""
    return {
        "version": SCHEMA_VERSION,
        "event": "resolve",
        "dedup_key": alert.key,
        "headline": f"[resolved] {alert.title}",
        "page": None,
        "alert": _alert_document(alert),
    }


def _alert_document(alert: Alert) -> dict[str, Any]:
    return {
        "source": alert.source,
        "key": alert.key,
        "status": alert.status,
        "title": alert.title,
        "summary": alert.summary,
        "labels": alert.labels,
        "annotations": alert.annotations,
        "started_at": alert.started_at.isoformat() if alert.started_at else None,
        "url": alert.url,
    }
