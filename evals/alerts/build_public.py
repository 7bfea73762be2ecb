"""Build `evals/alerts/awesome-prometheus-alerts.jsonl` from samber/awesome-prometheus-alerts.

    .venv/bin/python evals/alerts/build_public.py RULES_YML OUT_JSONL

RULES_YML is `_data/rules.yml` of https://github.com/samber/awesome-prometheus-alerts (CC BY 4.0;
the pinned commit and the file's digest are below and in evals/alerts/NOTICE.md). Each rule of a
category that maps onto one of the default policy's teams becomes one Alertmanager webhook v4
delivery with one firing alert, shaped as tests/data/alerts/alertmanager_firing.json; the line's
`expected` is `{page: severity == "critical", team, severity}`.

The alert is the one the project's published rule (`dist/template.yml`) would fire: `alertname` is
the rule name CamelCased as Liquid does it, `summary` is `<name> (instance <instance>)` and
`description` is the rule's description, then `VALUE = ...` and `LABELS = ...`, with the Go
templates rendered from synthetic label values and a value on the firing side of the rule's
threshold. The synthetic values come from a random generator seeded by the rule's place in the
source (category, service, exporter, name): a rule's line does not depend on which other rules are
in the file, so a subset of the rules builds the same lines.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import hashlib
import json
import math
import random
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import yaml

from app.alerts.formats import from_alertmanager
from app.alerts.records import labels_fingerprint
from evals.alerts.gofmt import go_labels, go_value

# The source this file's committed output was built from.
SOURCE_REPO = "https://github.com/samber/awesome-prometheus-alerts"
SOURCE_COMMIT = "a8533189af0246de5e21a6d8d25bd37816894f07"
SOURCE_DATE = "2026-08-01"
SOURCE_SHA256 = "8c7ca4b6506d186d3e92c3083e87f7f36877710648c539e1a000e7550b82fc30"  # _data/rules.yml

SEED = "dgemma-alerts-eval-1"
EPOCH = dt.datetime(2026, 11, 16, tzinfo=dt.UTC)  # startsAt falls in the 14 days after this
WINDOW_S = 14 * 24 * 3600

Team = str

# -- which rules, which team -------------------------------------------------------------------

# Category (the rule file's group) -> team. A category absent here is left out, except for the
# services listed in SERVICE_TEAMS; a service mapped to None is left out of its category.
GROUP_TEAMS: dict[str, Team] = {
    "Databases": "database",
    "Proxies, load balancers and service meshes": "network",
    "Network and security": "network",
    "Runtimes": "application",
    "Orchestrators": "application",
    "Message brokers": "application",
}
SERVICE_TEAMS: dict[tuple[str, str], Team | None] = {
    # A replicated key-value database: its rules are leader, quorum, WAL fsync, commit latency
    # and database size, the database team's replication and disk.
    ("Orchestrators", "Etcd"): "database",
    # Cloud infrastructure (hypervisors, Nova/Neutron/Cinder, tenant quotas): no team's.
    ("Orchestrators", "OpenStack"): None,
    # A secrets store (sealed, raft, token hygiene): no team's.
    ("Network and security", "Hashicorp Vault"): None,
    # A telephony switch (sessions, up): no team's.
    ("Network and security", "Freeswitch"): None,
    # An identity service of the applications: login, token and registration error rates, latency.
    ("Network and security", "Keycloak"): "application",
    # Endpoint probes: reachability, HTTP status, probe latency, TLS certificate expiry.
    ("Basic resource monitoring", "Blackbox"): "network",
    # The application containers (killed, absent, unhealthy, throttled, memory).
    ("Basic resource monitoring", "Docker containers"): "application",
    # GitOps deployment state of the application services (sync failed, unhealthy app).
    ("CI/CD", "ArgoCD"): "application",
    ("CI/CD", "FluxCD"): "application",
    # An application service (an LLM gateway): failed requests, latency, spend.
    ("Other", "LiteLLM"): "application",
}


def team_of(group: str, service: str) -> Team | None:
    if (group, service) in SERVICE_TEAMS:
        return SERVICE_TEAMS[(group, service)]
    return GROUP_TEAMS.get(group)


# -- Go and Prometheus formatting --------------------------------------------------------------


def _g4(v: float) -> str:
    return f"{v:.4g}"  # Go's %.4g and Python's agree (no '#' flag, same exponent rule)


def humanize(v: float) -> str:
    if v == 0 or math.isnan(v) or math.isinf(v):
        return _g4(v)
    prefix = ""
    if abs(v) >= 1:
        for p in ("k", "M", "G", "T", "P", "E", "Z", "Y"):
            if abs(v) < 1000:
                break
            prefix, v = p, v / 1000
        return _g4(v) + prefix
    for p in ("m", "u", "n", "p", "f", "a", "z", "y"):
        if abs(v) >= 1:
            break
        prefix, v = p, v * 1000
    return _g4(v) + prefix


def humanize1024(v: float) -> str:
    if abs(v) <= 1 or math.isnan(v) or math.isinf(v):
        return _g4(v)
    prefix = ""
    for p in ("ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"):
        if abs(v) < 1024:
            break
        prefix, v = p, v / 1024
    return _g4(v) + prefix


def humanize_duration(v: float) -> str:
    if math.isnan(v) or math.isinf(v):
        return _g4(v)
    if v == 0:
        return _g4(v) + "s"
    if abs(v) >= 1:
        sign = "-" if v < 0 else ""
        v = abs(v)
        d = int(v)
        s, m, h, days = d % 60, (d // 60) % 60, (d // 3600) % 24, d // 86400
        if days:
            return f"{sign}{days}d {h}h {m}m {s}s"
        if h:
            return f"{sign}{h}h {m}m {s}s"
        if m:
            return f"{sign}{m}m {s}s"
        return f"{sign}{_g4(v)}s"
    prefix = ""
    for p in ("m", "u", "n", "p", "f", "a", "z", "y"):
        if abs(v) >= 1:
            break
        prefix, v = p, v * 1000
    return f"{_g4(v)}{prefix}s"


_PRINTF = re.compile(r'^(?:printf\s+"%\.(\d)f"\s+\$value|\$value\s*\|\s*printf\s+"%\.(\d)f")$')
_PIPE = re.compile(r"^(?:\$value\s*\|\s*(\w+)|(\w+)\s+\$value)$")
_FUNCS: dict[str, Callable[[float], str]] = {
    "humanize": humanize,
    "humanize1024": humanize1024,
    "humanizeDuration": humanize_duration,
    "humanizePercentage": lambda v: "%.4g%%" % (v * 100),
}
_ACTION = re.compile(r"\{\{\s*(.*?)\s*\}\}")


def render(template: str, labels: Mapping[str, str], value: float) -> str:
    """The rule's Go template with `$labels` (the alert's labels without the rule's) and `$value`."""

    def one(m: re.Match[str]) -> str:
        expr = m.group(1)
        if expr == "$value":
            return go_value(value)
        if expr == "$labels":
            return go_labels(labels)
        if expr.startswith("$labels."):
            return labels[expr.removeprefix("$labels.")]
        if p := _PRINTF.match(expr):
            return f"{value:.{int(p.group(1) or p.group(2))}f}"
        if (f := _PIPE.match(expr)) and (f.group(1) or f.group(2)) in _FUNCS:
            return _FUNCS[f.group(1) or f.group(2)](value)
        raise ValueError(f"template action not understood: {m.group(0)}")

    return _ACTION.sub(one, template)


