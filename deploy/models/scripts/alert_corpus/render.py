"""Senders' payloads (Alertmanager, Grafana, Cloud Monitoring, SDK states) and the state the
router builds from each."""

from __future__ import annotations

import datetime as dt
import json
import random
import urllib.parse
from typing import Any

from app.alerts.records import Alert, Source, labels_fingerprint, summary_of
from evals.alerts.gofmt import go_labels, go_value

from .alerts import PRIORITY, SEVERITY_LABEL
from .common import _alnum, _hex, _num, alert_name, camel_identifier, sentence, snake
from .data import frozen, table
from .subjects import CLUSTERS, ENVS, PROJECTS, REGIONS

_PHRASINGS = table("phrasings")
_SENDERS: dict[str, list[Any]] = table("senders")

# -- senders' payloads and the state the router builds from them ------------------------------------


def _started(rng: random.Random) -> dt.datetime:
    base = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
    return base + dt.timedelta(seconds=rng.randrange(730 * 86400))


def _go_time(t: dt.datetime, nanos: int) -> str:
    """Go's RFC 3339 with nanoseconds, trailing zeros trimmed, as Alertmanager and Grafana send it."""
    frac = f"{nanos:09d}".rstrip("0")
    offset = t.strftime("%z")
    zone = "Z" if offset == "+0000" else f"{offset[:3]}:{offset[3:]}"
    return t.strftime("%Y-%m-%dT%H:%M:%S") + (f".{frac}" if frac else "") + zone


def _sorted(d: dict[str, str]) -> dict[str, str]:
    return dict(sorted(d.items()))  # Go marshals maps with sorted keys


def _severity_label(rng: random.Random, alert: dict[str, Any], share: float) -> dict[str, str]:
    if alert["ambiguous"] or rng.random() >= share:
        return {}
    level = alert["severity"]
    r = rng.random()
    if r < 0.8:
        return {"severity": rng.choice(SEVERITY_LABEL[level])}
    return {"priority": PRIORITY[level]} if r < 0.92 else {"sev": PRIORITY[level][1]}


def _community(rng: random.Random, alert: dict[str, Any], source: str, title: str) -> dict[str, str]:
    """The widely copied rule template: summary "<Name> (instance <instance>)", description
    "<sentence>\n  VALUE = {{ $value }}\n  LABELS = {{ $labels }}" (the series' labels; some
    pipelines add alertname)."""
    labels = alert["labels"]
    where = (
        f"instance {labels['instance']}"
        if "instance" in labels
        else f"{alert['subject_key']} {alert['subject']}"
    )
    summary = f"{sentence(alert['words'])} ({where})" if rng.random() < 0.65 else alert["summary"]
    shown = {"alertname": title, **labels} if rng.random() < 0.35 else labels
    value = go_value(alert["num"])
    if source == "grafana" and rng.random() < 0.4:  # Grafana's $value is its value string
        value = f"[ var='B' labels={{}} value={value} ]"
    text = alert["sentence"] or alert["summary"]
    return {"summary": summary, "description": f"{text}\n  VALUE = {value}\n  LABELS = {go_labels(shown)}"}


