"""The three inbound webhook shapes, and their conversion to `Alert` records.

- Alertmanager's webhook (`version: "4"`): a group of alerts, each with its own status and
  fingerprint (prometheus/alertmanager `notify/webhook`, `template.Data`).
- Grafana Alerting's webhook contact point (`version: "1"`): the same shape plus `orgId`, `title`,
  `state`, `message` and per-alert `values`, `silenceURL`, `dashboardURL`, `panelURL`, `imageURL`
  (grafana/alerting `receivers/webhook/v1`, `templates.ExtendedAlert`).
- Cloud Monitoring's webhook channel, schema `version: "1.2"`: one incident per POST.

Fields the router reads are validated strictly, and a malformed one is a 400 naming it
(`alerts[2].fingerprint: field required`). Fields it only passes along or ignores are accepted as
they come: a sender adding or retyping a field it does not read must never cost a page.
Sources of the shapes: tests/data/alerts/SOURCES.md.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainValidator, ValidationError

from app.alerts.records import Alert, Source, Status, labels_fingerprint, summary_of
from app.core.errors import InvalidRequest
from app.core.models import validation_problems
from app.jev.wire import parse_json

_ZERO_YEAR = 1  # Go's zero time.Time, `0001-01-01T00:00:00Z`: Alertmanager's "no time"
_MAX_ERRORS = 3  # named in one message; the rest are counted
_MAX_SHOWN = 60  # characters of an offending value echoed back


@dataclass(frozen=True)
class Batch:
    """The alerts of one delivery. `truncated`: alerts the sender left out (`max_alerts`), which
    it does not name; the router can only count and log them."""

    alerts: tuple[Alert, ...]
    truncated: int = 0
    group_key: str | None = None


# -- field types -----------------------------------------------------------------------------


def _show(value: Any) -> str:
    """An offending value as the message echoes it: JSON, short."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def _none_as_empty(value: Any) -> Any:
    # Go marshals a nil map as null; an absent map and an empty one mean the same here.
    return {} if value is None else value


def _text(value: Any) -> str:
    """A label value as text: strings as they are, other JSON values as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _stringify_map(value: Any) -> Any:
    # Cloud Monitoring's label maps are documented as strings, but values arrive as numbers or
    # booleans in the wild; null values carry nothing and are dropped.
    if value is None:
        return {}
    if isinstance(value, dict):
        return {str(k): _text(v) for k, v in value.items() if v is not None}
    return value  # not an object: left for the dict type to refuse, with the field's name


def _rfc3339(value: Any) -> dt.datetime | None:
    if value is None:
        return None
    parsed = _parse_time(value) if isinstance(value, str) else None
    if parsed is None:
        raise ValueError(f"expected an RFC 3339 time, got {_show(value)}")
    return None if parsed.year == _ZERO_YEAR else parsed


def _parse_time(text: str) -> dt.datetime | None:
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None  # RFC 3339 requires an offset


def _epoch_seconds(value: Any) -> dt.datetime | None:
    """Cloud Monitoring's `started_at`: integer seconds since the epoch (null until known)."""
    if value is None:
        return None
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            parsed = _parse_time(value)  # seen in hand-written samples, never from Google
            if parsed is not None:
                return parsed
    if number is not None:
        try:
            return dt.datetime.fromtimestamp(number, tz=dt.UTC)
        except (OverflowError, OSError, ValueError):
            pass
    raise ValueError(f"expected seconds since the epoch, got {_show(value)}")


Labels = Annotated[dict[str, str], BeforeValidator(_none_as_empty)]
LooseLabels = Annotated[dict[str, str], BeforeValidator(_stringify_map)]
Rfc3339 = Annotated[dt.datetime | None, PlainValidator(_rfc3339)]
EpochSeconds = Annotated[dt.datetime | None, PlainValidator(_epoch_seconds)]
NonEmpty = Annotated[str, Field(min_length=1)]


class _Payload(BaseModel):
    # Unknown fields are ignored: senders add fields over versions.
    model_config = ConfigDict(extra="ignore", frozen=True)


# -- Alertmanager and Grafana ------------------------------------------------------------------