def liquid_alertname(name: str) -> str:
    """The alert name of `dist/template.yml`: Liquid `split: ' '`, `capitalize` each word (Ruby's:
    first letter up, the rest down), joined."""
    return "".join(w[:1].upper() + w[1:].lower() for w in name.split())


# -- the firing value --------------------------------------------------------------------------

_NUM = r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_CMP = re.compile(rf"(>=|<=|==|!=|>|<)\s*(?:bool\s+)?\(?\s*({_NUM}(?:\s*[*/]\s*{_NUM})*)")


def threshold(query: str) -> tuple[str, float] | None:
    """The query's comparison against a number (`> 90`, `< 1e+9 * 0.9`): the first one outside
    parentheses, else the first one (`sum(x > 0) by (topic)`)."""
    found = list(_CMP.finditer(query))
    if not found:
        return None
    top = [m for m in found if query[: m.start()].count("(") == query[: m.start()].count(")")]
    m = (top or found)[0]
    parts = re.split(r"\s*([*/])\s*", m.group(2))
    t = float(parts[0])
    for op, num in zip(parts[1::2], parts[2::2], strict=True):
        t = t * float(num) if op == "*" else t / float(num)
    return m.group(1), t


def _counts(query: str) -> bool:
    """The value is a whole number: a count or an increase, not a rate, ratio or quantile."""
    return not re.search(r"\brate\(|histogram_quantile|/|avg|_seconds|_bytes|ratio|predict_linear", query)


def _percent(rule_name: str, query: str) -> bool:
    text = rule_name + " " + query
    return "%" in rule_name or "percent" in text.lower() or bool(re.search(r"\*\s*100\b|\b100\s*\*", query))