def _annotations(rng: random.Random, alert: dict[str, Any], source: str, title: str) -> dict[str, str]:
    """Rule annotations: a summary and/or a description (one of them at least most of the time),
    a runbook link, sometimes a dashboard."""
    out: dict[str, str] = {}
    r = rng.random()
    community = {"alertmanager": 0.12, "grafana": 0.08}.get(source, 0.0) * (3 if alert["state_kind"] else 1)
    if rng.random() < community:
        out = _community(rng, alert, source, title)
    elif r < 0.55:
        out["summary"] = alert["summary"]
        if alert["description"] and rng.random() < 0.6:
            out["description"] = alert["description"] + ("\n" if rng.random() < 0.2 else "")
    elif r < 0.85:
        out["description"] = " ".join(x for x in (alert["summary"] + ".", alert["description"]) if x)
    elif r < 0.95:
        out["summary"] = alert["summary"]
    elif alert["description"]:
        out["message"] = alert["description"]  # old rules: neither summary nor description
    slug = snake(alert["words"]).replace("_", "-")
    if rng.random() < 0.4:
        out["runbook_url"] = f"https://{rng.choice(RUNBOOKS)}/{slug}"
    if source == "grafana" and rng.random() < 0.15:
        out["__dashboardUid__"] = _alnum(rng, 9)
        out["__panelId__"] = str(rng.randint(1, 40))
    elif rng.random() < 0.1:
        out["dashboard"] = f"https://grafana.example.com/d/{_alnum(rng, 9)}/{slug}"
    return out


def _grouped_state(
    source: Source, title: str, labels: dict[str, str], annotations: dict[str, str], started: dt.datetime
) -> dict[str, Any]:
    """The state the router builds from an Alertmanager-shaped alert (app/alerts/formats.py)."""
    summary = summary_of(title, annotations)
    return Alert(source, "", "firing", title, summary, labels, annotations, started).state()


RUNBOOKS: list[str] = _PHRASINGS["runbooks"]


