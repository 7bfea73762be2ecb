"""Schemathesis against a running service's OpenAPI document, every request recorded (a VCR
cassette), and the figures that matter here read off the recording itself: requests sent, statuses,
responses >= 500, 4xx without `detail`. Schemathesis' own check failures are reported beside them.

The alert router publishes no document (a public service: nothing to browse), so `router_schema`
builds one for the fuzzer from its routes and the webhook payload models it parses.
"""

from __future__ import annotations

import collections
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

import yaml

# Checks that do not apply, and why. The rest of schemathesis' checks run, the response time limit
# included (10 s, the SDK's deadline; the router's runs allow 60 s, see `make reliability`).
EXCLUDED_CHECKS = {
    # A body valid by the schema may still break a semantic limit (options, levels, planned reads,
    # the engine's context): a 400 by design, documented.
    "positive_data_acceptance": "schema-valid bodies may break documented semantic limits (400)",
}
ROUTER_EXCLUDED = {
    **EXCLUDED_CHECKS,
    # The router takes what a sender sends if it can make an alert of it (a null `annotations` is
    # no annotations): a page refused over a field it does not need would be a page lost.
    "negative_data_rejection": "lenient on purpose: a page is never refused for a field it does not need",
}


@dataclass
class FuzzResult:
    service: str
    seed: int
    seconds: float
    requests: int = 0
    statuses: dict[str, int] = field(default_factory=dict)  # "METHOD path status" -> count
    server_errors: list[str] = field(default_factory=list)  # test case ids and bodies, >= 500
    missing_detail: list[str] = field(default_factory=list)  # 4xx without a `detail`
    check_failures: dict[str, int] = field(default_factory=dict)  # schemathesis check -> failed cases
    leaks: list[str] = field(default_factory=list)  # a watched secret in a recorded response
    cassette: str = ""

    @property
    def ok(self) -> bool:
        """Requests were made, none got a 5xx or a 4xx without `detail`, and no check failed."""
        return self.requests > 0 and not (self.server_errors or self.missing_detail or self.check_failures)


def run(
    service: str,
    schema: str,
    *,
    base_url: str,
    headers: dict[str, str],
    examples: int,
    seed: int,
    out: Path,
    workers: int = 2,
    exclude: dict[str, str] = EXCLUDED_CHECKS,
    extra: list[str] | None = None,
    secrets: dict[str, str] | None = None,
) -> FuzzResult:
    """One schemathesis run (all phases but stateful) of `schema` (a URL or a file) against
    `base_url`; its cassette and log go to `out`. Each of `secrets` ({what: value}) found in a
    recorded response is a leak."""
    out.mkdir(parents=True, exist_ok=True)
    cassette = out / f"{service}.vcr.yaml"
    exe = shutil.which("schemathesis", path=str(Path(sys.executable).parent)) or "schemathesis"
    cmd = [
        exe, "run", schema, "--url", base_url,
        "--max-examples", str(examples), "--seed", str(seed), "--workers", str(workers),
        "--checks", "all", "--exclude-checks", ",".join(exclude),
        "--phases", "examples,coverage,fuzzing", "--suppress-health-check", "all",
        "--request-timeout", "120", "--no-color", "--output-truncate", "true", "--continue-on-failure",
        "--report", "vcr", "--report-vcr-path", str(cassette), "--generation-database", "none",
    ]  # fmt: skip
    for name, value in headers.items():
        cmd += ["-H", f"{name}: {value}"]
    cmd += extra or []
    started = time.monotonic()
    log = out / f"{service}.schemathesis.log"
    with log.open("w") as sink:
        subprocess.run(cmd, stdout=sink, stderr=subprocess.STDOUT, check=False)  # failures are read below
    result = FuzzResult(service, seed, time.monotonic() - started, cassette=str(cassette))
    if not cassette.exists():
        raise RuntimeError(f"schemathesis wrote no cassette; its log:\n{log.read_text()[-3000:]}")
    read_cassette(cassette, result, secrets or {})
    return result


def read_cassette(path: Path, result: FuzzResult, secrets: dict[str, str]) -> None:
    data = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    statuses: collections.Counter[str] = collections.Counter()
    failures: collections.Counter[str] = collections.Counter()
    for item in data.get("http_interactions") or []:
        for check in item.get("checks") or []:
            if check.get("status") == "FAILURE":
                failures[check["name"]] += 1
        response = item.get("response")
        if not response:
            continue
        recorded = json.dumps(response)
        result.leaks += [
            f"{what} in a response ({item['id']})" for what, s in secrets.items() if s in recorded
        ]
        request = item["request"]
        path_ = "/" + request["uri"].split("://", 1)[-1].split("/", 1)[-1].split("?", 1)[0]
        status = int(response["status"]["code"])
        statuses[f"{request['method']} {path_} {status}"] += 1
        text = (response.get("body") or {}).get("string") or ""
        if status >= 500:
            result.server_errors.append(f"{item['id']}: {request['method']} {path_} -> {status} {text[:200]}")
        elif status >= 400 and not _has_detail(text):
            result.missing_detail.append(
                f"{item['id']}: {request['method']} {path_} -> {status} {text[:200]}"
            )
    result.requests = sum(statuses.values())
    result.statuses = dict(statuses.most_common())
    result.check_failures = dict(failures)


def _has_detail(text: str) -> bool:
    try:
        body = json.loads(text)
    except ValueError:
        return False
    return isinstance(body, dict) and bool(body.get("detail"))


def router_schema(app: Any) -> dict[str, Any]:
    """The router's routes as an OpenAPI document, each webhook with the payload model it parses."""
    from fastapi.openapi.utils import get_openapi
    from pydantic import BaseModel
    from pydantic.json_schema import models_json_schema

    from app.alerts.formats import AlertmanagerWebhook, CloudMonitoringWebhook, GrafanaWebhook

    doc = get_openapi(title=app.title, version=app.version, routes=app.routes)
    models = {
        "alertmanager": AlertmanagerWebhook,
        "grafana": GrafanaWebhook,
        "cloud-monitoring": CloudMonitoringWebhook,
    }
    inputs: list[tuple[type[BaseModel], Literal["validation"]]] = [
        (cast(type[BaseModel], m), "validation") for m in models.values()
    ]
    _, defs = models_json_schema(inputs, ref_template="#/components/schemas/{model}")
    doc.setdefault("components", {}).setdefault("schemas", {}).update(defs.get("$defs", {}))
    for source, model in models.items():
        operation = doc["paths"][f"/v1/alerts/{source}"]["post"]
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}},
        }
        error = {"content": {"application/json": {"schema": {"type": "object", "required": ["detail"]}}}}
        for status, why in {"400": "not a payload of this sender", "401": "no or a wrong sender credential",
                            "413": "too large", "422": "not JSON, or not the sender's schema",
                            "502": "a sink refused (the sender retries)"}.items():  # fmt: skip
            operation["responses"][status] = {"description": why, **error}
    return doc