def firing_value(rng: random.Random, rule_name: str, query: str) -> float:
    """A value on the firing side of the rule's threshold, or a plausible one."""
    cmp = threshold(query)
    if cmp is None:
        if "absent(" in query or "vector(1)" in query:
            return 1.0
        return float(rng.randint(1, 12)) if _counts(query) else round(rng.uniform(1, 100), 2)
    op, t = cmp
    whole = _counts(query) and t == int(t)
    v: float
    if op == "==":
        return t
    if op == "!=":
        return 0.0 if t != 0 else 1.0
    if op in (">", ">="):
        if 1 <= t < 100 and _percent(rule_name, query):
            v = min(t * rng.uniform(1.1, 3.0), t + (100 - t) * rng.uniform(0.3, 0.9))
        elif whole:
            v = t + rng.randint(0 if op == ">=" else 1, max(1, int(abs(t) * 0.5)) + 3)
        elif t == 0:
            v = rng.uniform(0.02, 3)
        elif 0 < t < 1:
            v = min(t * rng.uniform(1.2, 4), t + (1 - t) * rng.uniform(0.2, 0.8))
        else:
            v = t * rng.uniform(1.05, 1.8) if t > 0 else t * rng.uniform(0.2, 0.95)
    else:  # < or <=
        if t > 0:
            if whole:
                v = float(rng.randint(0, math.ceil(t) - (1 if op == "<" else 0)))
            else:
                v = t * rng.uniform(0.05, 0.9)
        elif t == 0:
            v = 0.0 if op == "<=" else -rng.uniform(0.1, 5)
        else:
            v = t * rng.uniform(1.05, 1.8)
    return _round(v)


def _round(v: float) -> float:
    if v == int(v):
        return float(int(v))
    a = abs(v)
    if a >= 1000:
        return float(round(v))
    if a >= 10:
        return round(v, 2)
    if a >= 0.01:
        return round(v, 3)
    return float(f"{v:.3g}")


# -- synthetic labels --------------------------------------------------------------------------


@dataclass(frozen=True)
class Profile:
    """How a service's exporter is usually scraped: host names, port, job, Kubernetes namespace."""

    hosts: tuple[str, ...]
    port: int
    job: str
    namespace: str | None = None  # run on Kubernetes: pod IPs as instances, namespace/pod labels
    workloads: tuple[str, ...] = ()
    objects: bool = False  # namespace/pod name the watched workloads, not the exporter's own pod


_APP_NAMESPACES = {
    "checkout-api": "checkout",
    "cart-service": "checkout",
    "payments-api": "payments",
    "orders-api": "orders",
    "catalog-api": "catalog",
    "shipping-worker": "shipping",
}
_APPS = tuple(_APP_NAMESPACES)