def render_alertmanager(rng: random.Random, alert: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """An Alertmanager webhook (version 4) with this alert, and the state the router builds from it."""
    title = alert_name(rng, alert["words"], "alertmanager")
    labels = _sorted({"alertname": title, **alert["labels"], **_severity_label(rng, alert, 0.7)})
    annotations = _sorted(_annotations(rng, alert, "alertmanager", title))
    t, nanos = _started(rng), rng.randrange(10**9)
    expr = f"{alert['metric']} {'>' if alert['above'] else '<'} {_num(alert['thr'], 3)}"
    hook = {
        "receiver": rng.choice(_SENDERS["alertmanager_receivers"]),
        "status": "firing",
        "alerts": [
            {
                "status": "firing",
                "labels": labels,
                "annotations": annotations,
                "startsAt": _go_time(t, nanos),
                "endsAt": "0001-01-01T00:00:00Z",
                "generatorURL": f"http://prometheus-{rng.randint(0, 1)}:9090/graph"
                f"?g0.expr={urllib.parse.quote_plus(expr)}&g0.tab=1",
                "fingerprint": labels_fingerprint(labels),
            }
        ],
        "groupLabels": {"alertname": title},
        "commonLabels": labels,
        "commonAnnotations": annotations,
        "externalURL": rng.choice(_SENDERS["alertmanager_urls"]),
        "version": "4",
        "groupKey": f'{{}}:{{alertname="{title}"}}',
        "truncatedAlerts": 0,
    }
    started = t.replace(microsecond=nanos // 1000)  # Python keeps microseconds
    return hook, _grouped_state("alertmanager", title, labels, annotations, started)


GRAFANA_FOLDERS: dict[str, list[str]] = _PHRASINGS["grafana_folders"]
NEUTRAL_FOLDERS: list[str] = _PHRASINGS["neutral_folders"]


def render_grafana(rng: random.Random, alert: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A Grafana webhook contact point's body with this alert, and the state the router builds."""
    title = alert_name(rng, alert["words"], "grafana")
    folder = rng.choice(GRAFANA_FOLDERS[alert["team"]] if rng.random() < 0.4 else NEUTRAL_FOLDERS)
    extra = {"grafana_folder": folder} if rng.random() < 0.7 else {}
    labels = _sorted({"alertname": title, **extra, **alert["labels"], **_severity_label(rng, alert, 0.45)})
    annotations = _sorted(_annotations(rng, alert, "grafana", title))
    offset = dt.timezone(dt.timedelta(hours=rng.choice([0, 0, 1, 2, -5, -4, 9, 5.5])))
    t, micros = _started(rng).astimezone(offset), rng.randrange(10**6)
    uid = _alnum(rng, 14)
    base = rng.choice(_SENDERS["grafana_urls"])
    value = round(alert["num"], 6)
    body = {
        "receiver": rng.choice(_SENDERS["grafana_receivers"]),
        "status": "firing",
        "orgId": 1,
        "alerts": [
            {
                "status": "firing",
                "labels": labels,
                "annotations": annotations,
                "startsAt": _go_time(t, micros * 1000),
                "endsAt": "0001-01-01T00:00:00Z",
                "generatorURL": f"{base}/alerting/grafana/{uid}/view?orgId=1",
                "fingerprint": _hex(rng, 16),
                "silenceURL": f"{base}/alerting/silence/new?alertmanager=grafana"
                f"&matcher=alertname%3D{urllib.parse.quote(title)}",
                "dashboardURL": f"{base}/d/{_alnum(rng, 9)}" if "__dashboardUid__" in annotations else "",
                "panelURL": "",
                "values": {"B": value, "C": 1},
                "valueString": f"[ var='B' labels={{}} value={value} ], [ var='C' labels={{}} value=1 ]",
            }
        ],
        "groupLabels": {"alertname": title},
        "commonLabels": labels,
        "commonAnnotations": annotations,
        "externalURL": base + "/",
        "version": "1",
        "groupKey": f'{{}}:{{alertname="{title}"}}',
        "truncatedAlerts": 0,
        "title": f"[FIRING:1] {title} ({folder})",
        "state": "alerting",
        "message": f"**Firing**\n\nValue: B={value}\nLabels:\n"
        + "".join(f" - {k} = {v}\n" for k, v in labels.items()),
    }
    started = t.replace(microsecond=micros)
    return body, _grouped_state("grafana", title, labels, annotations, started)


CM_RESOURCES: dict[str, tuple[str, str]] = frozen(_PHRASINGS["cm_resources"])


RESOURCE_NAMES = dict(CM_RESOURCES.values())


def _cm_resource(rng: random.Random, alert: dict[str, Any], project: str) -> tuple[str, dict[str, Any]]:
    rtype, _ = CM_RESOURCES[alert["category"]]
    if rtype == "cloudsql_database" and alert["engine"] not in ("postgres", "mysql"):
        rtype = "prometheus_target"  # Cloud SQL runs PostgreSQL and MySQL only
    labels: dict[str, Any] = {"project_id": project}
    zone = rng.choice(REGIONS) + rng.choice(_SENDERS["zone_suffixes"])
    res = alert["resource"]
    if rtype == "gce_instance":
        labels.update(instance_id=str(rng.randrange(10**18, 10**19)), zone=zone)
    elif rtype == "k8s_container":
        pod = res if "/" not in res else res.split("/", 1)[1]
        labels.update(
            cluster_name=rng.choice(CLUSTERS),
            container_name=pod.split("-")[0],
            location=zone,
            namespace_name=alert["labels"].get("namespace", "default"),
            pod_name=pod,
        )
    elif rtype == "k8s_node":
        labels.update(cluster_name=rng.choice(CLUSTERS), location=zone, node_name=res)
    elif rtype == "cloudsql_database":
        labels.update(database_id=f"{project}:{res}", region=zone[:-2])
    elif rtype == "pubsub_subscription":
        labels["subscription_id"] = res if res != alert["subject"] else f"{alert['subject']}-sub"
    elif rtype == "https_lb_rule":
        labels.update(
            backend_service_name=alert["labels"].get("backend") or alert["labels"].get("upstream") or res,
            forwarding_rule_name=f"{res}-fr",
            region="global",
            url_map_name=f"{res}-map",
        )
    elif rtype == "uptime_url":
        labels["host"] = res.split("/")[2] if res.startswith("https://") else res.lstrip("*.")
    elif rtype == "vpn_gateway":
        labels.update(gateway_id=str(rng.randrange(10**18, 10**19)), region=zone[:-2])
    else:
        labels.update(
            cluster=rng.choice(CLUSTERS),
            instance=alert["labels"].get("instance", f"{res}:8080"),
            job=alert["labels"].get("job", res),
            location=zone,
            namespace=alert["labels"].get("namespace", "default"),
        )
    return rtype, _sorted(labels)


def _cm_text(value: Any) -> str:
    """The router's text of a Cloud Monitoring label or value (strings as they are, others as JSON)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def render_cloud_monitoring(
    rng: random.Random, alert: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A Cloud Monitoring webhook (schema 1.2) incident for this alert, and the router's state."""
    project = rng.choice(PROJECTS)
    name = alert_name(rng, alert["words"], "cloud-monitoring")
    rtype, rlabels = _cm_resource(rng, alert, project)
    display = (
        sentence(alert["metric"].replace("_", " ").split()) if alert["metric"] else sentence(alert["words"])
    )
    op = (">" if alert["above"] else "<") if rng.random() < 0.9 else ("≥" if alert["above"] else "≤")
    condition = rng.choice(
        [
            f"{display} {op} {alert['threshold']}",
            f"{sentence(alert['words'])}",
            f"{display} for {alert['dur']}",
        ]
    )
    if rng.random() < 0.2:
        name = f"{name} - {rng.choice(ENVS)}" if rng.random() < 0.5 else f"[{rng.choice(ENVS)}] {name}"
    metric_labels = {
        k: v for k, v in alert["labels"].items() if k not in ("instance", "job", "namespace", "pod")
    }
    if rng.random() < 0.5:
        metric_labels = dict(list(metric_labels.items())[: rng.randint(0, 2)])
    user_labels = _severity_label(rng, alert, 0.15)
    if rng.random() < 0.3:
        user_labels["env"] = rng.choice(ENVS)
    observed = f"{alert['num']:.3f}"
    threshold = _num(alert["thr"], 3)
    res_display = alert["resource"]
    mlabels = ", ".join(f"{k}={v}" for k, v in metric_labels.items())
    with_labels = f" with metric labels {{{mlabels}}}" if mlabels else ""
    if rng.random() < 0.75:  # Google's own summary of a threshold condition
        summary = (
            f"{display} for {project} {res_display}{with_labels} is {'above' if alert['above'] else 'below'} "
            "the threshold of "
            f"{alert['thr']:.3f} with a value of {observed}."
        )
    else:
        summary = alert["summary"]
    doc: dict[str, Any] | None = None
    if rng.random() < 0.75:
        content = alert["summary"] + "." + (f" {alert['description']}" if alert["description"] else "")
        subject_line = None
        if rng.random() < 0.5:
            word = {"critical": "Critical", "error": "Error", "warning": "Warning", "info": "Info"}[
                alert["severity"]
            ]
            tag = f"[ALERT - {word}] " if rng.random() < 0.6 and not alert["ambiguous"] else "[ALERT] "
            subject_line = f"{tag}{sentence(alert['words'])} on {res_display}"
        doc = {"content": content, "mime_type": "text/markdown", "subject": subject_line}
    t = _started(rng)
    iid = f"0.{_alnum(rng, 12)}"
    # The policy's severity (set on about half the policies; none on the ambiguous share).
    severity: str | None = None
    if not alert["ambiguous"] and rng.random() < 0.5:
        severity = {"critical": "Critical", "error": "Error", "warning": "Warning", "info": "No severity"}[
            alert["severity"]
        ]
    elif rng.random() < 0.5:
        severity = "No severity"
    incident: dict[str, Any] = {
        "condition": {
            "displayName": condition,
            "name": f"projects/{project}/alertPolicies/{rng.randrange(10**19)}"
            f"/conditions/{rng.randrange(10**19)}",
            "conditionThreshold": {
                "comparison": "COMPARISON_GT" if alert["above"] else "COMPARISON_LT",
                "duration": rng.choice(_SENDERS["condition_durations"]),
                "thresholdValue": alert["thr"],
            },
        },
        "condition_name": condition,
        "documentation": doc,
        "ended_at": None,
        "incident_id": iid,
        "metadata": {"system_labels": {}, "user_labels": {}},
        "metric": {
            "displayName": display,
            "labels": _sorted(metric_labels),
            "type": f"prometheus.googleapis.com/{alert['metric'] or snake(alert['words'])}/gauge",
        },
        "observed_value": observed if rng.random() < 0.85 else round(alert["num"], 3),
        "policy_name": name,
        "policy_user_labels": _sorted(user_labels),
        "resource": {"labels": rlabels, "type": rtype},
        "resource_display_name": res_display if rng.random() < 0.8 else "",
        "resource_id": "",
        "resource_name": f"{project} {res_display}",
        "resource_type_display_name": RESOURCE_NAMES[rtype],
        "scoping_project_id": project,
        "scoping_project_number": rng.randrange(10**11, 10**12),
        "severity": severity,
        "started_at": int(t.timestamp()),
        "state": "open",
        "summary": summary,
        "threshold_value": threshold,
        "url": f"https://console.cloud.google.com/monitoring/alerting/alerts/{iid}?channelType=webhook&project={project}",
    }
    if doc is None:
        del incident["documentation"]
    if severity is None:
        del incident["severity"]
    # The router: labels are the resource's, the metric's, the policy's severity (as `severity`),
    # then the policy's user labels.
    level = (severity or "").lower()
    labels = {
        **{k: _cm_text(v) for k, v in rlabels.items()},
        **_sorted(metric_labels),
        **({"severity": level} if level in ("critical", "error", "warning") else {}),
        **_sorted(user_labels),
    }
    annotations = {
        "documentation": doc["content"] if doc else None,
        "subject": doc["subject"] if doc else None,
        "condition": condition,
        "resource": incident["resource_display_name"] or incident["resource_name"],
        "observed_value": _cm_text(incident["observed_value"]),
        "threshold_value": threshold,
    }
    kept = {k: v for k, v in annotations.items() if v}
    started = dt.datetime.fromtimestamp(incident["started_at"], tz=dt.UTC)
    title = name.strip()
    state = Alert(
        "cloud-monitoring", "", "firing", title, summary.strip() or title, labels, kept, started
    ).state()
    return {"incident": incident, "version": "1.2"}, state


RENDERERS = {
    "alertmanager": render_alertmanager,
    "grafana": render_grafana,
    "cloud-monitoring": render_cloud_monitoring,
}


def sdk_state(rng: random.Random, alert: dict[str, Any]) -> str | dict[str, Any]:
    """A state as a person writes one for the SDK: a small dict like the README's
    ({"alert": "DiskUsageHigh", "host": "db-1", "value": "97%", "for": "15m"}) or one line of text."""
    name = camel_identifier(alert["words"])
    key, subj, value = alert["subject_key"], alert["subject"], alert["value"]
    r = rng.random()
    if r < 0.45:
        state: dict[str, Any] = {"alert": name, key: subj, "value": value}
        if rng.random() < 0.7:
            state["for"] = alert["dur"]
        if rng.random() < 0.15 and not alert["ambiguous"]:
            state["severity"] = rng.choice(SEVERITY_LABEL[alert["severity"]])
        return state
    if r < 0.6:
        return {"alert": name, "summary": alert["summary"]}
    if r < 0.8:
        return rng.choice(
            [
                f"{name} on {subj}: {value} for {alert['dur']}",
                f"{alert['summary']}",
                f"[FIRING] {name} {subj} {value}",
                f"{name}: {alert['summary']}",
            ]
        )
    return f"{alert['summary']}. {alert['description']}".strip() if alert["description"] else alert["summary"]
