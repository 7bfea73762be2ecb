"""States: GitOps, the network, versions, workloads, probes, containers, interfaces."""

from __future__ import annotations

from .data import frozen, table
from .states import StateTable, _const, _n, _of, _pcts, _s

_PHRASINGS = table("phrasings")

GITOPS: StateTable = {
    "argocd": {
        "error": [
            _s(
                "ArgoCD App Health Degraded|ArgoCD Application Degraded|Argocd App Unhealthy",
                "app {app} health is Degraded: {k} of {total} pods not ready",
                "Degraded",
                _of(lambda t: t // 2, (2, 4, 6)),
                scope="app",
            )
        ],
        "warning": [
            _s(
                "ArgoCD App Out Of Sync|ArgoCD Application Not Synced|Argocd App Sync Failed",
                "app {app} is OutOfSync for {dur}|sync of app {app} failed: {why}",
                "OutOfSync",
                lambda rng, f: {
                    "num": 1,
                    "thr": 1,
                    "why": rng.choice(
                        ["one or more objects failed to apply", "ComparisonError", "hook failed"]
                    ),
                },
                scope="app",
            )
        ],
        "info": [
            _s(
                "ArgoCD App Progressing|Argocd Application Progressing",
                "app {app} has been Progressing for {n}m",
                "Progressing",
                _n("n", 5, 20, 5),
                scope="app",
            )
        ],
    },
    "flux": {
        "error": [
            _s(
                "Flux HelmRelease Failed|Flux Helm Upgrade Failed",
                "helmrelease {app} upgrade failed; remediation retries exhausted",
                "failed",
                _const(num=0, thr=1),
                scope="app",
            )
        ],
        "warning": [
            _s(
                "Flux Kustomization Not Ready|Flux Reconciliation Failure|Flux Helm Release Not Ready",
                "kustomization {app} is not ready: {why}",
                "not ready",
                lambda rng, f: {
                    "num": 0,
                    "thr": 1,
                    "why": rng.choice(["health check timed out", "dry-run failed", "dependency not ready"]),
                },
                scope="app",
            )
        ],
        "info": [
            _s(
                "Flux Reconciliation Suspended|Flux Kustomization Suspended",
                "kustomization {app} is suspended",
                "suspended",
                _const(num=1, thr=1),
                scope="app",
            )
        ],
    },
}

NET_STATES: StateTable = {
    "cilium": {
        "error": [
            _s(
                "Cilium Agent Unreachable Nodes|Cilium Unreachable Nodes",
                "cannot reach {n} nodes from {host}",
                "{n} unreachable",
                _n("n", 2, 12, 1),
            )
        ],
        "warning": [
            _s(
                "Cilium Endpoint Regeneration Failing|Cilium Endpoint Regenerations Failed",
                "failed to regenerate {n} endpoints",
                "{n} failed",
                _n("n", 1, 30, 1),
            ),
            _s(
                "Cilium Policy Drops High|Cilium Drops High",
                "drops {n}0 packets/s denied by policy",
                "{n}0/s",
                _n("n", 1, 30, 1),
            ),
        ],
    },
    "calico": {
        "critical": [
            _s(
                "Calico IPAM Pool Exhausted|Calico IP Pool Exhausted",
                "has no free IPs in pool default-ipv4-ippool: new pods cannot start",
                "0 free",
                _const(num=0, thr=1),
                scope="cluster",
            )
        ],
        "error": [
            _s(
                "Calico BGP Peer Down|Calico Node BGP Session Down",
                "lost its BGP session to 10.0.{n}.1; routes fall back to the other peers",
                "peer down",
                lambda rng, f: {"n": rng.randint(0, 9), "num": 0, "thr": 1},
            )
        ],
        "warning": [
            _s(
                "Calico Felix Dataplane Failures",
                "reports {n} dataplane failures in 10m",
                "{n} failures",
                _n("n", 1, 12, 1),
            )
        ],
    },
    "consul": {
        "critical": [
            _s(
                "Consul Service Healthcheck Failed|Consul Service Critical|Consul Service Unhealthy",
                "has all {n} instances failing health checks|is critical on every node",
                "critical",
                _n("n", 2, 6, 1),
                scope="pool",
                metric="consul_health_service_status",
            ),
        ],
        "warning": [
            _s(
                "Consul Service Healthcheck Failed|Consul Check Warning",
                "has a check failing on 1 of {total} instances",
                "1 failing",
                _of(lambda t: 1, (3, 4, 6)),
                scope="pool",
            ),
        ],
        "error": [
            _s(
                "Consul Member Failed|Consul Agent Left|Consul Server Down",
                "has member {host} failed; {up} of {total} servers remain",
                "{up}/{total}",
                _of(lambda t: 1, (3, 5)),
                scope="cluster",
            )
        ],
    },
    "metallb": {
        "error": [
            _s(
                "MetalLB BGP Session Down|MetalLB BGP Peer Down",
                "lost the BGP session of speaker {host}",
                "down",
            ),
            _s(
                "MetalLB Address Pool Exhausted|MetalLB IP Pool Exhausted",
                "has no free IPs in address pool prod-pool: new LoadBalancer services get none",
                "0 free",
            ),
        ],
    },
    "keepalived": {
        "critical": [
            _s(
                "Keepalived Split Brain|Keepalived Multiple Masters|VRRP Split Brain",
                "has both nodes holding VIP 10.0.0.{n} as MASTER: connections are reset",
                "2 masters",
                lambda rng, f: {"n": rng.randint(10, 250), "num": 2, "thr": 1},
            )
        ],
        "warning": [
            _s(
                "Keepalived VRRP Failover|Keepalived State Changed",
                "moved VIP 10.0.0.{n} to {host}; the VIP is served",
                "failover",
                lambda rng, f: {"n": rng.randint(10, 250), "num": 1, "thr": 1},
            )
        ],
    },
    "coredns": {
        "critical": [
            _s(
                "CoreDNS Forward Healthcheck Broken|CoreDNS Forward Upstreams Down",
                "has every forward upstream failing health checks: external lookups fail",
                "upstreams down",
                _const(num=1, thr=0),
            )
        ],
        "warning": [
            _s(
                "CoreDNS Forward Healthcheck Failures|CoreDNS Forward Health Check Failing",
                "had {n} forward health check failures in 5m; the other upstreams answer",
                "{n} failures",
                _n("n", 1, 20, 1),
            ),
            _s(
                "CoreDNS Panics|CoreDNS Panic Count",
                "recovered from {n} panics in 10m",
                "{n} panics",
                _n("n", 1, 20, 1),
            ),
        ],
    },
    "bind": {
        "critical": [
            _s(
                "Bind Zone Expired|DNS Zone Expired",
                "let zone {app}.example.com expire: it answers SERVFAIL for it",
                "zone expired",
            )
        ],
        "warning": [
            _s(
                "Bind Zone Transfer Failed|Named Zone Transfer Failed",
                "could not transfer zone {app}.example.com from the primary; serving the current serial",
                "AXFR failed",
            )
        ],
    },
    "powerdns": {
        "critical": [
            _s(
                "PowerDNS Backend Down|PowerDNS Backend Unavailable",
                "lost its database backend: every authoritative query fails",
                "backend down",
            )
        ],
        "error": [
            _s(
                "PowerDNS Backend Query Failures",
                "has {n} backend query failures/min; some answers are SERVFAIL",
                "{n}/min",
                _n("n", 5, 80, 1),
            )
        ],
    },
    "istio": {
        "error": [
            _s(
                "Istio Sidecar Injection Failures|Istio Injection Failing",
                "failed to inject sidecars into {n} pods in 10m",
                "{n} failures",
                _n("n", 1, 20, 1),
            )
        ],
    },
    "linkerd": {
        "critical": [
            _s(
                "Linkerd Identity Cert Expired|Linkerd Identity Issuer Expired",
                "has an expired identity issuer certificate: proxies cannot get certificates, mTLS fails",
                "expired",
            )
        ],
        "warning": [
            _s(
                "Linkerd Identity Cert Expiring",
                "has an identity issuer certificate expiring in {n} days",
                "{n} days",
                _n("n", 10, 25, 30),
            )
        ],
    },
}

VERSIONS: StateTable = {
    "*": {
        "info": [
            _s(
                "{Tech} Version Mismatch|{Tech} Versions Differ|{Tech} Mixed Versions",
                (
                    "runs mixed versions: {v1} on {k} {units}, {v2} on the rest|"
                    "has {unit} {host} on {v1} while the others run {v2}"
                ),
                "2 versions",
                lambda rng, f: {
                    "num": 2,
                    "thr": 1,
                    "k": rng.randint(1, 3),
                    "v1": f"{(a := rng.randint(1, 9))}.{rng.randint(0, 20)}.{rng.randint(0, 9)}",
                    "v2": f"{a}.{rng.randint(21, 30)}.{rng.randint(0, 9)}",
                },
                scope="cluster",
            ),
        ],
        "warning": [
            _s(
                "{Tech} Version Mismatch|{Tech} Mixed Versions",
                "has run mixed versions ({v1} and {v2}) for {n} days; the upgrade stalled",
                "2 versions",
                lambda rng, f: {
                    "num": 2,
                    "thr": 1,
                    "n": rng.randint(3, 20),
                    "v1": f"{(a := rng.randint(1, 9))}.{rng.randint(0, 20)}",
                    "v2": f"{a + 1}.0",
                },
                scope="cluster",
            ),
        ],
    },
}

WORKLOADS: StateTable = {
    "*": {
        "critical": [
            _s(
                (
                    "{Controller} Down|Kubernetes {Controller} Down|{Controller} Unavailable|"
                    "Kube {Controller} Down|{Controller} Has No Available Replicas"
                ),
                (
                    "is down: 0 of {total} replicas available|has 0 replicas available|"
                    "went down: no pod is ready"
                ),
                "0/{total} available",
                lambda rng, f: {"total": rng.choice([1, 2, 3, 3, 5]), "num": 0, "thr": 1},
                scope="workload",
                metric="kube_{controller}_status_replicas_ready",
            ),
        ],
        "error": [
            _s(
                (
                    "Kube {Controller} Replicas Mismatch|{Controller} Replicas Mismatch|"
                    "Kubernetes {Controller} Replicas Mismatch|{Controller} Degraded"
                ),
                ("has {ready} of {total} replicas available for {dur}|is at {ready}/{total} ready replicas"),
                "{ready}/{total} available",
                lambda rng, f: {
                    "total": (t := rng.choice([4, 6, 8])),
                    "ready": t // 2,
                    "num": t // 2,
                    "thr": t,
                },
                scope="workload",
                metric="kube_{controller}_status_replicas_available",
            ),
        ],
        "warning": [
            _s(
                (
                    "Kube {Controller} Replicas Mismatch|{Controller} Replicas Mismatch|"
                    "Kube {Controller} Rollout Stuck|{Controller} Update Not Rolled Out"
                ),
                (
                    "has {ready} of {total} replicas available for {dur}|"
                    "has not progressed its rollout for {dur}; {ready} of {total} pods updated"
                ),
                "{ready}/{total} available",
                lambda rng, f: {
                    "total": (t := rng.choice([3, 4, 6, 10])),
                    "ready": t - 1,
                    "num": t - 1,
                    "thr": t,
                },
                scope="workload",
            ),
        ],
        "info": [
            _s(
                (
                    "Kubernetes {Controller} Generation Mismatch|{Controller} Rollout In Progress|"
                    "Kube {Controller} Scaled"
                ),
                (
                    "is rolling out a new version ({ready}/{total} updated)|"
                    "was scaled from {a} to {total} replicas"
                ),
                "{ready}/{total} updated",
                lambda rng, f: {
                    "total": (t := rng.choice([3, 4, 6])),
                    "ready": rng.randint(1, t - 1),
                    "a": t - 1,
                    "num": 1,
                    "thr": 1,
                },
                scope="workload",
            ),
        ],
    },
}

PROBES: StateTable = {  # keyed by the probe's module family
    "*": {
        "critical": [
            _s(
                "Blackbox Probe Failed|Probe Failed|Endpoint Down|Site Down|Blackbox Target Down",
                "is down (probe failed)|probe failed: {reason}|does not answer: {reason}",
                "probe failed",
                lambda rng, f: {"num": 0, "thr": 1, "reason": rng.choice(PROBE_FAILURES[f["tech"]])},
                scope="probe",
                metric="probe_success",
            ),
        ],
        "warning": [
            _s(
                "Blackbox Probe Failed|Probe Flapping|Uptime Check Failed",
                (
                    "probe failed from 1 of {total} locations; the others succeed|"
                    "failed {n} of the last 20 probes and answers again"
                ),
                "1/{total} failing",
                lambda rng, f: {"total": rng.choice([3, 4, 5]), "n": rng.randint(1, 3), "num": 1, "thr": 1},
                scope="probe",
                metric="probe_success",
            ),
        ],
    },
    "http": {
        "critical": [
            _s(
                "Blackbox Probe HTTP Failure|HTTP Status Code Not OK|Bad HTTP Status Code|Probe Http Failure",
                "returns HTTP {code}|answers with status {code} (expected 200-399)",
                "HTTP {code}",
                lambda rng, f: {"code": (c := rng.choice([500, 502, 503, 504])), "num": c, "thr": 399},
                scope="probe",
                metric="probe_http_status_code",
            ),
            _s(
                "Blackbox SSL Certificate Expired|TLS Certificate Expired|Blackbox Ssl Certificate Expired",
                "serves a certificate that expired {n} days ago",
                "expired",
                lambda rng, f: {"n": (n := rng.randint(1, 9)), "num": -n, "thr": 0},
                scope="probe",
                metric="probe_ssl_earliest_cert_expiry",
            ),
        ],
        "error": [
            _s(
                "Blackbox Slow Probe|Blackbox Probe Slow HTTP|Slow HTTP Probe|Endpoint Slow",
                "answers in {n}s (probe slow)|probe took {n}s",
                "{n}s",
                lambda rng, f: {"n": (n := rng.randint(3, 8)), "num": n, "thr": 2},
                scope="probe",
                metric="probe_duration_seconds",
            ),
            _s(
                "Blackbox SSL Certificate Will Expire Soon|Certificate Expiring Soon",
                "serves a certificate that expires in {n} days",
                "{n} days",
                lambda rng, f: {"n": (n := rng.randint(2, 6)), "num": n, "thr": 7, "above": False},
                scope="probe",
                metric="probe_ssl_earliest_cert_expiry",
            ),
        ],
        "warning": [
            _s(
                "Blackbox Slow Probe|Blackbox Probe Slow HTTP|Slow HTTP Probe",
                "answers in {n}00ms (probe slow)|probe took {n}00ms",
                "{n}00ms",
                lambda rng, f: {"n": (n := rng.randint(11, 19)), "num": n / 10, "thr": 1},
                scope="probe",
                metric="probe_duration_seconds",
            ),
            _s(
                "Blackbox SSL Certificate Will Expire Soon|Certificate Expiring Soon",
                "serves a certificate that expires in {n} days",
                "{n} days",
                lambda rng, f: {"n": (n := rng.randint(10, 25)), "num": n, "thr": 30, "above": False},
                scope="probe",
                metric="probe_ssl_earliest_cert_expiry",
            ),
        ],
        "info": [
            _s(
                "Blackbox SSL Certificate Renewal Due|Certificate Renewal Due",
                "serves a certificate that expires in {n} days; renewal is due",
                "{n} days",
                lambda rng, f: {"n": (n := rng.randint(30, 45)), "num": n, "thr": 45, "above": False},
                scope="probe",
            ),
            _s(
                "Blackbox Probe DNS Slow|Probe DNS Lookup Slow",
                "resolves slowly during the probe ({n}0ms DNS lookup)",
                "{n}0ms",
                _n("n", 8, 30, 5),
                scope="probe",
            ),
        ],
    },
    "icmp": {
        "critical": [
            _s(
                "Blackbox Probe ICMP Failed|Host Unreachable|Ping Failed",
                "does not answer ICMP ping|is unreachable: 100% packet loss",
                "unreachable",
                scope="probe",
                metric="probe_success",
            ),
        ],
        "warning": [
            _s(
                "Blackbox Probe Slow Ping|Ping RTT High",
                "answers ping in {n}ms",
                "{n}ms",
                _n("n", 150, 400, 100),
                scope="probe",
                metric="probe_icmp_duration_seconds",
            ),
        ],
    },
    "tcp": {
        "critical": [
            _s(
                "Blackbox Probe TCP Failed|TCP Port Unreachable|Port Down",
                "is unreachable (connection timed out)|refuses connections",
                "unreachable",
                scope="probe",
                metric="probe_success",
            ),
        ],
    },
}
PROBE_FAILURES: dict[str, tuple[str, ...]] = frozen(_PHRASINGS["probe_failures"])

CONTAINERS: StateTable = {
    "*": {
        "critical": [
            _s(
                (
                    "Container Down|Container Absent|Docker Container Down|Container Not Running|"
                    "Container Crash Looping"
                ),
                (
                    "has not been running for {dur}; it is the only instance|"
                    "exited ({exit}) and keeps failing to start|is gone: nothing runs in its place on {host}"
                ),
                "not running",
                lambda rng, f: {
                    "num": 0,
                    "thr": 1,
                    "exit": rng.choice(["exit code 1", "exit code 137", "exit code 139"]),
                },
                scope="container",
                metric="container_last_seen",
            ),
        ],
        "error": [
            _s(
                "Container Unhealthy|Docker Container Unhealthy|Container Health Check Failing",
                "is unhealthy: its health check failed {n} times in a row|has been unhealthy for {dur}",
                "unhealthy",
                _n("n", 3, 20, 3),
                scope="container",
            ),
            _s(
                "Container Memory Near Limit|Container High Memory Usage",
                "uses {pct}% of its memory limit",
                "{pct}%",
                _pcts(92, 98, 90),
                scope="container",
            ),
        ],
        "warning": [
            _s(
                "Container Killed|Docker Container Killed",
                "was killed ({exit}) and restarted|disappeared and came back {n}s later",
                "killed",
                lambda rng, f: {
                    "num": 1,
                    "thr": 1,
                    "n": rng.randint(5, 60),
                    "exit": rng.choice(["exit code 137", "SIGKILL"]),
                },
                scope="container",
            ),
            _s(
                "Container CPU Throttled|Container High Throttle Rate|Container Cpu Throttling High",
                "is CPU-throttled {pct}% of the time",
                "{pct}%",
                _pcts(30, 60, 25),
                scope="container",
            ),
        ],
        "info": [
            _s(
                "Container Restarted|Container Updated",
                "restarted once after an image update|was recreated by docker compose",
                "restarted",
                _const(num=1, thr=1),
                scope="container",
            ),
        ],
    },
}

IFACES: StateTable = {
    "*": {
        "critical": [
            _s(
                "Network Interface Down|Interface Down|Uplink Down|Link Down",
                "is down; {b} is unreachable|is down: it was the only uplink to {b}",
                "down",
                _const(num=0, thr=1),
                scope="link",
                metric="ifOperStatus",
            ),
        ],
        "error": [
            _s(
                "Interface Down|Bond Member Down|Uplink Down",
                "is down; traffic to {b} fails over to the second uplink|is down: 1 of 2 uplinks left",
                "down",
                _const(num=0, thr=1),
                scope="link",
                metric="ifOperStatus",
            ),
        ],
        "warning": [
            _s(
                "Interface Flapping|Link Flapping|Port Flapping",
                "flapped {n} times in 1h",
                "{n} flaps",
                _n("n", 3, 9, 2),
                scope="link",
            ),
            _s(
                "Interface Down|Bond Member Down|Link Down",
                "is down; {n} other links of the bond carry traffic",
                "down",
                lambda rng, f: {"n": rng.randint(2, 3), "num": 0, "thr": 1},
                scope="link",
                metric="ifOperStatus",
            ),
        ],
        "info": [
            _s(
                "Interface Admin Down|Interface Disabled",
                "was shut down by an operator (admin down)",
                "admin down",
                scope="link",
            )
        ],
    },
}