PROFILES: dict[str, Profile] = {
    "MySQL": Profile(("mysql-orders", "mysql-billing"), 9104, "mysqld-exporter"),
    "PostgreSQL": Profile(("pg-main", "pg-orders", "pg-analytics"), 9187, "postgres-exporter"),
    "SQL Server": Profile(("mssql-erp",), 4000, "mssql-exporter"),
    "Oracle Database": Profile(("oradb-finance",), 9161, "oracledb-exporter"),
    "Patroni": Profile(("pg-main",), 8008, "patroni"),
    "PGBouncer": Profile(("pgbouncer",), 9127, "pgbouncer-exporter"),
    "Redis": Profile(("redis-cache", "redis-sessions"), 9121, "redis-exporter"),
    "Memcached": Profile(("memcached",), 9150, "memcached-exporter"),
    "MongoDB": Profile(("mongo-catalog", "mongo-events"), 9216, "mongodb-exporter"),
    "Elasticsearch": Profile(("es-search", "es-logs"), 9114, "elasticsearch-exporter"),
    "OpenSearch": Profile(("opensearch-logs",), 9200, "opensearch"),
    "Meilisearch": Profile(("meilisearch",), 7700, "meilisearch", "search"),
    "Cassandra": Profile(("cassandra-events",), 8080, "cassandra"),
    "Clickhouse": Profile(("clickhouse-analytics",), 9363, "clickhouse"),
    "CouchDB": Profile(("couchdb",), 9984, "couchdb-exporter"),
    "Solr": Profile(("solr",), 9854, "solr-exporter"),
    "Etcd": Profile(("etcd",), 2379, "etcd"),
    "RabbitMQ": Profile(("rabbitmq",), 15692, "rabbitmq", "messaging"),
    "Zookeeper": Profile(("zookeeper",), 9141, "zookeeper-exporter", "kafka"),
    "Kafka": Profile(("kafka",), 9308, "kafka-exporter", "kafka"),
    "Pulsar": Profile(("pulsar-broker",), 8080, "pulsar", "pulsar"),
    "Nats": Profile(("nats",), 7777, "nats-exporter", "messaging"),
    "Nginx": Profile(("nginx-edge", "web"), 9113, "nginx-exporter"),
    "Apache": Profile(("apache-web",), 9117, "apache-exporter"),
    "HaProxy": Profile(("haproxy-lb",), 8405, "haproxy"),
    "Traefik": Profile(("traefik",), 8082, "traefik", "traefik"),
    "Caddy": Profile(("caddy-edge",), 2019, "caddy"),
    "Envoy": Profile(("envoy",), 9901, "envoy", "edge"),
    "Linkerd": Profile(("linkerd-proxy",), 4191, "linkerd-proxy", "linkerd"),
    "Istio": Profile(("istiod",), 15014, "istiod", "istio-system"),
    "PHP-FPM": Profile(("php-fpm",), 9253, "php-fpm-exporter", "storefront", ("storefront-web",)),
    "JVM": Profile(("orders-api",), 9404, "jvm", "orders", ("orders-api", "payments-api")),
    "Golang": Profile(("checkout-api",), 8080, "checkout-api", "checkout", ("checkout-api", "cart-service")),
    "Ruby": Profile(("storefront",), 9394, "storefront", "storefront", ("storefront",)),
    "Python": Profile(("recommendations",), 8000, "recommendations", "catalog", ("recommendations",)),
    "Sidekiq": Profile(("sidekiq",), 9359, "sidekiq-exporter", "storefront", ("storefront-jobs",)),
    "Kubernetes": Profile(("kube-state-metrics",), 8080, "kube-state-metrics", "monitoring", objects=True),
    "Nomad": Profile(("nomad-server",), 4646, "nomad"),
    "Consul": Profile(("consul-exporter",), 9107, "consul-exporter"),
    "Blackbox": Profile(("blackbox-exporter",), 9115, "blackbox-http", "monitoring"),
    "Docker containers": Profile(("cadvisor",), 8080, "cadvisor", "monitoring", objects=True),
    "SpeedTest": Profile(("speedtest-exporter",), 9798, "speedtest"),
    "SSL/TLS": Profile(("ssl-exporter",), 9219, "ssl"),
    "cert-manager": Profile(("cert-manager",), 9402, "cert-manager", "cert-manager"),
    "Juniper": Profile(("sw-core",), 9326, "junos"),
    "CoreDNS": Profile(("coredns",), 9153, "coredns", "kube-system"),
    "Keycloak": Profile(("keycloak",), 8080, "keycloak", "identity"),
    "Cloudflare": Profile(("cloudflare-exporter",), 8080, "cloudflare-exporter", "monitoring"),
    "SNMP": Profile(("sw-access",), 9116, "snmp-if-mib"),
    "Cilium": Profile(("cilium",), 9962, "cilium-agent", "kube-system"),
    "WireGuard": Profile(("vpn-gw",), 9586, "wireguard"),
    "ArgoCD": Profile(("argocd-application-controller",), 8082, "argocd-metrics", "argocd"),
    "FluxCD": Profile(("kustomize-controller",), 8080, "flux-system", "flux-system"),
    "LiteLLM": Profile(("litellm-proxy",), 4000, "litellm", "ml-gateway"),
}
_CLUSTERS = ("prod-eu-west-1", "prod-us-east-1", "prod-ap-southeast-1")
_SEVERITY_WORDS = re.compile(r"\b(critical|warning|warn|info|error)\b", re.IGNORECASE)


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _pod_suffix(rng: random.Random) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    return "-".join("".join(rng.choice(alphabet) for _ in range(n)) for n in (10, 5))


@dataclass
class Ctx:
    """One alert's draw: the exporter's host and the one application workload its labels name."""

    rng: random.Random
    service: str
    profile: Profile
    host: str
    workload: str = ""

    def __post_init__(self) -> None:
        self.workload = self.rng.choice(self.profile.workloads or _APPS)

    def app(self) -> str:
        return self.workload

    def app_namespace(self) -> str:
        return _APP_NAMESPACES.get(self.workload) or self.profile.namespace or "default"

    def namespace(self) -> str:
        """The exporter's own namespace, or the watched workload's (kube-state-metrics, cAdvisor)."""
        if self.profile.objects or self.profile.namespace is None:
            return self.app_namespace()
        return self.profile.namespace


def _server(c: Ctx) -> str:
    if c.service == "CoreDNS":
        return "dns://:53"
    if c.service == "HaProxy":
        return f"{c.app()}-{c.rng.randint(1, 4)}"
    port = {"PostgreSQL": 5432, "PGBouncer": 5432, "Patroni": 5432}.get(c.service, 8080)
    return f"{c.host}-{c.rng.randint(1, 3)}.db.internal:{port}"


_CRONJOBS = ("invoice-export", "nightly-report", "cache-warmer", "search-reindex")
_STATEFUL = ("RabbitMQ", "Zookeeper", "Kafka", "Pulsar", "Nats", "Meilisearch")
_DAEMONSETS = ("Cilium",)


