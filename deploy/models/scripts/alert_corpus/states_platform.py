"""States: config reloads, brokers, runtimes."""

from __future__ import annotations

from .states import StateTable, _const, _n, _of, _pcts, _s

CONFIG: StateTable = {
    "*": {
        "warning": [
            _s(
                (
                    "{Tech} Config Reload Failed|{Tech} Configuration Reload Failure|{Tech} Reload Failed|"
                    "{Tech} Config Not Applied"
                ),
                (
                    "failed its last configuration reload; the previous config keeps serving|"
                    "rejected the new configuration ({err}); the old one is still active|"
                    "has failed to reload its config for {n}m"
                ),
                "reload failed",
                lambda rng, f: {
                    "n": rng.randint(5, 90),
                    "num": 0,
                    "thr": 1,
                    "err": rng.choice(
                        [
                            "syntax error on line 42",
                            "unknown directive",
                            "invalid upstream",
                            "certificate file not found",
                            "duplicate listener",
                        ]
                    ),
                },
                metric="{m}_config_last_reload_successful",
            ),
        ],
        "error": [
            _s(
                "{Tech} Config Out Of Sync|{Tech} Config Reload Failed|{Tech} Config Rejected",
                (
                    "runs different configs: reload failed on {k} of {total} {units}|"
                    "has the new config rejected by {k} of {total} {units}; they serve stale routes"
                ),
                "{k}/{total} stale",
                _of(lambda t: t // 2, (3, 4, 6)),
                scope="cluster",
            ),
        ],
        "info": [
            _s(
                "{Tech} Config Reloaded|{Tech} Configuration Changed",
                "reloaded its configuration successfully|configuration changed and was reloaded",
                "reloaded",
                _const(num=1, thr=1),
            ),
        ],
    },
    "istio": {
        "warning": [
            _s(
                "Istio Pilot Xds Push Errors|Istiod Push Errors",
                "failed to push config to {n} proxies",
                "{n} push errors",
                _n("n", 2, 30, 1),
            )
        ],
        "error": [
            _s(
                "Istio Proxy Config Rejected|Envoy Rejected Config",
                "had {n} sidecars reject the pushed config (NACK); they run stale routes",
                "{n} NACKs",
                _n("n", 5, 80, 1),
            )
        ],
    },
    "bind": {
        "error": [
            _s(
                "Bind Zone Load Failed|Named Zone Load Failed",
                "failed to load zone {app}.example.com: serving the stale zone",
                "zone load failed",
            )
        ],
    },
}
CONFIG["powerdns"] = CONFIG["bind"]

BROKERS: StateTable = {
    "rabbitmq": {
        "critical": [
            _s(
                "RabbitMQ Memory Alarm|RabbitMQ Memory High Watermark",
                "raised a memory alarm: publishers are blocked",
                "memory alarm",
                _const(num=1, thr=0),
                metric="rabbitmq_alarms_memory_used_watermark",
            ),
            _s(
                "Rabbitmq Disk Alarm|RabbitMQ Disk Free Limit",
                "is below its disk free limit: publishers are blocked",
                "disk alarm",
                _const(num=1, thr=0),
                metric="rabbitmq_alarms_free_disk_space_watermark",
            ),
        ],
        "error": [
            _s(
                "RabbitMQ File Descriptors Near Limit|RabbitMQ Too Many Connections",
                "has {pct}% of file descriptors in use",
                "{pct}%",
                _pcts(90, 97, 90),
            )
        ],
        "warning": [
            _s(
                "RabbitMQ Too Many Unacked Messages|Rabbitmq Unacked Messages High",
                "has {n}000 unacknowledged messages on {queue}",
                "{n}k unacked",
                _n("n", 2, 40, 1),
            ),
            _s(
                "RabbitMQ Unroutable Messages|Rabbitmq Dropped Unroutable",
                "dropped {n} unroutable messages in 5m",
                "{n} unroutable",
                _n("n", 2, 40, 1),
            ),
        ],
    },
    "kafka": {
        "critical": [
            _s(
                "Kafka Under Min ISR Partitions|Kafka Under Min Insync Replicas",
                "has {n} partitions below min.insync.replicas: acks=all produces fail",
                "{n} under min ISR",
                _n("n", 1, 30, 1),
                scope="cluster",
                metric="kafka_cluster_partition_underminisr",
            )
        ],
        "error": [
            _s(
                "Kafka Consumer Group Rebalancing|Kafka Rebalance Storm",
                "saw consumer group {group} rebalance {n} times in 15m; consumption stalls",
                "{n} rebalances",
                _n("n", 6, 20, 5),
                scope="cluster",
            )
        ],
        "warning": [
            _s(
                "Kafka Under Replicated Partitions|Kafka ISR Shrinking|Kafka Isr Shrinks",
                "has {n} under-replicated partitions|had its ISR shrink {n} times in 10m",
                "{n} under-replicated",
                _n("n", 1, 20, 1),
                scope="cluster",
            )
        ],
        "info": [
            _s(
                "Kafka Preferred Replica Imbalance|Kafka Leader Imbalance",
                "has {n} partitions off their preferred leader",
                "{n} imbalanced",
                _n("n", 1, 40, 1),
                scope="cluster",
            )
        ],
    },
    "nats": {
        "critical": [
            _s(
                "NATS JetStream Stream Offline|JetStream Stream Unavailable",
                "has no available replica for stream {topic}: publishes fail",
                "stream offline",
                scope="cluster",
            )
        ],
        "error": [
            _s(
                "NATS JetStream Storage High",
                "has JetStream storage {pct}% used",
                "{pct}%",
                _pcts(90, 97, 90),
            )
        ],
        "warning": [
            _s(
                "NATS Slow Consumers|Nats Slow Consumer Detected",
                "reports {n} slow consumers",
                "{n} slow consumers",
                _n("n", 1, 15, 1),
            )
        ],
    },
    "pulsar": {
        "critical": [
            _s(
                "Pulsar Bookies Not Writable|Pulsar Write Failures",
                "has fewer writable bookies than the ensemble needs: publishes fail",
                "not writable",
                scope="cluster",
            )
        ],
        "error": [
            _s(
                "Pulsar Bookie Read Only|BookKeeper Under Replicated Ledgers",
                "has bookie {host} read-only; {n} ledgers are under-replicated",
                "{n} ledgers",
                _n("n", 5, 200, 1),
            )
        ],
        "warning": [
            _s(
                "Pulsar Topic Backlog High|Pulsar Storage Backlog",
                "has a backlog of {n}000 messages on topic {topic}",
                "{n}k",
                _n("n", 50, 900, 50),
            )
        ],
    },
    "activemq": {
        "critical": [
            _s(
                "ActiveMQ Producer Flow Control|ActiveMQ Producers Blocked|ActiveMQ Memory Limit Reached",
                "reached its memory limit: producer flow control blocks all producers",
                "producers blocked",
                _const(num=100, thr=100),
            )
        ],
        "error": [
            _s(
                "ActiveMQ Store Usage High",
                "has store usage at {pct}% of the limit",
                "{pct}%",
                _pcts(90, 97, 90),
            )
        ],
        "warning": [
            _s(
                "ActiveMQ Memory Usage High|Activemq Broker Memory High",
                "uses {pct}% of its broker memory",
                "{pct}%",
                _pcts(75, 88, 75),
            )
        ],
    },
    "zookeeper": {
        "error": [
            _s(
                "Zookeeper Synced Followers Low|ZooKeeper Followers Out Of Sync",
                "has {up} of {total} followers in sync",
                "{up}/{total} synced",
                _of(lambda t: 1, (2, 4)),
                scope="cluster",
            )
        ],
        "warning": [
            _s(
                "Zookeeper Outstanding Requests|ZooKeeper Too Many Outstanding Requests",
                "has {n} outstanding requests",
                "{n}",
                _n("n", 15, 60, 10),
            )
        ],
    },
    "keycloak": {
        "critical": [
            _s(
                "Keycloak Login Error Rate High|Login Errors High|Keycloak Logins Failing",
                (
                    "fails {pct}% of logins with HTTP 500: users cannot sign in|"
                    "has a login error rate of {pct}%"
                ),
                "{pct}%",
                _pcts(20, 90, 10),
            )
        ],
        "error": [
            _s(
                "Keycloak Login Error Rate|Login Error Rate High",
                "fails {pct}% of logins with server errors",
                "{pct}%",
                _pcts(2, 5, 2),
            )
        ],
        "warning": [
            _s(
                "Keycloak Login Failures High|Keycloak Failed Logins",
                "saw {n}0 failed user logins in 5m (invalid credentials)",
                "{n}0 failed",
                _n("n", 5, 40, 5),
            )
        ],
        "info": [
            _s(
                "Keycloak Brute Force Lockouts",
                "temporarily locked {n} accounts (brute-force detection)",
                "{n} locked",
                _n("n", 1, 6, 1),
            )
        ],
    },
    "litellm": {
        "critical": [
            _s(
                "LLM Gateway Unavailable|LLM API Errors High|All LLM Providers Failing",
                "fails {pct}% of chat requests with 5xx: every provider errors",
                "{pct}%",
                _pcts(40, 100, 10),
            )
        ],
        "error": [
            _s(
                "LLM Gateway Provider Errors|LLM Upstream Errors",
                "sees {provider} fail {pct}% of calls; the fallback model serves",
                "{pct}%",
                lambda rng, f: {
                    **_pcts(10, 30, 10)(rng, f),
                    "provider": rng.choice(["openai", "anthropic", "vertex_ai", "azure"]),
                },
            )
        ],
        "warning": [
            _s(
                "LLM Gateway Rate Limited|LLM API Rate Limit Hit",
                "gets HTTP 429 for {pct}% of requests",
                "{pct}%",
                _pcts(1, 5, 1),
            )
        ],
        "info": [
            _s(
                "LLM Token Budget|LLM Spend Budget",
                "has used {pct}% of the monthly token budget",
                "{pct}%",
                _pcts(60, 75, 60),
            )
        ],
    },
}

RUNTIMES: StateTable = {
    "phpfpm": {
        "critical": [
            _s(
                "PHP-FPM No Idle Workers|Php Fpm Pool Exhausted|PHP-FPM Listen Queue Full",
                "has no idle workers and a full listen queue (pool www): nginx returns 502",
                "0 idle",
                _const(num=0, thr=1),
            )
        ],
        "error": [
            _s(
                "PHP-FPM Listen Queue|Php Fpm Pool Saturated",
                "has {n} requests waiting in the listen queue (pool www)",
                "{n} queued",
                _n("n", 20, 120, 10),
            )
        ],
        "warning": [
            _s(
                "PHP-FPM Max Children Reached|Php Fpm Max Children",
                "reached pm.max_children {n} times in 5m (pool www)",
                "{n} times",
                _n("n", 1, 6, 1),
            )
        ],
    },
    "nodejs": {
        "critical": [
            _s(
                "Node.js Event Loop Blocked|NodeJS Eventloop Blocked",
                "has its event loop blocked for {n}s: health checks time out",
                "{n}s",
                _n("n", 5, 30, 2),
            )
        ],
        "error": [
            _s(
                "Node.js Event Loop Lag|NodeJS Eventloop Lag High",
                "has an event loop lag of {n}00ms; requests queue",
                "{n}00ms",
                _n("n", 6, 15, 5),
            )
        ],
        "warning": [
            _s(
                "Node.js Event Loop Lag|NodeJS Eventloop Lag High",
                "has an event loop lag of {n}0ms",
                "{n}0ms",
                _n("n", 12, 30, 10),
            )
        ],
    },
    "jvm": {
        "critical": [
            _s(
                "JVM Out Of Memory|Java OutOfMemoryError",
                "throws java.lang.OutOfMemoryError: Java heap space; requests fail",
                "OOM",
                _n("n", 1, 30, 0),
            )
        ],
        "error": [
            _s(
                "JVM GC Overhead High|JVM GC Time High",
                "spends {pct}% of its time in GC",
                "{pct}%",
                _pcts(30, 50, 30),
            )
        ],
        "warning": [
            _s(
                "JVM GC Time High|Java GC Overhead",
                "spends {pct}% of its time in GC",
                "{pct}%",
                _pcts(10, 20, 10),
            )
        ],
        "info": [
            _s(
                "JVM Old Gen Growing|JVM Heap Growing",
                "grew its old gen {pct}% in 6h",
                "+{pct}%",
                _pcts(10, 25, 10),
            )
        ],
    },
    "goapp": {
        "error": [
            _s(
                "Go Goroutine Leak|Goroutines Leaking",
                "runs {n}k goroutines and climbing: a leak",
                "{n}k",
                _n("n", 100, 400, 50),
            )
        ],
        "warning": [
            _s(
                "Go Goroutines High|Golang Goroutines High",
                "runs {n}k goroutines",
                "{n}k",
                _n("n", 15, 40, 10),
            )
        ],
        "info": [
            _s(
                "Go Goroutines High|Golang Goroutines",
                "runs {n}k goroutines, up from 1k",
                "{n}k",
                _n("n", 3, 8, 2),
            )
        ],
    },
    "gunicorn": {
        "critical": [
            _s(
                "Gunicorn No Workers|Gunicorn Master Down|uWSGI No Workers",
                "has no worker alive: every request fails with 502",
                "0 workers",
                _const(num=0, thr=1),
            )
        ],
        "error": [
            _s(
                "Gunicorn Workers Busy|uWSGI Listen Queue Full",
                "has all {n} workers busy and a growing listen queue",
                "{n} busy",
                _n("n", 4, 32, 4),
            )
        ],
        "warning": [
            _s(
                "Gunicorn Worker Timeout|Gunicorn Workers Timing Out",
                "killed {n} timed-out workers in 10m",
                "{n} timeouts",
                _n("n", 2, 6, 1),
            )
        ],
    },
    "celery": {
        "critical": [
            _s(
                "Celery Workers Offline|Celery No Workers|Celery Worker Down",
                "has 0 workers online for queue {queue}",
                "0 workers",
                _const(num=0, thr=1),
                scope="cluster",
            )
        ],
        "error": [
            _s(
                "Celery Task Failure Rate|Celery Tasks Failing",
                "fails {pct}% of tasks",
                "{pct}%",
                _pcts(15, 30, 15),
            )
        ],
        "warning": [
            _s(
                "Celery Task Failure Rate|Celery Tasks Failing",
                "fails {pct}% of tasks",
                "{pct}%",
                _pcts(3, 8, 3),
            )
        ],
        "info": [
            _s(
                "Celery Task Retries",
                "retried {n} tasks in 1h; all succeeded",
                "{n} retries",
                _n("n", 3, 40, 1),
            )
        ],
    },
    "sidekiq": {
        "critical": [
            _s(
                "Sidekiq No Processes|Sidekiq Workers Down",
                "has no running processes: jobs are not processed",
                "0 processes",
                _const(num=0, thr=1),
                scope="cluster",
            )
        ],
        "error": [
            _s(
                "Sidekiq Dead Set Growing",
                "moved {n} jobs to the dead set in 1h",
                "{n} dead",
                _n("n", 50, 400, 20),
            )
        ],
        "warning": [
            _s(
                "Sidekiq Retries High|Sidekiq Dead Jobs Growing",
                "has {n} jobs in the retry set",
                "{n} retries",
                _n("n", 100, 900, 100),
            )
        ],
    },
}