class _GroupedAlert(_Payload):
    """One alert of an Alertmanager-shaped group."""

    status: Status
    labels: Labels = Field(default_factory=dict)
    annotations: Labels = Field(default_factory=dict)
    startsAt: Rfc3339 = None
    generatorURL: str | None = None
    # Not read: `endsAt` (`status` says whether the alert is resolved).


class _Group(_Payload):
    """An Alertmanager-shaped group (Alertmanager's `notify/webhook.Message`)."""

    version: str | None = None  # "4" or Grafana's "1"; not enforced: a compatible bump must not cost pages
    groupKey: str | None = None
    truncatedAlerts: Annotated[int, Field(ge=0)] = 0
    # Not read (each alert carries its own labels and status): status, receiver, groupLabels,
    # commonLabels, commonAnnotations, externalURL.


class AlertmanagerAlert(_GroupedAlert):
    fingerprint: NonEmpty


class AlertmanagerWebhook(_Group):
    alerts: list[AlertmanagerAlert]


class GrafanaAlert(_GroupedAlert):
    fingerprint: str | None = None  # derived from the labels when absent or empty
    dashboardURL: str | None = None
    panelURL: str | None = None
    # Not read: silenceURL, imageURL, values ({"B": 44.2, "C": 1}: the query results behind the
    # state), valueString.


class GrafanaWebhook(_Group):
    alerts: list[GrafanaAlert]
    # Not read (Grafana marks them for deprecation): orgId, title, state, message.


def _grouped_alert(source: Source, a: _GroupedAlert, fingerprint: str, url: str | None) -> Alert:
    title = a.labels.get("alertname", "").strip() or "(no alertname)"
    return Alert(
        source=source,
        key=f"{source}:{fingerprint}",
        status=a.status,
        title=title,
        summary=summary_of(title, a.annotations),
        labels=dict(a.labels),
        annotations=dict(a.annotations),
        started_at=a.startsAt,
        url=url or None,
    )


def from_alertmanager(payload: Any) -> Batch:
    """An Alertmanager webhook body (parsed JSON) as alerts; InvalidRequest naming the bad field."""
    hook = _validate(AlertmanagerWebhook, payload)
    alerts = tuple(_grouped_alert("alertmanager", a, a.fingerprint, a.generatorURL) for a in hook.alerts)
    return Batch(alerts, hook.truncatedAlerts, hook.groupKey)


def from_grafana(payload: Any) -> Batch:
    """A Grafana webhook contact point's body as alerts. Without a `fingerprint` (old versions,
    custom payloads), the key is `labels_fingerprint(labels)`: stable for the alert's life."""
    hook = _validate(GrafanaWebhook, payload)
    alerts = tuple(
        _grouped_alert(
            "grafana",
            a,
            a.fingerprint or labels_fingerprint(a.labels),
            a.generatorURL or a.panelURL or a.dashboardURL,
        )
        for a in hook.alerts
    )
    return Batch(alerts, hook.truncatedAlerts, hook.groupKey)


# -- Cloud Monitoring --------------------------------------------------------------------------


class CloudResource(_Payload):
    labels: LooseLabels = Field(default_factory=dict)  # not read: type


class CloudMetric(_Payload):
    labels: LooseLabels = Field(default_factory=dict)  # not read: type, displayName


class CloudDocumentation(_Payload):
    content: str | None = None
    subject: str | None = None  # not read: mime_type


class Incident(_Payload):
    incident_id: NonEmpty
    # "open" and "closed" are documented; any other state fires rather than being refused, so a
    # state Google adds later can never cost a page.
    state: NonEmpty
    started_at: EpochSeconds = None
    url: str | None = None
    summary: str | None = None
    policy_name: str | None = None
    condition_name: str | None = None
    resource: CloudResource | None = None
    metric: CloudMetric | None = None
    policy_user_labels: LooseLabels = Field(default_factory=dict)
    documentation: CloudDocumentation | None = None
    resource_display_name: str | None = None
    resource_name: str | None = None
    observed_value: Any = None  # a string in Google's samples, a number in some others
    threshold_value: Any = None
    severity: str | None = None  # the policy's: "Critical", "Error", "Warning" or "No severity"
    # Not read: ended_at, scoping_project_id, scoping_project_number, apigee_url, resource_id,
    # resource_type_display_name, metadata, condition.