def _pod(c: Ctx) -> str:
    """A pod of the exporter's own workload, named as its controller names it."""
    if c.service in _STATEFUL:
        return f"{c.host}-{c.rng.randint(0, 2)}"
    if c.service in _DAEMONSETS:
        return f"{c.host}-{_pod_suffix(c.rng)[-5:]}"
    return f"{c.host}-{_pod_suffix(c.rng)}"


_VALUES: dict[str, Callable[[Ctx], str]] = {
    "namespace": lambda c: c.namespace(),
    "exported_namespace": lambda c: c.app_namespace(),
    "destination_workload_namespace": lambda c: c.app_namespace(),
    "pod": lambda c: f"{c.app()}-{_pod_suffix(c.rng)}",
    "kubernetes_pod_name": lambda c: f"{c.app()}-{_pod_suffix(c.rng)}",
    "container": lambda c: c.app(),
    "deployment": lambda c: c.app(),
    "horizontalpodautoscaler": lambda c: c.app(),
    "poddisruptionbudget": lambda c: f"{c.app()}-pdb",
    "replicaset": lambda c: f"{c.app()}-{_pod_suffix(c.rng)[:10]}",
    "statefulset": lambda c: c.app(),
    "daemonset": lambda c: c.rng.choice(("fluent-bit", "otel-agent")),
    "cronjob": lambda c: c.rng.choice(_CRONJOBS),
    "job_name": lambda c: f"{c.rng.choice(_CRONJOBS)}-{c.rng.randint(29000000, 29999999)}",
    "persistentvolumeclaim": lambda c: f"data-{c.app()}-{c.rng.randint(0, 2)}",
    "persistentvolume": lambda c: "pvc-" + "-".join(_hex(c.rng, n) for n in (8, 4, 4, 4, 12)),
    "node": lambda c: f"gke-prod-default-pool-{_hex(c.rng, 8)}-{_hex(c.rng, 4)}",
    "cluster": lambda c: c.rng.choice(_CLUSTERS),
    "source_cluster": lambda c: c.rng.choice(_CLUSTERS),
    "target_cluster": lambda c: c.rng.choice(_CLUSTERS),
    "cassandra_cluster": lambda c: "cass-events-prod",
    "zone": lambda c: c.rng.choice(("europe-west1-b", "us-east1-c", "asia-southeast1-a")),
    "phase": lambda c: c.rng.choice(("Pending", "Failed")),
    "reason": lambda c: c.rng.choice(("CrashLoopBackOff", "OOMKilled", "ImagePullBackOff")),
    "datname": lambda c: c.rng.choice(("orders", "payments", "inventory", "accounts")),
    "database": lambda c: c.rng.choice(("orders", "payments", "inventory", "accounts")),
    "relname": lambda c: c.rng.choice(("orders", "order_items", "payments", "sessions", "events")),
    "indexrelname": lambda c: c.rng.choice(("orders_pkey", "order_items_order_id_idx", "events_ts_idx")),
    "idxname": lambda c: c.rng.choice(("orders_pkey", "events_created_at_idx")),
    "tablespace": lambda c: c.rng.choice(("pg_default", "fastdisk")),
    "user": lambda c: c.rng.choice(("app_rw", "reporting", "replicator")),
    "server": lambda c: _server(c),
    "master_host": lambda c: f"{c.host}-1.db.internal",
    "master_port": lambda c: "3306",
    "collection": lambda c: c.rng.choice(("products", "orders", "suggestions")),
    "shard": lambda c: c.rng.choice(("shard1", "shard2", "shard3")),
    "replica": lambda c: f"core_node{c.rng.randint(2, 9)}",
    "base_url": lambda c: f"http://{c.host}-{c.rng.randint(0, 2)}.search.internal:8983/solr",
    "index": lambda c: c.rng.choice(("products-v7", "logs-2026.11.30", "orders-2026")),
    "breaker": lambda c: c.rng.choice(("parent", "fielddata", "request")),
    "keyspace": lambda c: c.rng.choice(("events", "sessions")),
    "queue": lambda c: c.rng.choice(("order-events", "shipments", "email-notifications", "payment-hooks")),
    "topic": lambda c: c.rng.choice(("orders.created", "payments.settled", "stock.updated", "shipments")),
    "consumergroup": lambda c: c.rng.choice(("shipping-worker", "billing-consumer", "search-indexer")),
    "subscription": lambda c: c.rng.choice(("shipping-worker", "billing-consumer")),
    "backend": lambda c: c.rng.choice(("be_checkout", "be_api", "be_static", "be_payments")),
    "frontend": lambda c: c.rng.choice(("fe_https", "fe_api")),
    "proxy": lambda c: c.rng.choice(("be_checkout", "be_api", "fe_https")),
    "upstream": lambda c: c.rng.choice(("checkout-api:8080", "catalog-api:8080")),
    "service": lambda c: c.app(),
    "service_name": lambda c: c.app(),
    "service_id": lambda c: f"{c.app()}-{_hex(c.rng, 8)}",
    "envoy_cluster_name": lambda c: c.rng.choice(("checkout-api", "payments-grpc", "catalog-api")),
    "destination_canonical_service": lambda c: c.app(),
    "route": lambda c: c.rng.choice(("/api/v1/orders", "/api/v1/cart")),
    "endpoint": lambda c: c.rng.choice(("/api/v1/orders", "/api/v1/cart", "/healthz")),
    "exported_endpoint": lambda c: c.rng.choice(("/api/v1/orders", "/api/v1/cart")),
    "method": lambda c: c.rng.choice(("GET", "POST")),
    "grpc_service": lambda c: "etcdserverpb.KV",
    "grpc_method": lambda c: c.rng.choice(("Range", "Txn", "Put")),
    "verb": lambda c: c.rng.choice(("GET", "LIST", "PATCH")),
    "realm": lambda c: c.rng.choice(("customers", "staff")),
    "sans": lambda c: c.rng.choice(("shop.example.com", "api.example.com", "pay.example.com")),
    "ifDescr": lambda c: c.rng.choice(("ge-0/0/12", "xe-1/0/3", "ae0")),
    "interface": lambda c: c.rng.choice(("wg0", "eth0", "ens4")),
    "public_key": lambda c: (
        "".join(
            c.rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
            for _ in range(43)
        )
        + "="
    ),
    "To": lambda c: _hex(c.rng, 16),
    "to": lambda c: c.rng.choice(("10.0.0.2:53", "169.254.169.254:53", "8.8.8.8:53")),
    "peer": lambda c: f"10.0.{c.rng.randint(1, 9)}.{c.rng.randint(2, 250)}",
    "map_name": lambda c: c.rng.choice(("cilium_lb4_services_v2", "cilium_ct4_global", "cilium_policy")),
    "repo": lambda c: "https://github.com/example-org/k8s-manifests",
    "project": lambda c: c.rng.choice(("default", "payments", "platform")),
    "name": lambda c: c.app(),
    "host": lambda c: f"{c.host}-{c.rng.randint(1, 3)}",
    "pool_name": lambda c: c.rng.choice(("www", "api")),
    "return_code": lambda c: c.rng.choice(("500", "503")),
    "rcode": lambda c: "SERVFAIL",
    "plugin": lambda c: c.rng.choice(("forward", "kubernetes")),
    "view": lambda c: "default",
    "group": lambda c: c.rng.choice(("apps", "batch")),
    "component": lambda c: c.rng.choice(("application-controller", "repo-server", "server")),
    "resource": lambda c: c.rng.choice(("pods", "deployments", "configmaps")),
    "scope": lambda c: c.rng.choice(("cluster", "namespace")),
    "type": lambda c: c.rng.choice(("read", "write")),
    "env": lambda c: "prod",
    "region": lambda c: c.rng.choice(("eu-west-1", "us-east-1")),
    "condition": lambda c: c.rng.choice(("MemoryPressure", "DiskPressure")),
    "api_call": lambda c: c.rng.choice(("get_collection", "list_objects")),
    "git_version": lambda c: "v1.31.4",
    "revision": lambda c: _hex(c.rng, 7),
    "rabbitmq_version": lambda c: "3.13.7",
    "slab": lambda c: str(c.rng.randint(1, 40)),
}


