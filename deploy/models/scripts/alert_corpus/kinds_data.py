"""The magnitude kinds about databases, caches and queues."""

from __future__ import annotations

from .common import _count, _pct, _rate, _secs
from .kinds import ETA, Kind, _down_facts, _fixed, _pick, scale
from .subjects import ENGINES

DATA_KINDS: list[Kind] = [
    # -- databases --------------------------------------------------------------------------------
    Kind(
        "db_down",
        "db",
        ("database",),
        (
            "{Engine} Down",
            "{Engine} Instance Down",
            "{Engine} Unreachable",
            "{Engine} Not Responding",
            "Database Down",
        ),
        {"error": 0.4, "critical": 0.6},
        _fixed(
            {
                "error": lambda rng, f: {
                    "value": "down",
                    "num": 0,
                    "thr": 1,
                    "member": rng.choice(["replica", "standby", "secondary", "read replica"]),
                    "state": rng.choice(
                        [
                            "the primary is healthy",
                            "2 of 3 members are up",
                            "reads fail over to the other replicas",
                        ]
                    ),
                },
                "critical": lambda rng, f: {
                    "value": "down",
                    "num": 0,
                    "thr": 1,
                    "member": rng.choice(["primary", "master", "leader", "only node"]),
                    "state": rng.choice(
                        ["writes are failing", "every application query fails", "no replica can take over"]
                    ),
                },
            }
        ),
        (
            "{Engine} {member} on {instance} is down",
            "{Engine} {member} {host} is not responding",
            "{Engine} {member} {host} down: {state}",
            "{host} ({member}) unreachable for {dur}",
            "{Engine} {member} {instance} down",
        ),
        ("The {member} has not answered for {dur}; {state}.", "{State}.", "{engine}_up is 0 for {instance}."),
        "{engine}_up",
        engines=tuple(ENGINES),
    ),
    Kind(
        "replication_lag",
        "db",
        ("database",),
        (
            "{Engine} Replication Lag",
            "Replica Lagging",
            "{Engine} Replica Behind",
            "Replication Delay High",
            "{Engine} Replica Lag",
        ),
        {"info": 0.1, "warning": 0.35, "error": 0.3, "critical": 0.25},
        scale(
            {"info": (1, 12), "warning": (12, 100), "error": (100, 800), "critical": (800, 7200)},
            _secs,
            _pick(
                {
                    "info": ["No action needed."],
                    "warning": ["Reads may be slightly stale."],
                    "error": ["Replica reads are minutes stale."],
                    "critical": [
                        "A failover now would lose writes.",
                        "Reports read data over 15 minutes old.",
                        "The replica may need a rebuild.",
                    ],
                }
            ),
        ),
        (
            "Replication lag on {instance} is {value}",
            "{host} is {value} behind the primary",
            "{Engine} replica {host} lagging {value}",
            "Replica {host} lag {value}",
        ),
        ("Lag has been growing for {dur}. {note}", "{note}", "The replica is {value} behind."),
        "{engine}_replication_lag_seconds",
        engines=("postgres", "postgres", "mysql", "mongodb", "redis", "clickhouse"),
        numeric=True,
    ),
    Kind(
        "db_connections",
        "db",
        ("database",),
        (
            "{Engine} Too Many Connections",
            "Connection Pool Exhausted",
            "{Engine} Connections Near Limit",
            "PgBouncer Pool Saturated",
            "Max Connections Reached",
        ),
        {"warning": 0.4, "error": 0.3, "critical": 0.3},
        scale(
            {"warning": (75, 88), "error": (88, 98), "critical": (98, 100)},
            _pct,
            lambda rng, level, v, f: {
                "max": (m := rng.choice([100, 200, 500, 1000])),
                "used": max(1, round(m * v / 100)),
                "note": "New connections are refused." if level == "critical" else "",
            },
        ),
        (
            "{Engine} on {instance} uses {value} of max_connections",
            "{used}/{max} connections on {host}",
            "Connection pool on {host} at {value}",
            "{host}: {used} of {max} connections in use",
        ),
        (
            "{note} {used} of {max} connections are in use.",
            "Connections have been above {threshold} for {dur}. {note}",
        ),
        "{engine}_connections_used_percent",
        engines=("postgres", "postgres", "mysql", "mongodb"),
        numeric=True,
    ),
    Kind(
        "deadlocks",
        "db",
        ("database",),
        ("{Engine} Deadlocks", "Deadlocks Detected", "Lock Contention High", "{Engine} Lock Waits"),
        {"info": 0.25, "warning": 0.45, "error": 0.3},
        scale({"info": (0.05, 1), "warning": (1, 10), "error": (10, 80)}, _rate),
        (
            "{value} deadlocks on {host}",
            "Deadlocks on {Engine} {instance}: {value}",
            "{host} deadlock rate {value}",
        ),
        ("Transactions are being rolled back at {value}.", "Lock waits on {host}: deadlocks at {value}."),
        "{engine}_deadlocks_per_minute",
        engines=("postgres", "mysql"),
        numeric=True,
    ),
    Kind(
        "backup_failed",
        "db",
        ("database",),
        (
            "{Engine} Backup Failed",
            "Database Backup Failed",
            "Backup Too Old",
            "Last Backup Stale",
            "Snapshot Failed",
        ),
        {"warning": 0.4, "error": 0.4, "critical": 0.2},
        scale(
            {"warning": (24, 36), "error": (36, 168), "critical": (168, 720)},
            lambda rng, v: f"{round(v)}h" if v < 72 or rng.random() < 0.4 else f"{round(v / 24)} days",
            _pick(
                {
                    "warning": ["Last night's run failed."],
                    "error": ["Several runs in a row failed."],
                    "critical": [
                        "WAL archiving is failing too: no point-in-time recovery.",
                        "There is no restorable backup of this week's data.",
                    ],
                }
            ),
        ),
        (
            "Last successful backup of {host} was {value} ago",
            "{Engine} backup of {db} failed; last good backup {value} ago",
            "No backup of {host} for {value}",
            "Backup age on {host}: {value}",
        ),
        ("{note}", "The backup job exited with an error. {note}"),
        "backup_last_success_age_hours",
        engines=("postgres", "postgres", "mysql", "mongodb", "elasticsearch", "clickhouse"),
        numeric=True,
    ),
    Kind(
        "wal_disk",
        "db",
        ("database",),
        (
            "{Engine} WAL Disk Filling",
            "WAL Volume Full",
            "Binlog Disk Full",
            "WAL Directory Growing",
            "Archive Lag Fills WAL Disk",
        ),
        {"warning": 0.35, "error": 0.3, "critical": 0.35},
        scale(
            {"warning": (75, 88), "error": (88, 95), "critical": (95, 100)},
            _pct,
            lambda rng, level, v, f: {
                "dir": "pg_wal" if f["engine"] == "postgres" else "binlog",
                "eta": rng.choice(ETA[level]),
            },
        ),
        (
            "{dir} volume on {host} is {value} full",
            "{dir} on {host} at {value} ({eta} until full)",
            "{Engine} {dir} partition on {host} {value} used",
        ),
        (
            "WAL is not being archived fast enough; full in {eta}.",
            "When {dir} fills the database stops accepting writes.",
        ),
        "node_filesystem_avail_bytes",
        engines=("postgres", "postgres", "mysql"),
        numeric=True,
    ),
    Kind(
        "slow_queries",
        "db",
        ("database",),
        ("{Engine} Slow Queries", "Long Running Query", "Query Latency High", "Slow Query Spike"),
        {"info": 0.25, "warning": 0.4, "error": 0.2, "critical": 0.15},
        scale(
            {"info": (0.3, 1.5), "warning": (1.5, 8), "error": (8, 60), "critical": (60, 600)},
            _secs,
            _pick(
                {
                    "info": ["A few reporting queries."],
                    "warning": ["One long transaction."],
                    "error": ["{n} sessions waiting on locks.".replace("{n}", "40")],
                    "critical": [
                        "Writes are blocked behind a lock; 300 sessions waiting.",
                        "Application requests time out waiting for the database.",
                    ],
                }
            ),
        ),
        (
            "p99 query time on {host} is {value}",
            "Queries on {Engine} {instance} take {value} at p99",
            "Slow queries on {host}: {value}",
            "{host} longest running query {value}",
        ),
        ("{note}", "Query latency has been high for {dur}. {note}"),
        "{engine}_query_duration_p99_seconds",
        engines=("postgres", "mysql", "mongodb", "clickhouse", "elasticsearch"),
        numeric=True,
    ),
    Kind(
        "split_brain",
        "db",
        ("database",),
        {
            "critical": (
                "{Engine} Split Brain",
                "Multiple Primaries",
                "Two Leaders Elected",
                "Cluster Partitioned",
            ),
            "warning": ("{Engine} Failover Happened", "Leader Changed", "Primary Switched"),
        },
        {"critical": 0.8, "warning": 0.2},
        _fixed(
            {
                "critical": lambda rng, f: {
                    "value": "2 primaries",
                    "num": 2,
                    "thr": 1,
                    "state": rng.choice(["both accept writes", "data is diverging"]),
                },
                "warning": lambda rng, f: {
                    "value": "failover completed",
                    "num": 1,
                    "thr": 1,
                    "state": rng.choice(["the new primary is healthy", "replicas follow the new leader"]),
                },
            }
        ),
        ("{Engine} cluster of {host}: {value}, {state}", "{host}: {value}", "{Engine} {value} in {cluster}"),
        ("{State}.", "Patroni reports {value}; {state}."),
        "{engine}_primaries",
        engines=("postgres", "mysql", "mongodb", "elasticsearch"),
    ),
    Kind(
        "search_health",
        "db",
        ("database",),
        {
            "critical": ("{Engine} Cluster Red", "{Engine} Cluster Health Red", "Primary Shards Unassigned"),
            "error": ("{Engine} Cluster Yellow", "{Engine} Node Left", "Unassigned Shards"),
            "warning": ("{Engine} Cluster Yellow", "Replica Shards Unassigned", "Unassigned Shards"),
        },
        {"warning": 0.45, "error": 0.2, "critical": 0.35},
        _fixed(
            {
                "warning": lambda rng, f: {
                    "value": "yellow",
                    "shards": rng.randint(1, 8),
                    "kind_": "replica",
                    "num": 1,
                    "thr": 1,
                    "dur": "10m",
                },
                "error": lambda rng, f: {
                    "value": "yellow",
                    "shards": rng.randint(20, 90),
                    "kind_": "replica",
                    "num": 1,
                    "thr": 1,
                    "dur": "2h",
                },
                "critical": lambda rng, f: {
                    "value": "red",
                    "shards": rng.randint(1, 30),
                    "kind_": "primary",
                    "num": 2,
                    "thr": 2,
                    "dur": "5m",
                },
            }
        ),
        (
            "{Engine} cluster status is {value}",
            "{shards} {kind_} shards unassigned on {host}",
            "Cluster health {value} for {dur}",
        ),
        (
            "{shards} {kind_} shards are unassigned.",
            "Status {value}: {shards} {kind_} shards without a node.",
        ),
        "elasticsearch_cluster_health_status",
        engines=("elasticsearch",),
    ),
    Kind(
        "redis_memory",
        "db",
        ("database",),
        ("Redis Memory High", "Redis Maxmemory Near", "Redis Used Memory"),
        {"warning": 0.4, "error": 0.35, "critical": 0.25},
        scale(
            {"warning": (80, 90), "error": (90, 97), "critical": (97, 100)},
            _pct,
            _pick(
                {
                    "warning": ["No keys evicted yet."],
                    "error": ["Keys will be evicted soon."],
                    "critical": ["Writes fail with OOM command not allowed."],
                }
            ),
        ),
        (
            "Redis {host} uses {value} of maxmemory",
            "{host} memory {value} of maxmemory",
            "Redis datastore {host} at {value} memory",
        ),
        ("{note}",),
        "redis_memory_used_bytes",
        engines=("redis",),
        numeric=True,
    ),
    Kind(
        "db_readonly",
        "db",
        ("database",),
        {
            "error": ("{Engine} Replica Readonly", "{Engine} Replica Read Only", "Replica In Read Only Mode"),
            "critical": ("{Engine} Read Only", "{Engine} Primary Readonly", "Database In Read Only Mode"),
        },
        {"error": 0.5, "critical": 0.5},
        _fixed(
            {
                "error": lambda rng, f: {
                    "value": "replica read-only",
                    "num": 1,
                    "thr": 1,
                    "state": "replication to it stopped; the others take writes",
                },
                "critical": lambda rng, f: {
                    "value": "primary read-only",
                    "num": 1,
                    "thr": 1,
                    "state": "all writes are rejected",
                },
            }
        ),
        ("{Engine} on {host} went read-only", "{host}: {value}", "{Engine} {instance} {value}: {state}"),
        ("{State}.",),
        "{engine}_read_only",
        engines=("clickhouse", "mysql", "postgres"),
    ),
    # -- caches (data stores: the database team's) and queues ------------------------------------------
    Kind(
        "cache_hit_rate",
        "service",
        ("database",),
        (
            "Cache Hit Rate Low",
            "Memcached Hit Ratio Low",
            "Redis Cache Evictions",
            "Cache Miss Storm",
            "Session Cache Evicting",
        ),
        {"info": 0.25, "warning": 0.4, "error": 0.35},
        scale(
            {"info": (85, 92), "warning": (65, 85), "error": (20, 65)},
            _pct,
            lambda rng, level, v, f: {
                "cache": rng.choice(
                    [f"memcached-{f['service']}", f"{f['service']}-cache", "redis-cache", "session-cache"]
                )
            },
        ),
        (
            "Cache hit rate of {cache} is {value}",
            "{service}: {cache} hit ratio {value}",
            "{cache} hit rate dropped to {value}",
        ),
        ("Requests from {service} fall through to the database.", "Hit ratio below {threshold} for {dur}."),
        "memcached_commands_total",
        numeric=True,
    ),
    Kind(
        "cache_down",
        "service",
        ("database",),
        ("Memcached Down", "Cache Node Down", "Redis Cache Unreachable"),
        {"warning": 0.35, "error": 0.35, "critical": 0.3},
        _fixed({lv: _down_facts(lv) for lv in ("warning", "error", "critical")}),
        (
            "{down} of {total} cache nodes for {service} down",
            "Cache for {service}: {value}",
            "{service} cache nodes {value}",
        ),
        ("{service} falls back to the database for missing keys.",),
        "memcached_up",
    ),
    Kind(
        "kafka_lag",
        "queue",
        ("application",),
        ("Kafka Consumer Lag", "Consumer Group Lagging", "Kafka Lag High", "Topic Consumer Behind"),
        {"info": 0.1, "warning": 0.35, "error": 0.3, "critical": 0.25},
        scale(
            {"info": (2, 15), "warning": (15, 150), "error": (150, 800), "critical": (800, 7200)},
            _secs,
            lambda rng, level, v, f: {
                "msgs": _count(rng, v * rng.choice([20, 50, 200, 1000])),
                "note": rng.choice(
                    {
                        "info": ["Catching up."],
                        "warning": ["Consumers keep up slowly."],
                        "error": ["Processing is minutes behind."],
                        "critical": [
                            "Orders are not being shipped.",
                            "Payments are not confirmed to customers.",
                            "Customers see stale order status.",
                        ],
                    }[level]
                ),
            },
        ),
        (
            "Consumer group {group} is {value} behind on {topic}",
            "{group} lag on {topic}: {msgs} messages (~{value})",
            "Kafka lag {value} for {group}",
            "{topic} consumer lag {msgs} messages",
        ),
        ("{note}", "Lag has grown for {dur}. {note}"),
        "kafka_consumergroup_lag_seconds",
        numeric=True,
    ),
    Kind(
        "queue_backlog",
        "queue",
        ("application",),
        (
            "RabbitMQ Queue Backlog",
            "Queue Messages Piling Up",
            "Rabbit Queue Too Long",
            "Queue Depth High",
            "Messages Ready High",
        ),
        {"info": 0.1, "warning": 0.35, "error": 0.3, "critical": 0.25},
        scale(
            {
                "info": (200, 2000),
                "warning": (2000, 15000),
                "error": (15000, 150000),
                "critical": (150000, 2000000),
            },
            _count,
            _pick(
                {
                    "info": ["Consumers are draining it."],
                    "warning": ["Consumers are slower than producers."],
                    "error": ["The backlog grows faster than it drains."],
                    "critical": [
                        "No consumers are attached; shipments are stopped.",
                        "The queue has no consumers.",
                        "Producers are being blocked.",
                    ],
                }
            ),
        ),
        (
            "Queue {queue} has {value} messages",
            "{value} messages ready in {queue}",
            "Backlog on {queue}: {value} messages",
        ),
        ("{note}", "{queue} has grown for {dur}. {note}"),
        "rabbitmq_queue_messages_ready",
        numeric=True,
    ),
    Kind(
        "queue_age",
        "queue",
        ("application",),
        (
            "SQS Oldest Message Age",
            "Pub/Sub Unacked Messages Old",
            "JetStream Consumer Pending",
            "NATS Slow Consumer",
            "Queue Age High",
        ),
        {"warning": 0.4, "error": 0.35, "critical": 0.25},
        scale(
            {"warning": (60, 300), "error": (300, 1800), "critical": (1800, 21600)},
            _secs,
            _pick(
                {
                    "warning": [""],
                    "error": ["Work is piling up."],
                    "critical": ["Customer-facing work is stuck.", "Emails to customers are hours late."],
                }
            ),
        ),
        (
            "Oldest message in {queue} is {value} old",
            "{group} on {queue}: oldest unacked {value}",
            "{queue} message age {value}",
        ),
        ("{note}", "Consumers of {queue} stopped acknowledging. {note}"),
        "aws_sqs_approximate_age_of_oldest_message",
        numeric=True,
    ),
    Kind(
        "broker_down",
        "queue",
        ("application",),
        {
            "warning": ("Kafka Under Replicated Partitions", "Broker Replicas Out Of Sync"),
            "error": ("Kafka Broker Down", "RabbitMQ Node Down", "NATS Server Down"),
            "critical": ("Kafka Offline Partitions", "RabbitMQ Cluster Down", "Message Broker Unavailable"),
        },
        {"warning": 0.3, "error": 0.4, "critical": 0.3},
        _fixed(
            {
                "warning": lambda rng, f: {
                    "value": f"{(n := rng.randint(2, 20))} under-replicated partitions",
                    "num": n,
                    "thr": 1,
                },
                "error": lambda rng, f: {
                    "value": f"1 of {(t := rng.choice([3, 5]))} brokers down",
                    "num": t - 1,
                    "thr": t,
                },
                "critical": lambda rng, f: {
                    "value": f"{(n := rng.randint(3, 40))} partitions offline, producers failing",
                    "num": n,
                    "thr": 1,
                },
            }
        ),
        ("{value} on the {topic} cluster", "Broker cluster: {value}", "{value}"),
        ("Topic {topic} is affected.",),
        "kafka_server_replicamanager_underreplicatedpartitions",
    ),
]
