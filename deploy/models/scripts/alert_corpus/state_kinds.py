"""The state kinds: severity follows what broke, not a magnitude."""

from __future__ import annotations

from .common import TEAMS
from .data import frozen, table
from .kinds import Kind
from .states import StateTable, _state_facts
from .states_availability import CRASHING, DOWN, QUORUM, REPLICATION
from .states_network import CONTAINERS, GITOPS, IFACES, NET_STATES, PROBES, VERSIONS, WORKLOADS
from .states_platform import BROKERS, CONFIG, RUNTIMES
from .states_serving import BACKENDS, CLIENT_REQUESTS, PERSISTENCE, STORAGE, THROUGHPUT
from .tech import OPS, POOL_KIND, TECH

_TECHNOLOGIES = table("technologies")
_WEIGHTS = table("weights")

_DB = ("database",)
APP_TECHS = tuple(k for k, t in TECH.items() if t.team == "application")
RUNTIME_TECHS: tuple[str, ...] = frozen(_TECHNOLOGIES["runtime_techs"])


def _state_kind(
    key: str,
    subject: str,
    roles: tuple[str, ...],
    levels: dict[str, float],
    table: StateTable,
    metric: str,
    techs: tuple[str, ...] = (),
) -> Kind:
    return Kind(
        key,
        subject,
        roles,
        ("{Tech} Alert",),
        levels,
        _state_facts(table),
        ("{line}",),
        ("{detail}",),
        metric,
        techs,
        weight=STATE_WEIGHTS[key],
        states=table,
    )