def _matchers(query: str) -> dict[str, str]:
    """`name="value"` (or the first plain alternative of `name=~"a|b"`) from the query's selectors:
    the value the alert's series has for that label."""
    out: dict[str, str] = {}
    for name, op, value in re.findall(r'(\w+)\s*(=~|=)(?![=~])\s*"([^"]*)"', query):
        first = value.split("|")[0] if op == "=~" else value
        plain = r"[\w:/@-]+" if op == "=~" else r"[\w.:/@-]+"  # a regex's dot is not a value's
        if name not in out and re.fullmatch(plain, first):
            out[name] = first
    return out


_AGGREGATION = re.compile(
    r"\b(?:sum|count|avg|min|max|topk|bottomk|quantile|stddev|stdvar|group|count_values|histogram_quantile)"
    r"\s*(?:(?:by|without)\s*\([^)]*\)\s*)?\("
)


def _by_labels(query: str) -> list[str]:
    names: list[str] = []
    for group in re.findall(r"\bby\s*\(([^)]*)\)", query):
        for name in (n.strip() for n in group.split(",")):
            if name and name != "le" and name not in names:
                names.append(name)
    return names


def _instance(c: Ctx) -> str:
    p, rng = c.profile, c.rng
    if c.service == "Blackbox":
        return rng.choice(
            (
                "https://shop.example.com/healthz",
                "https://api.example.com/v1/ping",
                "https://pay.example.com/",
            )
        )
    if c.service == "SSL/TLS":
        return rng.choice(("shop.example.com:443", "api.example.com:443", "pay.example.com:443"))
    if c.service in ("Juniper", "SNMP"):
        return f"{c.host}-{rng.randint(1, 4)}.net.internal"
    if p.namespace is not None:
        return f"10.{rng.randint(8, 63)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}:{p.port}"
    style = rng.randrange(3)
    if style == 0:
        return f"{c.host}-{rng.randint(1, 3)}:{p.port}"
    if style == 1:
        return f"{c.host}-{rng.randint(1, 3)}.prod.internal:{p.port}"
    return f"10.{rng.randint(0, 7)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}:{p.port}"


