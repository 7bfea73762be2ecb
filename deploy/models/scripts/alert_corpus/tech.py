"""Technologies: what the state kinds are about, with their exporters' jobs, ports and labels."""

from __future__ import annotations

import random
from typing import Any, NamedTuple

from .common import _alnum, _hex
from .subjects import CLUSTERS, REGIONS, _service

# -- technologies: what the state kinds are about -------------------------------------------------


class Tech(NamedTuple):
    """A technology as its exporters and rule authors name it; its team is the default policy's
    owner of such systems (etcd, a replicated key-value store: database; Zookeeper, coordinating
    brokers: application; blackbox probes and meshes: network)."""

    team: str
    names: tuple[str, ...]
    jobs: tuple[str, ...]  # "" : the service's own job
    hosts: tuple[str, ...]  # "" : the service's own name (app runtimes)
    ports: tuple[int, ...]
    unit: str  # what one member is called
    m: str  # metric prefix
    ns: tuple[str, ...] = ()  # namespaces when run in Kubernetes
    k8s: float = 0.3  # share of its alerts from pods


TECH: dict[str, Tech] = {
    # database
    "postgres": Tech(
        "database",
        ("PostgreSQL", "Postgres", "Postgresql"),
        ("postgres-exporter", "postgres", "postgresql", "pg"),
        ("pg", "postgres", "pg-main", "orders-db", "users-db", "db"),
        (5432, 9187),
        "instance",
        "pg",
        ("databases", "postgres", "db"),
    ),
    "mysql": Tech(
        "database",
        ("MySQL", "Mysql"),
        ("mysqld-exporter", "mysql", "mysqld"),
        ("mysql", "shop-db", "db", "mysql-primary"),
        (3306, 9104),
        "instance",
        "mysql",
        ("databases", "mysql"),
    ),
    "mariadb": Tech(
        "database",
        ("MariaDB", "Mariadb", "Galera"),
        ("mysqld-exporter", "mariadb", "galera"),
        ("mariadb", "galera", "maria"),
        (3306, 9104),
        "node",
        "mysql",
        ("databases", "mariadb"),
    ),
    "mssql": Tech(
        "database",
        ("SQL Server", "MSSQL", "Mssql", "SqlServer"),
        ("mssql-exporter", "sql-exporter", "mssql", "sqlserver"),
        ("sql", "mssql", "sqlsrv", "erp-sql"),
        (1433, 4000, 9399),
        "instance",
        "mssql",
        (),
        0.05,
    ),
    "oracle": Tech(
        "database",
        ("Oracle", "OracleDB", "Oracle DB"),
        ("oracledb-exporter", "oracle", "oracledb"),
        ("ora", "oracle", "erp-db", "orcl"),
        (1521, 9161),
        "instance",
        "oracledb",
        (),
        0.0,
    ),
    "patroni": Tech(
        "database",
        ("Patroni",),
        ("patroni", "patroni-exporter"),
        ("pg", "pg-main", "patroni", "pg-ha"),
        (8008,),
        "member",
        "patroni",
        ("databases", "postgres"),
    ),
    "pgbouncer": Tech(
        "database",
        ("PgBouncer", "Pgbouncer"),
        ("pgbouncer-exporter", "pgbouncer"),
        ("pgbouncer", "pgb", "pg-pool"),
        (6432, 9127),
        "instance",
        "pgbouncer",
        ("databases", "postgres"),
    ),
    "proxysql": Tech(
        "database",
        ("ProxySQL", "Proxysql"),
        ("proxysql", "proxysql-exporter"),
        ("proxysql", "mysql-proxy"),
        (6032, 42004),
        "instance",
        "proxysql",
        ("databases", "mysql"),
    ),
    "redis": Tech(
        "database",
        ("Redis",),
        ("redis-exporter", "redis", "redis_exporter"),
        ("redis", "sessions-redis", "cache-redis", "redis-main"),
        (6379, 9121),
        "node",
        "redis",
        ("redis", "cache", "databases"),
    ),
    "memcached": Tech(
        "database",
        ("Memcached",),
        ("memcached-exporter", "memcached"),
        ("memcached", "mc", "cache"),
        (11211, 9150),
        "node",
        "memcached",
        ("cache", "memcached"),
    ),
    "mongodb": Tech(
        "database",
        ("MongoDB", "Mongodb", "Mongo"),
        ("mongodb-exporter", "mongodb", "mongo"),
        ("mongo", "mongo-rs0", "mongodb"),
        (27017, 9216),
        "member",
        "mongodb",
        ("databases", "mongodb"),
    ),
    "cassandra": Tech(
        "database",
        ("Cassandra",),
        ("cassandra", "cassandra-exporter", "jmx-cassandra"),
        ("cassandra", "cass"),
        (9042, 7070, 9500),
        "node",
        "cassandra",
        ("cassandra", "databases"),
    ),
    "scylla": Tech(
        "database",
        ("ScyllaDB", "Scylla"),
        ("scylla", "scylladb"),
        ("scylla", "scylla-node"),
        (9042, 9180),
        "node",
        "scylla",
        ("scylla",),
    ),
    "clickhouse": Tech(
        "database",
        ("ClickHouse", "Clickhouse"),
        ("clickhouse", "clickhouse-exporter"),
        ("clickhouse", "ch", "ch-shard"),
        (8123, 9363),
        "replica",
        "clickhouse",
        ("clickhouse", "analytics"),
    ),
    "couchdb": Tech(
        "database",
        ("CouchDB", "Couchdb"),
        ("couchdb", "couchdb-exporter"),
        ("couchdb", "couch"),
        (5984, 9984),
        "node",
        "couchdb",
        ("couchdb",),
    ),
    "elasticsearch": Tech(
        "database",
        ("Elasticsearch", "ES", "Elastic"),
        ("elasticsearch-exporter", "elasticsearch", "es"),
        ("es-data", "es-master", "es", "logs-es"),
        (9200, 9114),
        "node",
        "elasticsearch",
        ("elastic", "logging", "search"),
    ),
    "opensearch": Tech(
        "database",
        ("OpenSearch", "Opensearch"),
        ("opensearch", "opensearch-exporter"),
        ("opensearch", "os-data", "logs-os"),
        (9200, 9114),
        "node",
        "opensearch",
        ("opensearch", "logging"),
    ),
    "solr": Tech(
        "database",
        ("Solr", "SolrCloud"),
        ("solr", "solr-exporter"),
        ("solr", "search-solr"),
        (8983, 9854),
        "node",
        "solr",
        ("solr", "search"),
    ),
    "meilisearch": Tech(
        "database",
        ("Meilisearch", "MeiliSearch"),
        ("meilisearch", "meili"),
        ("meili", "meilisearch", "search-meili"),
        (7700,),
        "instance",
        "meilisearch",
        ("search", "meilisearch"),
    ),
    "etcd": Tech(
        "database",
        ("etcd", "Etcd"),
        ("etcd", "kube-etcd", "etcd-cluster"),
        ("etcd", "etcd-main", "etcd-events"),
        (2379, 2381),
        "member",
        "etcd",
        ("kube-system", "etcd"),
    ),
    # network
    "coredns": Tech(
        "network",
        ("CoreDNS", "Coredns"),
        ("coredns", "kube-dns"),
        ("coredns",),
        (9153,),
        "replica",
        "coredns",
        ("kube-system",),
        1.0,
    ),
    "bind": Tech(
        "network",
        ("BIND", "Bind", "Named"),
        ("bind", "bind-exporter", "named"),
        ("ns", "dns", "named", "bind"),
        (53, 9119),
        "server",
        "bind",
        (),
        0.0,
    ),
    "powerdns": Tech(
        "network",
        ("PowerDNS", "Powerdns"),
        ("powerdns", "pdns"),
        ("pdns", "ns", "dns-auth"),
        (8081,),
        "server",
        "powerdns",
        (),
        0.0,
    ),
    "haproxy": Tech(
        "network",
        ("HAProxy", "Haproxy"),
        ("haproxy", "haproxy-exporter"),
        ("haproxy", "lb", "lb-ext"),
        (8404, 9101),
        "instance",
        "haproxy",
        ("ingress", "haproxy"),
        0.15,
    ),
    "nginx": Tech(
        "network",
        ("Nginx", "NGINX"),
        ("nginx", "nginx-exporter", "nginx-vts"),
        ("nginx-edge", "proxy", "web-lb", "nginx"),
        (9113, 8080),
        "instance",
        "nginx",
        ("edge", "nginx"),
        0.15,
    ),
    "traefik": Tech(
        "network",
        ("Traefik",),
        ("traefik",),
        ("traefik",),
        (8080, 8082, 9100),
        "instance",
        "traefik",
        ("traefik", "kube-system"),
        0.7,
    ),
    "envoy": Tech(
        "network",
        ("Envoy",),
        ("envoy", "envoy-stats", "envoy-gateway"),
        ("envoy", "edge-proxy", "front-envoy"),
        (9901, 19001),
        "instance",
        "envoy",
        ("envoy-gateway-system", "edge"),
        0.5,
    ),
    "caddy": Tech(
        "network",
        ("Caddy",),
        ("caddy",),
        ("caddy", "web-proxy"),
        (2019,),
        "instance",
        "caddy",
        (),
        0.0,
    ),
    "apache": Tech(
        "network",
        ("Apache", "Apache httpd", "Httpd"),
        ("apache", "apache-exporter", "httpd"),
        ("httpd", "apache", "rproxy"),
        (9117,),
        "instance",
        "apache",
        (),
        0.0,
    ),
    "ingress-nginx": Tech(
        "network",
        ("Ingress NGINX", "Nginx Ingress", "Ingress"),
        ("ingress-nginx", "ingress-nginx-controller-metrics", "nginx-ingress"),
        ("ingress-nginx-controller",),
        (10254,),
        "controller",
        "nginx_ingress_controller",
        ("ingress-nginx",),
        1.0,
    ),
    "istio": Tech(
        "network",
        ("Istio",),
        ("istiod", "istio-mesh", "envoy-stats", "istio-ingressgateway"),
        ("istiod", "istio-ingressgateway"),
        (15014, 15090),
        "proxy",
        "istio",
        ("istio-system",),
        1.0,
    ),
    "linkerd": Tech(
        "network",
        ("Linkerd",),
        ("linkerd-proxy", "linkerd-controller", "linkerd"),
        ("linkerd-destination", "linkerd-identity"),
        (4191, 9995),
        "proxy",
        "linkerd",
        ("linkerd",),
        1.0,
    ),
    "cilium": Tech(
        "network",
        ("Cilium",),
        ("cilium-agent", "cilium", "hubble"),
        ("cilium",),
        (9962, 9965),
        "agent",
        "cilium",
        ("kube-system",),
        1.0,
    ),
    "calico": Tech(
        "network",
        ("Calico",),
        ("calico-node", "felix", "calico"),
        ("calico-node",),
        (9091,),
        "node",
        "felix",
        ("calico-system", "kube-system"),
        1.0,
    ),
    "consul": Tech(
        "network",
        ("Consul",),
        ("consul", "consul-exporter"),
        ("consul", "consul-server"),
        (8500, 9107),
        "server",
        "consul",
        ("consul",),
    ),
    "keepalived": Tech(
        "network",
        ("Keepalived",),
        ("keepalived", "keepalived-exporter"),
        ("lb", "vip", "haproxy"),
        (9165,),
        "instance",
        "keepalived",
        (),
        0.0,
    ),
    "metallb": Tech(
        "network",
        ("MetalLB", "Metallb"),
        ("metallb-speaker", "metallb", "metallb-controller"),
        ("metallb-speaker",),
        (7472,),
        "speaker",
        "metallb",
        ("metallb-system",),
        1.0,
    ),
    # application
    "kafka": Tech(
        "application",
        ("Kafka", "Apache Kafka"),
        ("kafka", "kafka-exporter", "kafka-jmx", "kafka-broker"),
        ("kafka", "kafka-broker", "events-kafka"),
        (9092, 9308, 7071),
        "broker",
        "kafka",
        ("kafka", "streaming", "messaging"),
    ),
    "rabbitmq": Tech(
        "application",
        ("RabbitMQ", "Rabbitmq"),
        ("rabbitmq", "rabbitmq-exporter"),
        ("rabbitmq", "rabbit", "mq"),
        (15692, 9419),
        "node",
        "rabbitmq",
        ("rabbitmq", "messaging"),
    ),
    "nats": Tech(
        "application",
        ("NATS", "Nats"),
        ("nats", "nats-exporter", "prometheus-nats-exporter"),
        ("nats", "nats-js"),
        (7777, 8222),
        "server",
        "nats",
        ("nats", "messaging"),
    ),
    "pulsar": Tech(
        "application",
        ("Pulsar", "Apache Pulsar"),
        ("pulsar", "pulsar-broker", "bookkeeper"),
        ("pulsar-broker", "pulsar", "bookie"),
        (8080, 8000),
        "broker",
        "pulsar",
        ("pulsar",),
    ),
    "activemq": Tech(
        "application",
        ("ActiveMQ", "Activemq", "ActiveMQ Artemis"),
        ("activemq", "artemis", "activemq-jmx"),
        ("activemq", "amq", "artemis"),
        (8161, 9404),
        "broker",
        "activemq",
        ("messaging",),
        0.2,
    ),
    "zookeeper": Tech(
        "application",
        ("ZooKeeper", "Zookeeper"),
        ("zookeeper", "zk"),
        ("zk", "zookeeper", "kafka-zk"),
        (2181, 7000),
        "server",
        "zookeeper",
        ("kafka", "zookeeper"),
    ),
    "keycloak": Tech(
        "application",
        ("Keycloak",),
        ("keycloak",),
        ("keycloak", "sso", "auth-kc"),
        (8080, 9000),
        "instance",
        "keycloak",
        ("keycloak", "identity", "auth"),
    ),
    "litellm": Tech(
        "application",
        ("LLM Gateway", "LiteLLM", "LLM Proxy", "AI Gateway"),
        ("litellm", "llm-gateway", "ai-gateway"),
        ("llm-gateway", "litellm", "ai-gateway"),
        (4000, 9090),
        "instance",
        "litellm",
        ("ai", "llm", "platform"),
        0.6,
    ),
    "argocd": Tech(
        "application",
        ("Argo CD", "ArgoCD", "Argocd"),
        ("argocd-metrics", "argocd-server-metrics", "argocd-application-controller"),
        ("argocd-application-controller",),
        (8082,),
        "controller",
        "argocd",
        ("argocd",),
        1.0,
    ),
    "flux": Tech(
        "application",
        ("Flux", "FluxCD"),
        ("kustomize-controller", "helm-controller", "flux-system"),
        ("kustomize-controller", "helm-controller"),
        (8080,),
        "controller",
        "gotk",
        ("flux-system",),
        1.0,
    ),
    "phpfpm": Tech(
        "application",
        ("PHP-FPM", "PhpFpm", "Php Fpm"),
        ("php-fpm", "php-fpm-exporter", "phpfpm"),
        ("", "web", "php"),
        (9253,),
        "pool",
        "phpfpm",
        ("web", "shop", "prod"),
    ),
    "nodejs": Tech(
        "application",
        ("Node.js", "NodeJS", "Nodejs"),
        ("",),
        ("",),
        (9229, 3000, 9091),
        "process",
        "nodejs",
        ("prod", "apps", "default"),
        0.6,
    ),
    "jvm": Tech(
        "application",
        ("JVM", "Java", "Spring Boot"),
        ("", "spring-actuator", "jmx"),
        ("",),
        (8080, 9404, 8081),
        "instance",
        "jvm",
        ("prod", "apps", "default"),
        0.6,
    ),
    "goapp": Tech(
        "application",
        ("Go", "Golang"),
        ("",),
        ("",),
        (8080, 2112),
        "instance",
        "go",
        ("prod", "apps"),
        0.6,
    ),
    "gunicorn": Tech(
        "application",
        ("Gunicorn", "uWSGI"),
        ("", "gunicorn", "statsd-exporter"),
        ("",),
        (9102, 8000),
        "worker",
        "gunicorn",
        ("prod", "apps"),
        0.6,
    ),
    "celery": Tech(
        "application",
        ("Celery",),
        ("celery", "celery-exporter", ""),
        ("celery", "", "worker"),
        (9808,),
        "worker",
        "celery",
        ("prod", "workers"),
        0.5,
    ),
    "sidekiq": Tech(
        "application",
        ("Sidekiq",),
        ("sidekiq", "sidekiq-exporter", ""),
        ("sidekiq", ""),
        (9292, 9359),
        "process",
        "sidekiq",
        ("prod", "workers"),
        0.5,
    ),
}
POOL_KIND = {
    "haproxy": "backend",
    "nginx": "upstream",
    "traefik": "service",
    "envoy": "cluster",
    "caddy": "upstream",
    "apache": "balancer",
    "ingress-nginx": "ingress",
    "istio": "destination",
    "linkerd": "service",
    "consul": "service",
}
# What a store or a broker or a proxy does many times a second, for the throughput kind.
OPS = {
    "postgres": ("commit", "transaction"),
    "mysql": ("query", "transaction", "commit"),
    "mssql": ("transaction", "batch request"),
    "oracle": ("transaction", "commit"),
    "mongodb": ("operation", "write"),
    "cassandra": ("write", "read"),
    "clickhouse": ("insert", "query"),
    "kafka": ("message",),
    "rabbitmq": ("message",),
    "nats": ("message",),
    "pulsar": ("message",),
    "haproxy": ("request",),
    "nginx": ("request",),
    "ingress-nginx": ("request",),
    "envoy": ("request",),
}