CLOUD_SEVERITIES = ("critical", "error", "warning")  # AlertPolicy.Severity, less UNSPECIFIED


class CloudMonitoringWebhook(_Payload):
    version: str | None = None  # "1.2"; not enforced, as for Alertmanager
    incident: Incident


def from_cloud_monitoring(payload: Any) -> Batch:
    """A Cloud Monitoring webhook body (one incident) as one alert: `open` fires, `closed`
    resolves; labels are the resource's, the metric's, the policy's severity (as `severity`, as
    Alertmanager's rules write it) and the policy's user labels (which win)."""
    i = _validate(CloudMonitoringWebhook, payload).incident
    title = (i.policy_name or "").strip() or (i.condition_name or "").strip() or "(no policy name)"
    severity = (i.severity or "").strip().lower()
    labels = {
        **(i.resource.labels if i.resource else {}),
        **(i.metric.labels if i.metric else {}),
        **({"severity": severity} if severity in CLOUD_SEVERITIES else {}),
        **i.policy_user_labels,
    }
    doc = i.documentation
    annotations = {
        "documentation": doc.content if doc else None,
        "subject": doc.subject if doc else None,
        "condition": i.condition_name,
        "resource": i.resource_display_name or i.resource_name,
        "observed_value": None if i.observed_value is None else _text(i.observed_value),
        "threshold_value": None if i.threshold_value is None else _text(i.threshold_value),
    }
    alert = Alert(
        source="cloud-monitoring",
        key=f"cloud-monitoring:{i.incident_id}",
        status="resolved" if i.state.lower() == "closed" else "firing",
        title=title,
        summary=(i.summary or "").strip() or title,
        labels=labels,
        annotations={k: v for k, v in annotations.items() if v},
        started_at=i.started_at,
        url=i.url or None,
    )
    return Batch((alert,))


# -- entry points and errors -------------------------------------------------------------------

PARSERS: dict[Source, Callable[[Any], Batch]] = {
    "alertmanager": from_alertmanager,
    "grafana": from_grafana,
    "cloud-monitoring": from_cloud_monitoring,
}


def parse(source: Source, payload: Any) -> Batch:
    """A parsed JSON body from `source` as alerts; InvalidRequest (400) naming a malformed field."""
    return PARSERS[source](payload)


def parse_body(source: Source, raw: bytes) -> Batch:
    """Raw body bytes from `source` as alerts. Not JSON: `app.jev.wire.parse_json`'s InvalidBody
    (422, FastAPI's detail list), as the gateway answers; nested too deep: InvalidRequest (400)."""
    return parse(source, parse_json(raw))


M = TypeVar("M", bound=BaseModel)


def _validate(model: type[M], payload: Any) -> M:
    try:
        return model.model_validate(payload)
    except ValidationError as e:
        raise InvalidRequest(describe(e)) from None  # the pydantic chain adds nothing for a client


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _path(loc: tuple[str | int, ...]) -> str:
    """`('alerts', 2, 'labels', 'app.kubernetes.io/name')` -> `alerts[2].labels["app.kubernetes.io/name"]`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENTIFIER.fullmatch(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part, ensure_ascii=False)}]"
    return out or "body"


_EXPECTED = {
    "string_type": "a string",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "list_type": "an array",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
}


def _problem(error: Mapping[str, Any]) -> str:
    kind = error["type"]
    got = _show(error.get("input"))
    ctx = error.get("ctx") or {}
    if kind == "missing":
        return "field required"
    if kind == "literal_error":
        # pydantic lists the choices as Python reprs: 'open' or 'closed'
        return f"expected {str(ctx.get('expected', '')).replace(chr(39), chr(34))}, got {got}"
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {got}"
    if kind == "value_error" and "error" in ctx:
        return str(ctx["error"])
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "greater_than_equal":
        return f"must be at least {ctx.get('ge')}, got {got}"
    msg = str(error.get("msg", "invalid"))
    return f"{msg[:1].lower()}{msg[1:]}, got {got}"


def describe(error: ValidationError) -> str:
    """A ValidationError as one line naming each bad field: `alerts[2].fingerprint: field required;
    alerts[0].status: expected "firing" or "resolved", got "x"` (the first few, then a count)."""
    return validation_problems(error, path=_path, problem=_problem, most=_MAX_ERRORS)