def synthetic_labels(rng: random.Random, service: str, rule: Mapping[str, Any]) -> dict[str, str]:
    """The alert's series labels ($labels: no alertname, no severity): instance and job, the labels
    the templates and `by` clauses name, and where the exporter runs."""
    slug = re.sub(r"[^a-z0-9]+", "-", service.lower()).strip("-")
    profile = PROFILES.get(service, Profile((slug,), 9100 + rng.randrange(800), slug))
    c = Ctx(rng, service, profile, rng.choice(profile.hosts))
    query, description = str(rule["query"]), str(rule["description"])
    from_query = _matchers(query)
    labels: dict[str, str] = {"instance": _instance(c), "job": from_query.get("job", profile.job)}
    if not re.fullmatch(r"[\w.:/-]+", labels["job"]):
        labels["job"] = profile.job
    wanted = _by_labels(query) + re.findall(r"\$labels\.(\w+)", description)
    if not _AGGREGATION.search(query):  # the selected series keep the labels their selectors fix
        wanted += [
            n for n, v in from_query.items() if n not in ("__name__", "le") and not _SEVERITY_WORDS.search(v)
        ]
    if profile.namespace is not None and not profile.objects:
        wanted += ["namespace", "pod"]
    if rng.random() < 0.4:
        wanted.append("cluster")
    for name in wanted:
        if name in labels or name in ("alertname", "severity"):
            continue
        if name in from_query and not _SEVERITY_WORDS.search(from_query[name]):
            labels[name] = from_query[name]
        elif name == "pod" and profile.namespace is not None and not (profile.workloads or profile.objects):
            labels[name] = _pod(c)
        elif name in _VALUES:
            labels[name] = _VALUES[name](c)
        else:
            labels[name] = f"{name.lower()}-{rng.randint(1, 4)}"
    if profile.objects and "daemonset" in labels and "namespace" in labels:
        labels["namespace"] = "logging"  # the node agents' namespace, not an application's
    return labels


# -- deliveries --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Selected:
    group: str
    service: str
    exporter: str
    rule: Mapping[str, Any]
    team: Team | None  # None: a rule outside the eval's categories (a training rule, `rest`)
    occurrence: int  # 0 unless the same (group, service, exporter, name) came before


def walk(rules: Mapping[str, Any]) -> Iterator[tuple[str, str, str, Mapping[str, Any]]]:
    for group in rules["groups"]:
        for service in group["services"]:
            for exporter in service["exporters"]:
                for rule in exporter.get("rules") or ():
                    yield group["name"], service["name"], exporter["slug"], rule


def select(rules: Mapping[str, Any]) -> list[Selected]:
    seen: dict[tuple[str, str, str, str], int] = {}
    out: list[Selected] = []
    for group, service, exporter, rule in walk(rules):
        team = team_of(group, service)
        if team is None:
            continue
        key = (group, service, exporter, str(rule["name"]))
        seen[key] = seen.get(key, -1) + 1
        out.append(Selected(group, service, exporter, rule, team, seen[key]))
    return out


def rest(rules: Mapping[str, Any]) -> list[Selected]:
    """The rules `select` leaves out (categories of no default team), less any whose name or
    description is an eval rule's: the toy's training rules, never an eval line."""
    chosen = select(rules)
    names = {liquid_alertname(str(s.rule["name"])).lower() for s in chosen}
    texts = {_plain(str(s.rule["description"])) for s in chosen}
    seen: dict[tuple[str, str, str, str], int] = {}
    out: list[Selected] = []
    for group, service, exporter, rule in walk(rules):
        if team_of(group, service) is not None:
            continue
        if liquid_alertname(str(rule["name"])).lower() in names or _plain(str(rule["description"])) in texts:
            continue
        key = (group, service, exporter, str(rule["name"]))
        seen[key] = seen.get(key, -1) + 1
        out.append(Selected(group, service, exporter, rule, None, seen[key]))
    return out


