"""The synthetic series labels of a firing alert: how each service's exporter is usually scraped
(host names, port, job, Kubernetes namespace) and a plausible value for every label a template or a
`by` clause names, drawn from the rule's own random generator."""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from evals.alerts.public.promql import AGGREGATION, by_labels, matchers


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
SEVERITY_WORDS = re.compile(r"\b(critical|warning|warn|info|error)\b", re.IGNORECASE)


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
    from_query = matchers(query)
    labels: dict[str, str] = {"instance": _instance(c), "job": from_query.get("job", profile.job)}
    if not re.fullmatch(r"[\w.:/-]+", labels["job"]):
        labels["job"] = profile.job
    wanted = by_labels(query) + re.findall(r"\$labels\.(\w+)", description)
    if not AGGREGATION.search(query):  # the selected series keep the labels their selectors fix
        wanted += [
            n for n, v in from_query.items() if n not in ("__name__", "le") and not SEVERITY_WORDS.search(v)
        ]
    if profile.namespace is not None and not profile.objects:
        wanted += ["namespace", "pod"]
    if rng.random() < 0.4:
        wanted.append("cluster")
    for name in wanted:
        if name in labels or name in ("alertname", "severity"):
            continue
        if name in from_query and not SEVERITY_WORDS.search(from_query[name]):
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
