"""States: down, quorum, replication, crash-looping."""

from __future__ import annotations

from .states import CRASH_ERRS, WHY_RESTART, StateTable, _const, _n, _of, _s

DOWN: StateTable = {
    "*": {
        "critical": [
            _s(
                (
                    "{Tech} Down|{Tech} Instance Down|{Tech} Is Down|{Tech} Not Up|{Tech} Unreachable|"
                    "{Tech} {Unit} Down|{Tech} Server Down"
                ),
                (
                    "is down|is down and not serving|is not reachable|is not responding|"
                    "has been down for {dur}|stopped answering the exporter"
                ),
                "down",
                notes=(
                    "{m}_up == 0 for {dur}.|The exporter cannot connect to {Tech} on {instance}.|"
                    "Connection refused on port {port}.|"
                ),
                metric="{m}_up",
            ),
            _s(
                "{Tech} Not Live|{Tech} Server Not Live|{Tech} Health Check Failed|{Tech} Unhealthy",
                (
                    "is not live: the health endpoint returns 503|fails its liveness check|"
                    "reports status unavailable|has a health endpoint that does not answer"
                ),
                "not live",
                metric="{m}_up",
            ),
            _s(
                "{Tech} Cluster Down|{Tech} All {Unit}s Down|{Tech} Down|{Tech} Unavailable",
                (
                    "has 0 of {total} {units} up|has all {total} {units} down|"
                    "is unavailable: no {unit} answers"
                ),
                "0/{total} up",
                _of(lambda t: t, (2, 3, 3, 5)),
                scope="cluster",
                metric="up",
            ),
        ],
        "error": [
            _s(
                "{Tech} {Unit}s Down|{Tech} Cluster Degraded|{Tech} {Unit} Down|{Tech} Members Down",
                (
                    "has {down} of {total} {units} down; no redundancy left|"
                    "is running on {up} of {total} {units}; one more failure takes it down|"
                    "lost {down} of {total} {units}; {up} still serving"
                ),
                "{up}/{total} up",
                _of(lambda t: t - 1 if t == 2 else t // 2, (2, 3, 4, 5)),
                scope="cluster",
                metric="up",
            ),
        ],
        "warning": [
            _s(
                (
                    "{Tech} {Unit} Down|{Tech} Cluster Degraded|{Tech} Missing {Unit}|{Tech} {Unit}s Down|"
                    "{Tech} Down"
                ),
                (
                    "has 1 of {total} {units} down; the cluster keeps serving|"
                    "lost one {unit} ({host}); {up} of {total} remain|is running on {up} of {total} {units}"
                ),
                "{up}/{total} up",
                _of(lambda t: 1, (4, 5, 6, 8)),
                scope="cluster",
                metric="up",
            ),
        ],
    },
}

QUORUM: StateTable = {
    "*": {
        "critical": [
            _s(
                "{Tech} No Leader|{Tech} Has No Leader|{Tech} Leader Missing|{Tech} Quorum Lost",
                (
                    "has no leader|has no leader for {dur}|lost quorum: {up} of {total} {units} reachable|"
                    "cannot elect a leader"
                ),
                "no leader",
                _of(lambda t: t // 2 + 1, (3, 5), flag=True),
                scope="cluster",
                notes=("Writes are refused until a leader is elected.|Proposals fail; clients get errors.|"),
                metric="{m}_server_has_leader",
            ),
            _s(
                "{Tech} Split Brain|{Tech} Cluster Partitioned|{Tech} Network Partition",
                (
                    "has a split brain: two {units} act as leader|"
                    "is partitioned: {units} disagree on membership|"
                    "reports a network partition between {host} and the rest of the cluster"
                ),
                "split brain",
                _const(num=2, thr=1),
                scope="cluster",
                notes="Both sides accept writes; data diverges.|",
            ),
            _s(
                "{Tech} Cluster Flapping|{Tech} Flapping|{Tech} Membership Flapping",
                (
                    "is flapping: {n} membership changes in 10m|"
                    "keeps losing and re-electing its leader ({n} elections in 15m)|"
                    "is flapping: {units} keep joining and leaving ({n} changes in 10m)"
                ),
                "flapping",
                _n("n", 8, 40, 5),
                scope="cluster",
                notes="Requests fail while the cluster reconfigures.|",
            ),
        ],
        "error": [
            _s(
                (
                    "{Tech} Leader Changes|{Tech} Frequent Leader Elections|"
                    "{Tech} High Number Of Leader Changes"
                ),
                (
                    "had {n} leader changes in the last hour; writes stall during each|"
                    "leader changed {n} times in 1h"
                ),
                "{n} leader changes in 1h",
                _n("n", 8, 20, 5),
                scope="cluster",
            ),
            _s(
                "{Tech} Quorum At Risk|{Tech} Members Down|{Tech} Cluster Degraded",
                (
                    "has {up} of {total} {units} up: quorum holds with no margin|"
                    "is one {unit} away from losing quorum ({up}/{total} up)"
                ),
                "{up}/{total} up",
                _of(lambda t: t // 2, (3, 5)),
                scope="cluster",
                metric="up",
            ),
        ],
        "warning": [
            _s(
                (
                    "{Tech} Leader Changed|{Tech} Leader Changes|{Tech} Frequent Leader Elections|"
                    "{Tech} New Leader Elected"
                ),
                (
                    "had {n} leader changes in 1h|had {n} leader changes in the last hour|"
                    "elected a new leader ({host}); the cluster is healthy"
                ),
                "{n} leader changes in 1h",
                _n("n", 2, 4, 2),
                scope="cluster",
            ),
            _s(
                "{Tech} {Unit} Flapping|{Tech} Member Flapping|{Tech} Flapping",
                "has {unit} {host} flapping ({n} times in 1h); the cluster is stable",
                "{n} flaps in 1h",
                _n("n", 2, 5, 2),
                scope="cluster",
            ),
        ],
    },
    "etcd": {
        "critical": [
            _s(
                (
                    "Etcd No Leader|Etcd Members Without Leader|Etcd Insufficient Members|"
                    "Etcd Cluster Unavailable"
                ),
                (
                    "member {instance} has no leader|"
                    "has insufficient members: {up} of {total} up, quorum lost|"
                    "has no leader; kube-apiserver requests fail"
                ),
                "no leader",
                _of(lambda t: t // 2 + 1, (3, 5), flag=True),
                scope="cluster",
                metric="etcd_server_has_leader",
            ),
        ],
    },
    "patroni": {
        "critical": [
            _s(
                "Patroni Has No Leader|Patroni Cluster Unlocked|Patroni No Primary",
                (
                    "has no leader|has no primary: the leader key expired|"
                    "is unlocked: no member holds the leader lock"
                ),
                "no leader",
                scope="cluster",
                metric="patroni_cluster_unlocked",
            ),
        ],
    },
    "consul": {
        "critical": [
            _s(
                "Consul No Leader|Consul Raft Leader Lost|Consul Autopilot Unhealthy",
                "has no raft leader|lost its raft leader: the catalog is read-only",
                "no leader",
                scope="cluster",
                metric="consul_raft_leader",
            ),
        ],
    },
    "zookeeper": {
        "critical": [
            _s(
                "Zookeeper Not Ok|Zookeeper No Leader|ZooKeeper Quorum Lost",
                (
                    "has no leader in the ensemble|answers `ruok` with nothing: not serving|"
                    "lost quorum ({up}/{total} up)"
                ),
                "not ok",
                _of(lambda t: t // 2 + 1, (3, 5), flag=True),
                scope="cluster",
                notes="Kafka brokers lose their sessions.|",
            ),
        ],
    },
    "kafka": {
        "critical": [
            _s(
                (
                    "Kafka Offline Partitions|Kafka Partitions Without Leader|Kafka No Active Controller|"
                    "Kafka Topic Offline"
                ),
                (
                    "has {n} offline partitions with no leader|has no active controller|"
                    "has {n} partitions without a leader on topic {topic}"
                ),
                "{n} offline partitions",
                _n("n", 1, 40, 1),
                scope="cluster",
                notes="Producers to those partitions fail.|",
                metric="kafka_controller_kafkacontroller_offlinepartitionscount",
            ),
        ],
    },
    "elasticsearch": {
        "critical": [
            _s(
                "{Tech} No Master|{Tech} Master Not Discovered|{Tech} Cluster Has No Master",
                "has no elected master|master not discovered yet; the cluster rejects requests",
                "no master",
                scope="cluster",
            ),
        ],
    },
    "mongodb": {
        "critical": [
            _s(
                "MongoDB Replica Set No Primary|Mongodb No Primary|MongoDB Primary Missing",
                "has no primary in replica set rs0|has no primary: writes fail",
                "no primary",
                scope="cluster",
            ),
        ],
    },
    "rabbitmq": {
        "critical": [
            _s(
                "RabbitMQ Cluster Partition|RabbitMQ Network Partition|Rabbitmq Partition Detected",
                (
                    "has a network partition: nodes disagree on the cluster|"
                    "detected a partition between {host} and its peers"
                ),
                "partitioned",
                _const(num=1, thr=0),
                scope="cluster",
            ),
        ],
    },
    "nats": {
        "critical": [
            _s(
                "NATS JetStream No Meta Leader|JetStream Meta Leader Lost|NATS Cluster No Leader",
                (
                    "has no JetStream meta leader|"
                    "has no JetStream meta leader: streams cannot be created or updated"
                ),
                "no meta leader",
                scope="cluster",
            ),
        ],
    },
    "mariadb": {
        "critical": [
            _s(
                "Galera Cluster Not Primary|MySQL Galera Split Brain|Galera Node Not Primary",
                (
                    "has node {host} in a non-Primary component|"
                    "reports wsrep_cluster_status non-Primary on {host}"
                ),
                "non-Primary",
                scope="cluster",
                metric="mysql_galera_status_info",
            ),
        ],
    },
    "redis": {
        "critical": [
            _s(
                "Redis Cluster State Fail|Redis Missing Master|Redis Sentinel Master Down",
                "reports cluster_state:fail|has no master: sentinel cannot fail over",
                "no master",
                scope="cluster",
            ),
        ],
    },
    "clickhouse": {
        "critical": [
            _s(
                (
                    "ClickHouse Keeper No Leader|ClickHouse Zookeeper Session Expired|"
                    "ClickHouse Keeper Unavailable"
                ),
                "lost its Keeper session: replicated tables are read-only|has no Keeper leader",
                "no leader",
                scope="cluster",
            ),
        ],
    },
    "solr": {
        "critical": [
            _s(
                "Solr Shard No Leader|Solr Collection Down|Solr Shard Leader Missing",
                (
                    "has no leader for shard{n} of collection {pool}|"
                    "has collection {pool} down: shard{n} has no active replica"
                ),
                "no leader",
                lambda rng, f: {"n": rng.randint(1, 8), "num": 0, "thr": 1},
                scope="cluster",
            ),
        ],
    },
}
QUORUM["opensearch"] = QUORUM["elasticsearch"]

REPLICATION: StateTable = {
    "*": {
        "critical": [
            _s(
                (
                    "{Tech} Replication Stopped|{Tech} Replication Broken|{Tech} Replication Not Running|"
                    "{Tech} Replica Not Replicating|{Tech} Replication Failed"
                ),
                (
                    "replication has stopped|is not replicating for {dur}|has replication broken|"
                    "lost its connection to the primary"
                ),
                "replication stopped",
                notes=(
                    "The replica falls further behind every second.|A failover now would lose data.|"
                    "No standby is in sync.|"
                ),
                metric="{m}_replication_running",
            ),
        ],
        "error": [
            _s(
                "{Tech} Replica Not Replicating|{Tech} Replication Stopped|{Tech} Replication Degraded",
                (
                    "has 1 of {total} replicas not replicating; the others are in sync|"
                    "stopped replicating to 1 of {total} replicas; {up} stay in sync"
                ),
                "1/{total} replicas stopped",
                _of(lambda t: 1, (3, 4)),
                scope="cluster",
                metric="{m}_replication_running",
            ),
        ],
        "warning": [
            _s(
                "{Tech} Replication Reconnecting|{Tech} Replication Unstable|{Tech} Replica Reconnects",
                (
                    "reconnected its replica {n} times in 1h; replication is running|"
                    "had replication drop {n} times in 1h, resuming each time"
                ),
                "{n} reconnects in 1h",
                _n("n", 3, 8, 3),
            ),
        ],
        "info": [
            _s(
                "{Tech} Replication Restarted|{Tech} Replica Resynced|{Tech} Replication Resumed",
                (
                    "restarted replication after a {n}s drop; in sync again|"
                    "resynced the replica after a restart; in sync"
                ),
                "resumed",
                _n("n", 5, 90, 1),
            ),
        ],
    },
    "mysql": {
        "critical": [
            _s(
                "MySQL Slave IO Thread Not Running|Mysql Replica IO Thread Stopped|MySQL Replication Error",
                (
                    "has the replica IO thread stopped (Last_IO_Error: error connecting to source)|"
                    "reports Slave_IO_Running: No"
                ),
                "IO thread stopped",
                metric="mysql_slave_status_slave_io_running",
            ),
            _s(
                "MySQL Slave SQL Thread Not Running|Mysql Replica SQL Thread Stopped|MySQL Replication Error",
                "stopped its replica SQL thread: Error 1062 Duplicate entry|reports Slave_SQL_Running: No",
                "SQL thread stopped",
                metric="mysql_slave_status_slave_sql_running",
            ),
        ],
        "warning": [
            _s(
                "MySQL Replica Lag Growing|MySQL Slave Reconnecting",
                "reconnected its replica IO thread {n} times in 1h; replication is running",
                "{n} reconnects in 1h",
                _n("n", 3, 8, 3),
            ),
        ],
    },
    "postgres": {
        "critical": [
            _s(
                ("Postgresql Replication Stopped|Postgres WAL Receiver Down|Postgres Standby Not Streaming"),
                (
                    "is not streaming from the primary: requested WAL segment has already been removed|"
                    "has its WAL receiver down|has no standby in pg_stat_replication"
                ),
                "not streaming",
                metric="pg_stat_wal_receiver_status",
            ),
        ],
        "warning": [
            _s(
                "Postgres Replication Slot Inactive|Postgresql Inactive Replication Slot",
                "has replication slot {dbname}_slot inactive for {dur}; WAL is retained",
                "slot inactive",
                metric="pg_replication_slots_active",
            ),
        ],
    },
    "patroni": {
        "critical": [
            _s(
                "Patroni Replica Not Streaming|Patroni Standby Not Running",
                "has no replica streaming from the leader|has standby {host} not running",
                "not streaming",
                scope="cluster",
            ),
        ],
    },
    "redis": {
        "critical": [
            _s(
                "Redis Master Link Down|Redis Replication Broken|Redis Disconnected Slaves",
                (
                    "reports master_link_status:down|has 0 connected replicas (expected {n})|"
                    "has replication broken (master_link_down_since_seconds {n}0)"
                ),
                "master link down",
                _n("n", 1, 3, 1),
            ),
        ],
    },
    "mongodb": {
        "critical": [
            _s(
                ("MongoDB Replica Member Unhealthy|MongoDB Replication Stopped|Mongodb Secondary Too Stale"),
                (
                    "has member {host} in state RECOVERING, not applying the oplog|"
                    "has secondary {host} too stale to catch up: replication stopped"
                ),
                "not replicating",
                scope="cluster",
                metric="mongodb_rs_members_state",
            ),
        ],
    },
    "mssql": {
        "critical": [
            _s(
                (
                    "SQL Server AG Replica Not Synchronizing|SQL Server Always On Replica Disconnected|"
                    "MSSQL AG Not Healthy"
                ),
                (
                    "reports availability group replica {host} NOT SYNCHRONIZING|"
                    "has a disconnected secondary in availability group {dbname}-ag"
                ),
                "not synchronizing",
            ),
        ],
    },
    "oracle": {
        "critical": [
            _s(
                "Oracle Data Guard Apply Stopped|Oracle Data Guard Gap|OracleDB Standby Not Applying",
                (
                    "stopped applying redo on the standby|"
                    "reports a Data Guard archive gap: the standby cannot apply redo"
                ),
                "apply stopped",
            ),
        ],
    },
    "clickhouse": {
        "critical": [
            _s(
                ("ClickHouse Replication Queue Stuck|ClickHouse Replica Broken|Clickhouse Replicas Failing"),
                (
                    "has a stuck replication queue: {n} entries fail to fetch parts|"
                    "cannot fetch parts from its peers"
                ),
                "queue stuck",
                _n("n", 20, 400, 1),
            ),
        ],
    },
    "couchdb": {
        "critical": [
            _s(
                "CouchDB Replication Failing|CouchDB Replication Crashing",
                (
                    "has replication {dbname} -> dr crashing (unauthorized)|"
                    "stopped continuous replication of {dbname}"
                ),
                "replication crashing",
            ),
        ],
    },
}
REPLICATION["mariadb"] = {"critical": REPLICATION["mysql"]["critical"]}

CRASHING: StateTable = {
    "*": {
        "critical": [
            _s(
                (
                    "{Tech} Crash Looping|{Tech} Crashing|{Tech} Keeps Crashing|{Tech} Process Crashing|"
                    "{Tech} Restart Loop"
                ),
                (
                    "is crash-looping: {n} restarts in 15m, no {unit} stays up|"
                    "keeps crashing on start ({err}); nothing is serving|"
                    "exits after every start ({n} times in 15m)"
                ),
                "crash loop",
                lambda rng, f: {
                    "n": (n := rng.randint(5, 40)),
                    "num": n,
                    "thr": 3,
                    "err": rng.choice(CRASH_ERRS),
                },
            ),
            _s(
                (
                    "{Tech} Connection Owner Crashing|{Tech} Connection Handler Crashing|"
                    "{Tech} Worker Process Crashing"
                ),
                (
                    "has its connection owner process crashing: every client connection is dropped|"
                    "had its connection owner crash {n} times in 10m; all clients are disconnected"
                ),
                "crashing",
                _n("n", 4, 30, 3),
            ),
        ],
        "error": [
            _s(
                "{Tech} Crashing|{Tech} {Unit} Crash Looping|{Tech} Restarting",
                (
                    "crashed {n} times in 1h on 1 of {total} {units}; the others serve|"
                    "has {unit} {host} crash-looping; {up} of {total} {units} carry the load"
                ),
                "{n} crashes in 1h",
                lambda rng, f: {
                    "n": (n := rng.randint(4, 12)),
                    "num": n,
                    "thr": 3,
                    "total": (t := rng.choice([3, 4, 5])),
                    "up": t - 1,
                },
                scope="cluster",
            ),
        ],
        "warning": [
            _s(
                "{Tech} Restarted|{Tech} Restarting|{Tech} Too Many Restarts|{Tech} Frequent Restarts",
                "restarted {n} times in the last hour|restarted {n} times in 1h; it is up now",
                "{n} restarts in 1h",
                _n("n", 2, 4, 2),
            ),
        ],
        "info": [
            _s(
                "{Tech} Restarted|{Tech} Uptime Reset|{Tech} Process Restarted",
                "restarted once ({why}); healthy since|was restarted {n}m ago ({why})",
                "restarted once",
                lambda rng, f: {"n": rng.randint(3, 50), "num": 1, "thr": 1, "why": rng.choice(WHY_RESTART)},
            ),
        ],
    },
}