def _plain(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _starts_at(rng: random.Random) -> str:
    t = EPOCH + dt.timedelta(seconds=rng.randrange(WINDOW_S))
    nanos = f"{rng.randrange(10**9):09d}".rstrip("0")
    return t.strftime("%Y-%m-%dT%H:%M:%S") + (f".{nanos}" if nanos else "") + "Z"


def _quote_label(value: str) -> str:
    return json.dumps(value)  # Go's %q for the printable text of alert names


def delivery(s: Selected, variant: int = 0) -> dict[str, Any]:
    """The rule's delivery; another `variant` draws other label values, value and time."""
    rule = s.rule
    place = "\x00".join((SEED, s.group, s.service, s.exporter, str(rule["name"]), str(s.occurrence)))
    if variant:
        place += f"\x00{variant}"
    rng = random.Random(place)
    severity = str(rule["severity"])
    series = synthetic_labels(rng, s.service, rule)
    for name, text in series.items():  # the severity is told by the `severity` label only
        if _SEVERITY_WORDS.search(text):
            raise ValueError(f"{s.service}: {rule['name']}: label {name}={text!r} names a severity")
    value = firing_value(rng, str(rule["name"]), str(rule["query"]))
    alertname = liquid_alertname(str(rule["name"]))
    labels = dict(sorted({**series, "alertname": alertname, "severity": severity}.items()))
    description = render(str(rule["description"]), series, value)
    annotations = {
        "description": f"{description}\n  VALUE = {go_value(value)}\n  LABELS = {go_labels(series)}",
        "summary": f"{rule['name']} (instance {series['instance']})",
    }
    prometheus = rng.choice(("http://prometheus:9090", "http://prometheus-0.monitoring:9090"))
    alert = {
        "status": "firing",
        "labels": labels,
        "annotations": annotations,
        "startsAt": _starts_at(rng),
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": f"{prometheus}/graph?g0.expr={quote_plus(str(rule['query']))}&g0.tab=1",
        "fingerprint": labels_fingerprint(labels),
    }
    payload = {
        "receiver": "router",
        "status": "firing",
        "alerts": [alert],
        "groupLabels": {"alertname": alertname},
        "commonLabels": labels,
        "commonAnnotations": annotations,
        "externalURL": "http://alertmanager:9093",
        "version": "4",
        "groupKey": "{}:{alertname=" + _quote_label(alertname) + "}",
        "truncatedAlerts": 0,
    }
    expected = [{"page": severity == "critical", "team": s.team, "severity": severity}]
    note = f"{s.group} / {s.service} / {s.exporter}: {rule['name']}"
    return {"source": "alertmanager", "payload": payload, "expected": expected, "note": note}


def build(rules: Mapping[str, Any]) -> list[str]:
    """The JSON lines, in the source's order."""
    lines = []
    for s in select(rules):
        lines.append(json.dumps(delivery(s), ensure_ascii=False, separators=(",", ":")))
    return lines


def training(rules: Mapping[str, Any], variants: int) -> list[str]:
    """JSON lines of the `rest` rules' alerts, `variants` renderings each, as the toy trains on
    them (deploy/models/scripts/alert_corpus/): the state the router builds from the delivery
    (`Alert.state()`), the rule's severity, and the split (a tenth of the rules, by name, is dev)."""
    lines = []
    for s in rest(rules):
        name = str(s.rule["name"])
        digest = hashlib.sha256(f"{s.service}\x00{name}".encode()).digest()
        split = "dev" if digest[0] % 10 == 0 else "train"
        for v in range(variants):
            (alert,) = from_alertmanager(delivery(s, v)["payload"]).alerts
            item = {
                "split": split,
                "rule": f"{s.group} / {s.service}: {name}",
                "severity": str(s.rule["severity"]),
            }
            lines.append(
                json.dumps({**item, "state": alert.state()}, ensure_ascii=False, separators=(",", ":"))
            )
    return lines


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("rules", type=Path, help="_data/rules.yml of samber/awesome-prometheus-alerts")
    parser.add_argument("out", type=Path, help="the JSON Lines file to write (gzipped with --training)")
    parser.add_argument(
        "--training", type=int, metavar="VARIANTS",
        help="write instead the toy's training alerts: the rules outside the eval, VARIANTS renderings each",
    )  # fmt: skip
    args = parser.parse_args(argv)
    raw = args.rules.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != SOURCE_SHA256:
        print(f"note: {args.rules} is not the pinned rules file (sha256 {digest})", file=sys.stderr)
    rules = yaml.safe_load(raw.decode("utf-8"))
    if args.training:
        lines = training(rules, args.training)
        text = "".join(line + "\n" for line in lines).encode("utf-8")
        args.out.write_bytes(gzip.compress(text, mtime=0))  # mtime 0: the same bytes on every build
    else:
        lines = build(rules)
        args.out.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    print(f"{len(lines)} deliveries -> {args.out} (rules sha256 {digest})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
