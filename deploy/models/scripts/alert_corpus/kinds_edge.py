"""The magnitude kinds about DNS, TLS, load balancers, the network and application SLOs."""

from __future__ import annotations

from .common import TEAMS, _ms, _num, _pct, _rate, _secs
from .kinds import Kind, _down_facts, _fixed, _pick, scale

EDGE_KINDS: list[Kind] = [
    # -- DNS ---------------------------------------------------------------------------------------
    Kind(
        "dns_servfail",
        "dns",
        ("network",),
        (
            "CoreDNS SERVFAIL Rate",
            "DNS Errors High",
            "Resolver SERVFAIL",
            "DNS Failure Rate",
            "Kube DNS Errors",
        ),
        {"info": 0.1, "warning": 0.35, "error": 0.3, "critical": 0.25},
        scale(
            {"info": (0.1, 1), "warning": (1, 5), "error": (5, 18), "critical": (18, 80)},
            _pct,
            lambda rng, level, v, f: {"labels": {"rcode": "SERVFAIL"} if rng.random() < 0.5 else {}},
        ),
        (
            "{value} of DNS queries answered SERVFAIL on {server}",
            "CoreDNS in {cluster} returns SERVFAIL for {value} of requests",
            "DNS error rate {value} (SERVFAIL)",
            "{server}: SERVFAIL responses at {value}",
        ),
        ("Lookups of upstream names fail for {value} of queries.", "SERVFAIL above {threshold} for {dur}."),
        "coredns_dns_responses_total",
        numeric=True,
    ),
    Kind(
        "dns_nxdomain",
        "dns",
        ("network",),
        ("NXDOMAIN Rate High", "DNS NXDOMAIN Spike", "CoreDNS NXDOMAIN Responses"),
        {"info": 0.6, "warning": 0.4},
        scale(
            {"info": (5, 30), "warning": (30, 85)},
            _pct,
            lambda rng, level, v, f: {"labels": {"rcode": "NXDOMAIN"} if rng.random() < 0.5 else {}},
        ),
        ("{value} of DNS answers are NXDOMAIN on {server}", "NXDOMAIN rate {value} in {cluster}"),
        ("Likely a search-path or typo'd name.", "Most NXDOMAINs are for names under the cluster domain."),
        "coredns_dns_responses_total",
        numeric=True,
    ),
    Kind(
        "dns_latency",
        "dns",
        ("network",),
        ("DNS Latency High", "Resolver Slow", "CoreDNS Request Duration", "DNS Lookups Slow"),
        {"warning": 0.4, "error": 0.35, "critical": 0.25},
        scale(
            {"warning": (0.08, 0.4), "error": (0.4, 2.5), "critical": (2.5, 5)},
            _ms,
            _pick(
                {
                    "warning": [""],
                    "error": ["Some clients retry lookups."],
                    "critical": ["Lookups are timing out.", "Most lookups time out after 5s."],
                }
            ),
        ),
        (
            "DNS p99 latency on {server} is {value}",
            "{server} answers in {value} at p99",
            "Resolver latency {value} in {cluster}",
        ),
        ("{note}", "p99 above {threshold} for {dur}. {note}"),
        "coredns_dns_request_duration_seconds",
        numeric=True,
    ),
    Kind(
        "dns_down",
        "dns",
        ("network",),
        ("CoreDNS Down", "DNS Server Unreachable", "Kube DNS Unavailable", "Resolver Not Responding"),
        {"error": 0.5, "critical": 0.5},
        _fixed({"error": _down_facts("error"), "critical": _down_facts("critical")}),
        (
            "{down} of {total} {server} instances down",
            "{server}: {value}",
            "DNS servers {value} in {cluster}",
        ),
        (
            "Name resolution depends on the remaining instances.",
            "Every lookup in the cluster goes through {server}.",
        ),
        "up",
    ),
    # -- TLS ---------------------------------------------------------------------------------------
    Kind(
        "cert_expiry",
        "cert",
        ("network",),
        {
            "info": ("TLS Certificate Expiring", "Certificate Renewal Due", "SSL Cert Expiry"),
            "warning": ("TLS Certificate Expiring", "SSL Cert Expiry", "Certificate Expires Soon"),
            "error": ("TLS Certificate Expiring", "Certificate Expires Soon", "Certificate Not Renewed"),
            "critical": (
                "TLS Certificate Expired",
                "Cert Expired",
                "SSL Certificate Invalid",
                "Certificate Not Renewed",
            ),
        },
        {"info": 0.2, "warning": 0.35, "error": 0.2, "critical": 0.25},
        _fixed(
            {
                "info": lambda rng, f: {
                    "days": (d := rng.randint(35, 60)),
                    "value": f"expires in {d} days",
                    "num": d,
                    "thr": 30,
                },
                "warning": lambda rng, f: {
                    "days": (d := rng.randint(9, 25)),
                    "value": f"expires in {d} days",
                    "num": d,
                    "thr": 30,
                },
                "error": lambda rng, f: {
                    "days": (d := rng.randint(1, 5)),
                    "value": f"expires in {d} days" if d > 1 else "expires tomorrow",
                    "num": d,
                    "thr": 7,
                },
                "critical": lambda rng, f: {
                    "days": 0,
                    "value": rng.choice(
                        [
                            f"expired {rng.randint(1, 20)} hours ago",
                            f"expired {rng.randint(1, 6)} days ago",
                            "has expired",
                        ]
                    ),
                    "num": -1,
                    "thr": 0,
                },
            }
        ),
        (
            "Certificate for {domain} {value}",
            "TLS certificate on {domain} {value}",
            "{domain}: certificate {value} (issuer {issuer})",
            "SSL cert of {domain} {value}",
        ),
        (
            "Issued by {issuer}; renewal has not happened.",
            "Clients will reject the certificate of {domain} once it expires.",
            "Issuer {issuer}.",
        ),
        "ssl_certificate_days_left",
    ),
    Kind(
        "tls_handshake",
        "edge",
        ("network",),
        ("TLS Handshake Failures", "SSL Handshake Errors", "Handshake Error Rate", "mTLS Failures"),
        {"warning": 0.4, "error": 0.35, "critical": 0.25},
        scale({"warning": (0.5, 4), "error": (4, 15), "critical": (15, 80)}, _pct),
        (
            "{value} of TLS handshakes fail on {lb}",
            "{Proxy} {lb}: handshake errors {value}",
            "TLS handshake failure rate {value} at {lb}",
        ),
        ("Clients fail to negotiate TLS with {lb}.", "Handshake failures above {threshold} for {dur}."),
        "envoy_listener_ssl_connection_error",
        numeric=True,
    ),
    # -- load balancers, ingress, proxies ----------------------------------------------------------
    Kind(
        "edge_5xx",
        "edge",
        ("network",),
        (
            "{Proxy} 5xx Rate High",
            "Ingress 502 Errors",
            "Load Balancer 5xx",
            "Edge Gateway Errors",
            "Upstream 503 Rate",
            "{Proxy} Backend Errors",
            "{Proxy} High HTTP 5xx Error Rate Backend",
            "{Proxy} Service High Http 5xx Error Rate",
            "{Proxy} High 5xx Error Rate",
        ),
        {"info": 0.1, "warning": 0.3, "error": 0.25, "critical": 0.35},
        scale(
            # above ~5 % of user requests failing, users are hurt: the community rules' line
            {"info": (0.1, 0.5), "warning": (0.5, 2), "error": (2, 5), "critical": (5, 80)},
            _pct,
            lambda rng, level, v, f: {"code": rng.choice(["502", "503", "504"])},
        ),
        (
            "{value} of requests through {lb} return {code} for {backend}",
            "Ingress {backend}: {code} rate {value}",
            "{Proxy} edge error rate {value} ({code})",
            "{lb} {code}s at {value} for backend {backend}",
        ),
        (
            "The load balancer answers {code} for {value} of requests.",
            "Errors at the edge, above {threshold} for {dur}.",
        ),
        "nginx_ingress_controller_requests",
        numeric=True,
    ),
    Kind(
        "backend_down",
        "edge",
        ("network",),
        (
            "{Proxy} Backend Down",
            "No Healthy Upstream",
            "LB Unhealthy Targets",
            "Backend Server Down",
            "Upstream Unavailable",
        ),
        {"warning": 0.35, "error": 0.35, "critical": 0.3},
        _fixed({lv: _down_facts(lv) for lv in ("warning", "error", "critical")}),
        (
            "{Proxy} backend {backend}: {up}/{total} servers up",
            "{down} of {total} targets unhealthy behind {lb}",
            "{lb}: backend {backend} {value}",
        ),
        (
            "Health checks of {backend} fail on {down} servers.",
            "{lb} routes around the failed servers while it can.",
        ),
        "haproxy_backend_active_servers",
    ),
    Kind(
        "lb_connections",
        "edge",
        ("network",),
        (
            "{Proxy} Connections Near Limit",
            "Load Balancer Connection Saturation",
            "Ingress Active Connections High",
        ),
        {"warning": 0.4, "error": 0.35, "critical": 0.25},
        scale(
            {"warning": (75, 88), "error": (88, 98), "critical": (98, 100)},
            _pct,
            _pick(
                {
                    "warning": [""],
                    "error": ["Connections queue at peak."],
                    "critical": ["New connections are rejected."],
                }
            ),
        ),
        ("{lb} is at {value} of maxconn", "{Proxy} {lb} connections {value} of the limit"),
        ("{note}",),
        "haproxy_frontend_current_sessions",
        numeric=True,
    ),
    # -- network -------------------------------------------------------------------------------------
    Kind(
        "packet_loss",
        "link",
        ("network",),
        (
            "Packet Loss High",
            "Network Packet Loss",
            "Probe Packet Loss",
            "Zone Packet Loss",
            "Packet Drops Between Sites",
        ),
        {"info": 0.1, "warning": 0.35, "error": 0.3, "critical": 0.25},
        scale({"info": (0.02, 0.4), "warning": (0.4, 2.5), "error": (2.5, 12), "critical": (12, 70)}, _pct),
        (
            "{value} packet loss between {a} and {b}",
            "ICMP probes from {a} to {b} lose {value}",
            "Packet loss {a} -> {b}: {value}",
        ),
        ("Measured by the probes of {device}.", "Loss above {threshold} for {dur}."),
        "probe_icmp_packet_loss",
        numeric=True,
    ),
    Kind(
        "bgp_down",
        "link",
        ("network",),
        ("BGP Session Down", "BGP Peer Down", "BGP Neighbor Lost", "Upstream BGP Flap"),
        {"warning": 0.35, "error": 0.35, "critical": 0.3},
        _fixed({lv: _down_facts(lv) for lv in ("warning", "error", "critical")}),
        (
            "BGP session to {peer} on {device} is down ({up}/{total} up)",
            "{device}: {value} BGP peers",
            "{down} of {total} BGP sessions down on {device}",
        ),
        ("Prefixes from {peer} withdrawn.", "Traffic shifts to the remaining peers of {device}."),
        "bgp_session_state",
    ),
    Kind(
        "iface_errors",
        "link",
        ("network",),
        ("Interface CRC Errors", "Switch Port Errors", "Uplink Errors", "Port Flapping"),
        {"info": 0.15, "warning": 0.35, "error": 0.3, "critical": 0.2},
        scale({"info": (0.01, 0.2), "warning": (0.2, 2), "error": (2, 12), "critical": (12, 60)}, _pct),
        (
            "{interface} on {device}: {value} errors",
            "CRC errors on {device} {interface} ({value})",
            "{device} uplink {interface} error rate {value}",
        ),
        ("Errors on {value} of frames.", "The optic of {interface} may be failing."),
        "ifInErrors",
        numeric=True,
    ),
    Kind(
        "vpn_down",
        "link",
        ("network",),
        {
            "warning": ("VPN Tunnel Flapping", "IPsec Tunnel Unstable"),
            "error": ("VPN Tunnel Down", "IPsec Tunnel Down", "Site To Site VPN Down"),
            "critical": ("VPN Tunnel Down", "All VPN Tunnels Down", "Interconnect Down"),
        },
        {"warning": 0.3, "error": 0.4, "critical": 0.3},
        _fixed(
            {
                "warning": lambda rng, f: {
                    "value": f"flapped {(n := rng.randint(3, 9))} times in 1h",
                    "num": n,
                    "thr": 3,
                    "state": "traffic survives on reconnect",
                },
                "error": lambda rng, f: {
                    "value": "1 of 2 tunnels down",
                    "num": 1,
                    "thr": 2,
                    "state": "traffic runs on the backup tunnel",
                },
                "critical": lambda rng, f: {
                    "value": "both tunnels down",
                    "num": 0,
                    "thr": 2,
                    "state": f"{f['b']} is unreachable",
                },
            }
        ),
        ("Tunnel {tunnel} to {b}: {value}", "{tunnel} {value}", "VPN {tunnel} on {device} {value}"),
        ("{State}.",),
        "vpn_tunnel_up",
    ),
    Kind(
        "net_latency",
        "link",
        ("network",),
        ("Network Latency High", "Inter Region Latency", "RTT High", "Cross Zone Latency"),
        {"warning": 0.4, "error": 0.35, "critical": 0.25},
        scale(
            {"warning": (0.06, 0.15), "error": (0.15, 0.6), "critical": (0.6, 5)},
            _ms,
            _pick(
                {
                    "warning": [""],
                    "error": ["Replication and RPCs between the sites slow down."],
                    "critical": ["Connections between the sites time out."],
                }
            ),
        ),
        (
            "RTT between {a} and {b} is {value}",
            "Ping {a} -> {b}: {value}",
            "Network latency {value} from {a} to {b}",
        ),
        ("{note}", "Round-trip time above {threshold} for {dur}. {note}"),
        "probe_icmp_duration_seconds",
        numeric=True,
    ),
    # -- application SLOs ----------------------------------------------------------------------------
    Kind(
        "error_rate",
        "service",
        ("application",),
        (
            "High Error Rate",
            "HTTP 5xx Rate High",
            "Service Error Ratio",
            "API Errors Elevated",
            "Request Failures",
            "Error Ratio SLO",
            "High 5xx Error Rate",
            "Service High HTTP 5xx Error Rate",
        ),
        {"info": 0.1, "warning": 0.3, "error": 0.25, "critical": 0.35},
        scale(
            {"info": (0.1, 0.5), "warning": (0.5, 2), "error": (2, 5), "critical": (5, 80)},
            _pct,
            lambda rng, level, v, f: {
                "code": rng.choice(["500", "503", "5xx"]),
                "window": rng.choice(["5m", "10m", "15m"]),
            },
        ),
        (
            "{service} is returning {value} errors",
            "5xx ratio for {service} is {value} over the last {window}",
            "{value} of {service} requests fail with HTTP {code}",
            "{service} error rate {value}",
            "{service}: {value} of requests failing",
        ),
        ("Error ratio above {threshold} for {dur}.", "{service} answers {code} to {value} of requests."),
        "http_requests_total",
        numeric=True,
    ),
    Kind(
        "latency_p99",
        "service",
        ("application",),
        (
            "High Latency",
            "P99 Latency High",
            "Slow Responses",
            "Request Duration SLO",
            "API Latency Above Target",
        ),
        {"warning": 0.4, "error": 0.35, "critical": 0.25},
        scale(
            {"warning": (0.5, 1.5), "error": (1.5, 6), "critical": (6, 30)},
            _ms,
            _pick(
                {
                    "warning": [""],
                    "error": ["Some clients time out."],
                    "critical": ["Most requests time out.", "Checkout requests time out."],
                }
            ),
        ),
        (
            "p99 latency of {service} is {value}",
            "{service} p99 {value} (target 500ms)",
            "{service} responds in {value} at p99",
        ),
        ("{note}", "Latency above {threshold} for {dur}. {note}"),
        "http_request_duration_seconds",
        numeric=True,
    ),
    Kind(
        "error_budget",
        "service",
        ("application",),
        {
            "warning": ("Error Budget Burn", "SLO Slow Burn", "Availability SLO At Risk"),
            "error": ("Error Budget Burn", "SLO Burn Rate High"),
            "critical": ("Error Budget Fast Burn", "SLO Burn Rate High", "Fast Burn"),
        },
        {"warning": 0.4, "error": 0.3, "critical": 0.3},
        scale(
            {"warning": (1, 4), "error": (4, 12), "critical": (12, 60)},
            lambda rng, v: f"{_num(v)}x",
            lambda rng, level, v, f: {
                "eta": {"warning": "12 days", "error": "3 days", "critical": "2 hours"}[level],
                "window": rng.choice(["1h", "6h", "30m"]),
            },
        ),
        (
            "{service} burns its error budget at {value} ({window})",
            "Burn rate {value} for {service}",
            "{service} SLO: budget burn {value}",
        ),
        ("At this rate the monthly budget is gone in {eta}.",),
        "slo_burn_rate",
        numeric=True,
    ),
    Kind(
        "probe_failing",
        "endpoint",
        ("network",),
        (
            "Endpoint Down",
            "Availability Probe Failing",
            "Uptime Check Failed",
            "Health Check Failing",
            "Synthetic Check Failed",
        ),
        {"warning": 0.3, "error": 0.35, "critical": 0.35},
        _fixed(
            {
                "warning": lambda rng, f: {
                    "value": "2 failures in 30m",
                    "k": 1,
                    "n": 3,
                    "num": 1,
                    "thr": 1,
                    "reason": rng.choice(["HTTP 503", "timeout"]),
                },
                "error": lambda rng, f: {
                    "value": f"failing from 1 of {(n := rng.choice([3, 4, 5]))} locations",
                    "k": 1,
                    "n": n,
                    "num": 1,
                    "thr": 1,
                    "reason": rng.choice(["HTTP 500", "timeout"]),
                },
                "critical": lambda rng, f: {
                    "value": f"failing from all {(n := rng.choice([3, 4, 5]))} locations",
                    "k": n,
                    "n": n,
                    "num": n,
                    "thr": 1,
                    "reason": rng.choice(["HTTP 503", "connection refused", "timeout"]),
                },
            }
        ),
        (
            "{url} probe {value}",
            "Uptime check for {url} failed ({value}): {reason}",
            "{service} health check {value}",
        ),
        ("The probe gets {reason}.", "Checked every minute from {n} regions."),
        "probe_success",
    ),
    Kind(
        "deploy_failed",
        "service",
        ("application",),
        ("Deployment Failed", "Rollout Stuck", "Release Failed", "Argo App Degraded", "Canary Failed"),
        {"info": 0.3, "warning": 0.4, "error": 0.3},
        _fixed(
            {
                "info": lambda rng, f: {
                    "value": "canary rolled back automatically",
                    "num": 1,
                    "thr": 1,
                    "state": "no user impact",
                },
                "warning": lambda rng, f: {
                    "value": f"rollout stuck for {rng.choice([30, 40, 60])}m",
                    "num": 1,
                    "thr": 1,
                    "state": "the old version keeps serving",
                },
                "error": lambda rng, f: {
                    "value": "rollout failed, rollback failed",
                    "num": 1,
                    "thr": 1,
                    "state": "half of the pods run the broken version",
                },
            }
        ),
        (
            "Deploy of {service} {version}: {value}",
            "{service} {version} {value}",
            "{service} release {version}: {value}",
        ),
        ("{State}.", "Argo CD reports Degraded; {state}."),
        "argocd_app_info",
    ),
    Kind(
        "exceptions",
        "service",
        ("application",),
        (
            "Exception Rate High",
            "Unhandled Exceptions",
            "Error Log Spike",
            "NullPointerException Spike",
            "Panic Detected",
        ),
        {"info": 0.25, "warning": 0.35, "error": 0.25, "critical": 0.15},
        scale(
            {"info": (0.5, 5), "warning": (5, 60), "error": (60, 800), "critical": (800, 20000)},
            _rate,
            _pick(
                {
                    "info": [""],
                    "warning": [""],
                    "error": ["Requests hitting that path fail."],
                    "critical": ["Most requests fail with 500."],
                }
            ),
        ),
        (
            "{service} logs {value} exceptions",
            "Unhandled exceptions in {service}: {value}",
            "{value} errors in {service} logs",
        ),
        ("Top: {exc}. {note}", "{exc} at {value}. {note}"),
        "app_exceptions_total",
        numeric=True,
    ),
    Kind(
        "thread_pool",
        "service",
        ("application",),
        (
            "Thread Pool Exhausted",
            "Worker Pool Saturated",
            "JVM Threads Blocked",
            "Request Queue Full",
            "DB Pool Wait High",
        ),
        {"warning": 0.35, "error": 0.35, "critical": 0.3},
        _fixed(
            {
                "warning": lambda rng, f: {
                    "value": f"{(v := rng.randint(80, 92))}% of threads busy",
                    "num": v,
                    "thr": 80,
                },
                "error": lambda rng, f: {
                    "value": f"all threads busy, {rng.randint(50, 400)} requests queued",
                    "num": 100,
                    "thr": 95,
                },
                "critical": lambda rng, f: {
                    "value": f"pool exhausted, {(r := rng.randint(20, 70))}% of requests rejected",
                    "num": r,
                    "thr": 1,
                },
            }
        ),
        ("{service}: {value}", "Thread pool of {service} {value}", "{service} worker pool: {value}"),
        ("Pool size {size}.", "Requests wait for a free worker in {service}."),
        "executor_active_threads",
    ),
    Kind(
        "scheduler",
        "service",
        ("application",),
        (
            "Scheduled Job Missed",
            "Cron Not Running",
            "Scheduler Stalled",
            "Celery Queue Backlog",
            "Sidekiq Latency High",
            "Job Queue Latency",
        ),
        {"warning": 0.4, "error": 0.35, "critical": 0.25},
        scale(
            {"warning": (60, 600), "error": (600, 7200), "critical": (7200, 86400)},
            _secs,
            _pick(
                {
                    "warning": [""],
                    "error": ["Background work is delayed."],
                    "critical": [
                        "Invoices are not sent.",
                        "Password reset emails are not sent.",
                        "The nightly billing run did not execute.",
                    ],
                }
            ),
        ),
        (
            "Jobs of {service} wait {value} in the queue",
            "{service} scheduler: last run {value} ago",
            "Background job latency {value} for {service}",
        ),
        ("{note}", "Workers of {service} are not keeping up. {note}"),
        "sidekiq_queue_latency_seconds",
        numeric=True,
    ),
    Kind(
        "jvm_heap",
        "service",
        ("application",),
        ("JVM Heap High", "GC Pauses Long", "Memory Leak Suspected", "Heap Usage Near Max"),
        {"info": 0.25, "warning": 0.45, "error": 0.3},
        scale({"info": (70, 80), "warning": (80, 90), "error": (90, 98)}, _pct),
        (
            "Heap of {service} at {value}",
            "{service} JVM heap {value} after GC",
            "{service} heap usage {value}",
        ),
        ("Old gen stays at {value} after full GCs.", "GC pauses are growing."),
        "jvm_memory_used_bytes",
        numeric=True,
    ),
    Kind(
        "target_down",
        "target",
        TEAMS,
        ("Target Down", "Scrape Target Missing", "Instances Down", "Service Instances Unavailable"),
        {"warning": 0.4, "error": 0.35, "critical": 0.25},
        _fixed({lv: _down_facts(lv) for lv in ("warning", "error", "critical")}),
        ("{down} of {total} {job} targets are down", "{job}: {value}", "Job {job} has {down} targets down"),
        ("Prometheus cannot scrape {down} of {total} targets of {job}.",),
        "up",
    ),
]