# How often each state kind is drawn (the others: 1): enough for the toy to learn states at its
# fixed budget, availability and data-loss kinds most.
STATE_WEIGHTS: dict[str, float] = _WEIGHTS["state_weights"]
# State kinds: severity follows what broke, not a magnitude (see the module docstring).
STATE_KINDS: list[Kind] = [
    _state_kind(
        "tech_down",
        "tech",
        TEAMS,
        {"critical": 0.6, "error": 0.15, "warning": 0.25},
        DOWN,
        "{m}_up",
        (
            *(k for k in TECH if k not in (*RUNTIME_TECHS, "flux", "argocd", "calico", "metallb")),
            *("postgres", "mysql", "redis", "kafka", "rabbitmq", "haproxy", "nginx", "elasticsearch"),
            *("kafka", "rabbitmq", "nats", "zookeeper", "keycloak", "pulsar", "activemq", "litellm"),
        ),
    ),
    _state_kind(
        "quorum",
        "tech",
        TEAMS,
        {"critical": 0.5, "error": 0.2, "warning": 0.3},
        QUORUM,
        "{m}_leader_changes",
        (
            "etcd",
            "etcd",
            "patroni",
            "patroni",
            "consul",
            "consul",
            "zookeeper",
            "kafka",
            "elasticsearch",
            "opensearch",
            "mongodb",
            "rabbitmq",
            "nats",
            "mariadb",
            "redis",
            "clickhouse",
            "solr",
            "cassandra",
        ),
    ),
    _state_kind(
        "replication_state",
        "tech",
        _DB,
        {"critical": 0.55, "error": 0.2, "warning": 0.1, "info": 0.15},
        REPLICATION,
        "{m}_replication_running",
        (
            "postgres",
            "postgres",
            "mysql",
            "mysql",
            "mariadb",
            "mssql",
            "oracle",
            "mongodb",
            "redis",
            "clickhouse",
            "couchdb",
            "patroni",
        ),
    ),
    _state_kind(
        "crashing",
        "tech",
        TEAMS,
        {"critical": 0.5, "error": 0.15, "warning": 0.2, "info": 0.15},
        CRASHING,
        "{m}_process_restarts",
        (*TECH, *APP_TECHS),
    ),
    _state_kind(
        "lb_backends",
        "tech",
        ("network",),
        {"critical": 0.5, "error": 0.2, "warning": 0.3},
        BACKENDS,
        "{m}_backend_up",
        (*(k for k in POOL_KIND if k != "consul"), "haproxy", "traefik", "envoy"),
    ),
    _state_kind(
        "throughput",
        "tech",
        TEAMS,
        {"critical": 0.5, "warning": 0.3, "info": 0.2},
        THROUGHPUT,
        "{m}_{ops_m}_total",
        (*OPS, "postgres", "mysql"),
    ),
    _state_kind(
        "client_requests",
        "tech",
        _DB,
        {"critical": 0.5, "error": 0.25, "warning": 0.25},
        CLIENT_REQUESTS,
        "{m}_clientrequest_failures",
        ("cassandra", "cassandra", "scylla"),
    ),
    _state_kind(
        "storage_state",
        "tech",
        _DB,
        {"critical": 0.4, "error": 0.3, "warning": 0.3},
        STORAGE,
        "{m}_storage_used_percent",
        tuple(STORAGE),
    ),
    _state_kind(
        "persistence",
        "tech",
        _DB,
        {"critical": 0.5, "error": 0.2, "warning": 0.3},
        PERSISTENCE,
        "{m}_persistence_errors",
        tuple(PERSISTENCE),
    ),
    _state_kind(
        "config_reload",
        "tech",
        ("network", "database"),
        {"warning": 0.55, "error": 0.25, "info": 0.2},
        CONFIG,
        "{m}_config_last_reload_successful",
        (
            "nginx",
            "haproxy",
            "coredns",
            "envoy",
            "traefik",
            "bind",
            "caddy",
            "apache",
            "pgbouncer",
            "proxysql",
            "consul",
            "istio",
            "powerdns",
            "ingress-nginx",
            "keepalived",
        ),
    ),
    _state_kind(
        "broker_state",
        "tech",
        ("application",),
        {"critical": 0.4, "error": 0.25, "warning": 0.25, "info": 0.1},
        BROKERS,
        "{m}_alarms",
        (*BROKERS, "rabbitmq", "kafka"),
    ),
    _state_kind(
        "runtime",
        "tech",
        ("application",),
        {"critical": 0.3, "error": 0.3, "warning": 0.3, "info": 0.1},
        RUNTIMES,
        "{m}_runtime",
        RUNTIME_TECHS,
    ),
    _state_kind(
        "gitops",
        "tech",
        ("application",),
        {"error": 0.3, "warning": 0.5, "info": 0.2},
        GITOPS,
        "{m}_app_info",
        ("argocd", "argocd", "flux"),
    ),
    _state_kind(
        "net_state",
        "tech",
        ("network",),
        {"critical": 0.35, "error": 0.3, "warning": 0.3, "info": 0.05},
        NET_STATES,
        "{m}_status",
        tuple(NET_STATES),
    ),
    _state_kind(
        "version_mismatch",
        "tech",
        TEAMS,
        {"info": 0.7, "warning": 0.3},
        VERSIONS,
        "{m}_build_info",
        (
            "etcd",
            "kafka",
            "elasticsearch",
            "rabbitmq",
            "cassandra",
            "consul",
            "mongodb",
            "redis",
            "zookeeper",
            "istio",
            "linkerd",
        ),
    ),
    _state_kind(
        "workload_state",
        "pod",
        TEAMS,
        {"critical": 0.45, "error": 0.15, "warning": 0.28, "info": 0.12},
        WORKLOADS,
        "kube_deployment_status_replicas_available",
        (),
    ),
    _state_kind(
        "blackbox",
        "endpoint",
        ("network",),
        {"critical": 0.5, "error": 0.2, "warning": 0.2, "info": 0.1},
        PROBES,
        "probe_success",
        (),
    ),
    _state_kind(
        "container_state",
        "container",
        TEAMS,
        {"critical": 0.3, "error": 0.25, "warning": 0.3, "info": 0.15},
        CONTAINERS,
        "container_last_seen",
        (),
    ),
    _state_kind(
        "iface_down",
        "link",
        ("network",),
        {"critical": 0.35, "error": 0.25, "warning": 0.3, "info": 0.1},
        IFACES,
        "ifOperStatus",
        (),
    ),
]
# Host resources on role-named hosts (disk of db-1: database) are what most teams page on first, and
# the kit's own samples and README example are such alerts: drawn about as often as other kinds.
# (3-4x, with the catalogue, left the team question unlearnt in a CPU run; x1 learnt it on a GPU
# sweep of this script, evals/alerts/results/toy-sweep-2026-12-02.)
HOST_WEIGHTS: dict[str, float] = _WEIGHTS["host_weights"]
