"""States: backends, throughput, client requests, storage, persistence."""

from __future__ import annotations

from .states import StateTable, _const, _n, _of, _pcts, _s

BACKENDS: StateTable = {
    "*": {
        "critical": [
            _s(
                (
                    "{Tech} No Healthy Backends|{Tech} Backend Down|{Tech} No Alive Backends|"
                    "{Tech} All Backends Down|{Tech} No Healthy Upstream|{Tech} Upstream Down"
                ),
                (
                    "has no healthy servers left|has no alive backends: every request fails with 503|"
                    "is down: 0 of {total} servers healthy|has all {total} servers failing health checks"
                ),
                "0/{total} healthy",
                lambda rng, f: {"total": rng.randint(2, 6), "num": 0, "thr": 1},
                scope="pool",
                metric="{m}_backend_up",
            ),
        ],
        "error": [
            _s(
                (
                    "{Tech} Backend Degraded|{Tech} Backend Servers Down|{Tech} Unhealthy Backends|"
                    "{Tech} Backend Down"
                ),
                (
                    "has {down} of {total} servers unhealthy; {up} carry all traffic|"
                    "is down to {up} of {total} healthy servers"
                ),
                "{up}/{total} healthy",
                _of(lambda t: t // 2, (4, 5, 6)),
                scope="pool",
                metric="{m}_backend_active_servers",
            ),
        ],
        "warning": [
            _s(
                (
                    "{Tech} Backend Unhealthy|{Tech} Server Down|{Tech} Unhealthy Backend Server|"
                    "{Tech} Upstream Server Failing|{Tech} Backend Down"
                ),
                (
                    "has 1 of {total} servers unhealthy|"
                    "is degraded: backend 1 of {total} unhealthy ({server} fails health checks)|"
                    "marked {server} down; {up} of {total} servers healthy"
                ),
                "{up}/{total} healthy",
                _of(lambda t: 1, (3, 4, 6, 8)),
                scope="pool",
                metric="{m}_server_up",
            ),
        ],
    },
    "haproxy": {
        "critical": [
            _s(
                "HAProxy Has No Alive Backends|Haproxy Backend Down|HAProxy Backend Down",
                "has no alive servers|is DOWN: all servers failed their checks",
                "0 alive",
                scope="pool",
                metric="haproxy_backend_active_servers",
            ),
        ],
    },
    "envoy": {
        "critical": [
            _s(
                "Envoy Cluster No Healthy Hosts|Envoy Upstream Unhealthy|Envoy No Healthy Upstream",
                "has 0 healthy hosts (no healthy upstream)|answers 503 UH: no healthy upstream",
                "0 healthy hosts",
                scope="pool",
                metric="envoy_cluster_membership_healthy",
            ),
        ],
    },
    "traefik": {
        "critical": [
            _s(
                "Traefik Service Down|Traefik Backend Down|Traefik No Healthy Servers",
                "has no healthy server|is down: all servers fail health checks",
                "down",
                scope="pool",
                metric="traefik_service_server_up",
            ),
        ],
    },
    "nginx": {
        "critical": [
            _s(
                "Nginx Upstream Down|Nginx No Live Upstreams",
                "reports no live upstreams|has every peer marked down",
                "no live upstreams",
                scope="pool",
            ),
        ],
    },
    "ingress-nginx": {
        "critical": [
            _s(
                "Ingress No Endpoints|Ingress Backend Unavailable|Ingress Service Has No Endpoints",
                (
                    "has no endpoints: service {pool} has 0 ready pods|"
                    "routes to a service with no ready endpoints"
                ),
                "0 endpoints",
                scope="pool",
            ),
        ],
    },
    "istio": {
        "critical": [
            _s(
                "{Tech} Destination No Healthy Endpoints|{Tech} No Endpoints|{Tech} Upstream Unavailable",
                "has no healthy endpoints in the mesh|gets 503 no_healthy_upstream for every request",
                "0 endpoints",
                scope="pool",
            ),
        ],
    },
}
BACKENDS["linkerd"] = BACKENDS["istio"]

THROUGHPUT: StateTable = {
    "*": {
        "critical": [
            _s(
                (
                    "{Tech} {Op} Rate Dropped|{Tech} Low {Op} Rate|{Tech} {Op}s Stopped|{Tech} No {Op}s|"
                    "{Tech} Throughput Zero"
                ),
                (
                    "{op} rate dropped to near zero ({now}/s, usually {base}/s)|"
                    "{op} rate fell to {now}/s from {base}/s|processed no {ops} for {dur}"
                ),
                "{now}/s",
                lambda rng, f: {
                    "now": (v := rng.choice([0, 0, 0.1, 0.2, 0.5])),
                    "base": rng.choice([120, 450, 900, 2400]),
                    "num": v,
                    "thr": 1,
                    "above": False,
                },
                notes="Clients are not getting through.|Nothing is being written.|",
                metric="{m}_{ops_m}_total",
            ),
        ],
        "warning": [
            _s(
                ("{Tech} {Op} Rate Dropped|{Tech} {Op} Rate Low|{Tech} Throughput Drop|{Tech} Low {Op} Rate"),
                (
                    "{op} rate is {pct}% below last week ({now}/s vs {base}/s)|"
                    "{ops} dropped to {now}/s, {pct}% under the usual {base}/s"
                ),
                "-{pct}%",
                lambda rng, f: {
                    "pct": (p := rng.randint(35, 60)),
                    "base": (b := rng.choice([120, 450, 900, 2400])),
                    "now": round(b * (100 - p) / 100),
                    "num": round(b * (100 - p) / 100),
                    "thr": b * 0.7,
                },
                metric="{m}_{ops_m}_total",
            ),
        ],
        "info": [
            _s(
                "{Tech} {Op} Rate Low|{Tech} Throughput Drop|{Tech} Traffic Lower Than Usual",
                (
                    "{op} rate is {pct}% below the usual for this hour|"
                    "{ops} are {pct}% lower than last week ({now}/s)"
                ),
                "-{pct}%",
                lambda rng, f: {
                    "pct": (p := rng.randint(15, 28)),
                    "base": (b := rng.choice([120, 450, 900])),
                    "now": round(b * (100 - p) / 100),
                    "num": round(b * (100 - p) / 100),
                    "thr": b * 0.9,
                },
            ),
        ],
    },
}

CLIENT_REQUESTS: StateTable = {
    "*": {
        "critical": [
            _s(
                (
                    "{Tech} Client Request Unavailable|{Tech} Client Requests Unavailable {RW}|"
                    "{Tech} Client Request Unavailable {RW}|{Tech} Unavailable Exceptions"
                ),
                (
                    "has client requests unavailable: {n}/s {rw}s fail with UnavailableException|"
                    "cannot reach consistency {cl}: {n} unavailable {rw}s/s"
                ),
                "{n} unavailable/s",
                lambda rng, f: {
                    "n": (n := rng.randint(1, 60)),
                    "num": n,
                    "thr": 0,
                    "rw": (rw := rng.choice(["read", "write"])),
                    "RW": rw.title(),
                    "cl": rng.choice(["QUORUM", "LOCAL_QUORUM"]),
                },
                metric="{m}_clientrequest_unavailables",
            ),
        ],
        "error": [
            _s(
                "{Tech} Client Request Failures|{Tech} Client Request Timeouts",
                (
                    "fails {n} client {rw}s/s ({pct}% of traffic)|"
                    "times out {n} {rw}s/s; retries mostly succeed"
                ),
                "{n} failures/s",
                lambda rng, f: {
                    "n": (n := rng.randint(5, 40)),
                    "num": n,
                    "thr": 5,
                    "rw": rng.choice(["read", "write"]),
                    "pct": rng.randint(2, 5),
                },
            ),
        ],
        "warning": [
            _s(
                "{Tech} Client Request Timeouts|{Tech} Dropped Messages|{Tech} Client Request Latency",
                (
                    "times out a few client {rw}s ({n}/min)|"
                    "dropped {n} {rw} messages in 5m; requests succeed on retry"
                ),
                "{n}/min",
                lambda rng, f: {
                    "n": (n := rng.randint(2, 30)),
                    "num": n,
                    "thr": 1,
                    "rw": rng.choice(["read", "write", "mutation"]),
                },
            ),
        ],
    },
}


STORAGE: StateTable = {
    "elasticsearch": {
        "warning": [
            _s(
                "{Tech} Disk Low Watermark Reached|{Tech} Disk Space Low",
                "has its disk {pct}% used, past the low watermark: no new shards go to {host}",
                "{pct}%",
                _pcts(85, 89.5, 85),
            ),
        ],
        "error": [
            _s(
                "{Tech} Disk High Watermark Reached|{Tech} Disk Space Low",
                "has its disk {pct}% used, past the high watermark: shards are relocated away",
                "{pct}%",
                _pcts(90, 94.5, 90),
            ),
        ],
        "critical": [
            _s(
                "{Tech} Flood Stage Watermark|{Tech} Disk Full|{Tech} Index Read Only",
                "hit the flood-stage watermark ({pct}% used): indices are read-only, writes rejected",
                "{pct}%",
                _pcts(95, 99.5, 95),
            ),
        ],
    },
    "oracle": {
        "warning": [
            _s(
                "Oracle Tablespace Usage High|OracleDB Tablespace Filling",
                "has tablespace USERS {pct}% used",
                "{pct}%",
                _pcts(80, 88, 80),
            )
        ],
        "error": [
            _s(
                "Oracle Tablespace Usage High|OracleDB Tablespace Almost Full",
                "has tablespace {dbname}_DATA {pct}% used with autoextend off",
                "{pct}%",
                _pcts(90, 96, 90),
            )
        ],
        "critical": [
            _s(
                "Oracle Tablespace Full|OracleDB Tablespace Exhausted",
                "has tablespace {dbname}_DATA full: ORA-01653 unable to extend table",
                "100%",
                _pcts(99.9, 100, 98),
            )
        ],
    },
    "mssql": {
        "warning": [
            _s(
                "SQL Server Log Space High|MSSQL Transaction Log Growing",
                "has the transaction log of {dbname} {pct}% used",
                "{pct}%",
                _pcts(75, 85, 75),
            )
        ],
        "error": [
            _s(
                "SQL Server Log Space High|MSSQL Log Almost Full",
                "has the transaction log of {dbname} {pct}% used; the log backup is late",
                "{pct}%",
                _pcts(88, 95, 88),
            )
        ],
        "critical": [
            _s(
                "SQL Server Transaction Log Full|MSSQL Log Full",
                "reports the transaction log for database '{dbname}' is full (error 9002): writes fail",
                "full",
                _pcts(99.9, 100, 98),
            )
        ],
    },
    "etcd": {
        "warning": [
            _s(
                "Etcd Database Size High|Etcd Backend Quota Usage",
                "has its database at {pct}% of the quota",
                "{pct}%",
                _pcts(60, 75, 60),
            )
        ],
        "error": [
            _s(
                "Etcd Database Near Quota|Etcd Database Size High",
                "has its database at {pct}% of the quota; defrag needed",
                "{pct}%",
                _pcts(85, 95, 85),
            )
        ],
        "critical": [
            _s(
                "Etcd NOSPACE Alarm|Etcd Database Space Exceeded|Etcd Quota Exceeded",
                "raised a NOSPACE alarm: mvcc database space exceeded, writes rejected",
                "NOSPACE",
                _const(num=1, thr=0),
                scope="cluster",
            )
        ],
    },
    "postgres": {
        "warning": [
            _s(
                "Postgres Transaction ID Wraparound|Postgresql Xid Age High",
                "has an oldest xid age of {n}00 million in {dbname}; autovacuum is behind",
                "{n}00M xids",
                _n("n", 8, 12, 8),
            )
        ],
        "error": [
            _s(
                "Postgres XID Wraparound Near|Postgresql Transaction Id Wraparound",
                "has an xid age of {n}00 million in {dbname}: {left} million transactions before shutdown",
                "{n}00M xids",
                lambda rng, f: {"n": (n := rng.randint(16, 19)), "left": 2100 - n * 100, "num": n, "thr": 15},
            )
        ],
        "critical": [
            _s(
                "Postgres Stopped Accepting Commands|Postgresql Transaction Id Wraparound",
                "stopped accepting commands to avoid wraparound data loss in database {dbname}",
                "read-only",
                _const(num=21, thr=20),
            )
        ],
    },
    "clickhouse": {
        "warning": [
            _s(
                "ClickHouse Too Many Parts|Clickhouse Parts Growing",
                "has {n} active parts in one partition of {dbname}.events",
                "{n} parts",
                _n("n", 150, 220, 150),
            )
        ],
        "error": [
            _s(
                "ClickHouse Too Many Parts",
                "has {n} parts in {dbname}.events; merges are behind",
                "{n} parts",
                _n("n", 250, 290, 250),
            )
        ],
        "critical": [
            _s(
                "ClickHouse Too Many Parts|ClickHouse Inserts Rejected",
                "rejects inserts: Too many parts ({n}) in table {dbname}.events",
                "{n} parts",
                _n("n", 300, 600, 300),
            )
        ],
    },
}
STORAGE["opensearch"] = STORAGE["elasticsearch"]

PERSISTENCE: StateTable = {
    "postgres": {
        "warning": [
            _s(
                "Postgres WAL Archive Lag|Postgresql Archiver Behind",
                "has {n} WAL segments waiting to be archived",
                "{n} segments",
                _n("n", 20, 80, 20),
            )
        ],
        "critical": [
            _s(
                (
                    "Postgres WAL Archiving Failing|Postgresql Archive Command Failed|"
                    "Postgres Archiver Failing"
                ),
                (
                    "has archive_command failing ({n} failures in 1h): WAL piles up in pg_wal|"
                    "cannot archive WAL ({n} failures): point-in-time recovery is broken"
                ),
                "archiving failing",
                _n("n", 5, 60, 1),
                metric="pg_stat_archiver_failed_count",
            )
        ],
    },
    "etcd": {
        "warning": [
            _s(
                "Etcd High Fsync Durations|Etcd Slow Disk",
                "has a WAL fsync p99 of {n}ms",
                "{n}ms",
                _n("n", 300, 600, 250),
            )
        ],
        "error": [
            _s(
                "Etcd High Commit Durations|Etcd High Fsync Durations",
                "has a backend commit p99 of {n}ms; leader elections are likely",
                "{n}ms",
                _n("n", 700, 1500, 500),
            )
        ],
        "critical": [
            _s(
                "Etcd WAL Fsync Failing|Etcd Disk Write Errors",
                "cannot fsync its WAL: input/output error, proposals fail",
                "fsync failing",
                _const(num=1, thr=0),
            )
        ],
    },
    "redis": {
        "warning": [
            _s(
                "Redis Missing Backup|Redis Last Save Old",
                "has had no successful RDB save for {n}h",
                "{n}h",
                _n("n", 25, 40, 24),
            )
        ],
        "error": [
            _s(
                "Redis AOF Rewrite Failed|Redis Persistence Error",
                "failed its AOF rewrite: Can't fork",
                "rewrite failed",
                _const(num=1, thr=0),
            )
        ],
        "critical": [
            _s(
                "Redis RDB Save Failed|Redis Writes Rejected MISCONF|Redis Persistence Failing",
                "failed its last background save: writes are refused with MISCONF",
                "bgsave failed",
                _const(num=0, thr=1),
                metric="redis_rdb_last_bgsave_status",
            )
        ],
    },
    "mongodb": {
        "warning": [
            _s(
                "MongoDB Oplog Window Short|Mongodb Oplog Window",
                "has an oplog window of {n}h",
                "{n}h",
                _n("n", 6, 12, 12),
            )
        ],
        "error": [
            _s(
                "MongoDB Oplog Window Short",
                "has its oplog window down to {n}h; a lagging member may fall off",
                "{n}h",
                _n("n", 1, 3, 4),
            )
        ],
        "critical": [
            _s(
                "MongoDB Journal Write Failed|MongoDB Disk Full",
                "could not write the journal: no space left on device, the node shut down",
                "journal failed",
            )
        ],
    },
    "elasticsearch": {
        "warning": [
            _s(
                "{Tech} Snapshot Slow|{Tech} Snapshot Took Long",
                "took {n}h for its last snapshot, longer than usual",
                "{n}h",
                _n("n", 3, 6, 2),
            )
        ],
        "error": [
            _s(
                "{Tech} Snapshot Failed|{Tech} Snapshots Failing",
                "failed its last {n} snapshots to repository backups",
                "{n} failed",
                _n("n", 2, 4, 1),
            )
        ],
        "critical": [
            _s(
                "{Tech} No Recent Snapshot|{Tech} Snapshot Missing",
                "has no successful snapshot for {n} days",
                "{n} days",
                _n("n", 7, 12, 7),
                scope="cluster",
            )
        ],
    },
    "mysql": {
        "warning": [
            _s(
                "MySQL Binlog Purge Behind|MySQL Binlog Files Growing",
                "keeps {n} binlog files; purge is behind",
                "{n} files",
                _n("n", 200, 900, 150),
            )
        ],
        "critical": [
            _s(
                "MySQL Binlog Write Error|MySQL Disk Full Binlog",
                "cannot write the binary log: disk full, commits hang",
                "binlog write error",
            )
        ],
    },
}
PERSISTENCE["opensearch"] = PERSISTENCE["elasticsearch"]