def _plural(word: str) -> str:
    if word.endswith("y") and word[-2:] != "ey":
        return word[:-1] + "ies"
    return word + ("es" if word.endswith(("s", "x")) else "s")


def _tech_subject(rng: random.Random, key: str) -> dict[str, Any]:
    """A member of a technology's deployment: host or pod, scrape labels, cluster name."""
    t = TECH[key]
    svc = _service(rng)
    prefix = rng.choice(t.hosts) or svc
    port = rng.choice(t.ports)
    job = rng.choice(t.jobs) or svc.split("-")[0]
    labels: dict[str, str] = {}
    if t.ns and rng.random() < t.k8s:
        pod = (
            f"{prefix}-{rng.randint(0, 4)}"
            if rng.random() < 0.5 or t.unit in ("member", "broker", "node", "server", "replica")
            else f"{prefix}-{_hex(rng, 9)}-{_alnum(rng, 5)}"
        )
        ns = rng.choice(t.ns)
        host = pod
        instance = f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}:{port}"
        labels.update(instance=instance, job=job, namespace=ns, pod=pod)
        if rng.random() < 0.2:
            labels["service"] = prefix if rng.random() < 0.5 else f"{prefix}-metrics"
    else:
        n = rng.randint(1, 12)
        host = rng.choice(
            [f"{prefix}-{n}", f"{prefix}{n:02d}", f"{prefix}-prod-{n}", f"{prefix}-{n}.prod.internal"]
        )
        instance = f"{host}:{port}" if rng.random() < 0.85 else host
        labels.update(instance=instance, job=job)
    base = prefix.split("-")[0] if prefix != svc else key
    cname = rng.choice(
        [f"{base}-prod", f"{base}-main", f"{prefix}", f"{base}-{rng.choice(['eu', 'us', 'a'])}"]
    )
    if rng.random() < 0.2:
        labels[rng.choice(["cluster", "cluster", "cluster_name"])] = cname
    unit = t.unit
    ops = OPS.get(key, ("request",))
    op = rng.choice(ops)
    pool = _service(rng)
    return {
        "role": t.team,
        "team": t.team,
        "tech": key,
        "Tech": rng.choice(t.names),
        "unit": unit,
        "Unit": unit[:1].upper() + unit[1:],
        "units": _plural(unit),
        "m": t.m,
        "host": host,
        "instance": instance,
        "port": port,
        "job": job,
        "cname": cname,
        "service": svc,
        "namespace": labels.get("namespace", rng.choice(t.ns or ("default",))),
        "pool": pool,
        "pool_kind": POOL_KIND.get(key, "backend"),
        "server": rng.choice(
            [f"{pool}-{rng.randint(1, 6)}", f"10.0.{rng.randint(0, 9)}.{rng.randint(2, 250)}:8080"]
        ),
        "op": op,
        "Op": op.title(),
        "ops": _plural(op),
        "ops_m": _plural(op).replace(" ", "_"),
        "topic": rng.choice(["orders", "payments", "events", "clicks", "audit-log", "invoices"]),
        "queue": rng.choice(["orders.process", "emails.outbound", "invoices.created", "default", "celery"]),
        "group": f"{svc.split('-')[0]}-consumer",
        "app": svc.split("-")[0],
        "dbname": rng.choice(["orders", "users", "billing", "app", "inventory", "erp"]),
        "region": rng.choice(REGIONS),
        "cluster": rng.choice(CLUSTERS),
        "labels": labels,
        **(
            {"subject": instance, "subject_key": "instance"}
            if rng.random() < 0.6
            else {"subject": host, "subject_key": rng.choice(["host", "server", unit])}
        ),
    }
