"""The alert router's metrics (Prometheus, at /metrics)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from app.core.observability import HttpMetrics


class RouterMetrics(HttpMetrics):
    """The alert router's metrics (the decision latency as the router sees it, network included)."""

    def __init__(self) -> None:
        super().__init__()
        r = self.registry
        self.received = Counter(
            "dgemma_alerts_received", "Alerts received.", ["source", "status"], registry=r
        )
        self.classified = Counter(
            "dgemma_alerts_classified", "Alerts classified, by action.", ["action"], registry=r
        )
        self.decisions = Counter(
            "dgemma_alerts_decisions",
            "Decisions on firing alerts (each also an audit record), by mode, action and route; in "
            "shadow mode, what the policy would have done.",
            ["mode", "action", "route"],
            registry=r,
        )
        self.fallback = Counter(
            "dgemma_alerts_fallback", "Alerts paged unclassified on the fallback route.", registry=r
        )
        self.unclassified = Counter(
            "dgemma_alerts_unclassified",
            "Fallback pages never classified (the service stayed down).",
            registry=r,
        )
        self.delivered = Counter(
            "dgemma_alerts_delivered", "Deliveries that reached a sink.", ["sink", "kind"], registry=r
        )
        self.failed = Counter(
            "dgemma_alerts_failed", "Deliveries a sink refused or missed.", ["sink"], registry=r
        )
        self.ledger_failures = Counter(
            "dgemma_alerts_ledger_failures",
            "Calls to the ledger's shared store that failed or did not answer in time, by operation "
            "(create, read, replace, list, delete).",
            ["operation"],
            registry=r,
        )
        self.from_memory = Counter(
            "dgemma_alerts_ledger_memory",
            "Alerts routed while the ledger's store was away, from this process's memory, by outcome "
            "(page, fallback, resolved, duplicate...): another instance may page them once more.",
            ["outcome"],
            registry=r,
        )
        self.ledger_up = Gauge(
            "dgemma_alerts_ledger_up",
            "1 while the ledger's shared store answers, 0 while the router routes from memory.",
            registry=r,
        )
        self.ledger_backlog = Gauge(
            "dgemma_alerts_ledger_backlog",
            "Facts created from memory while the ledger's store was away, not yet written to it.",
            registry=r,
        )
        self.resumed = Counter(
            "dgemma_alerts_resumed",
            "Late classifications of fallback pages this process took over (from the ledger's pending list).",
            registry=r,
        )
        self.heartbeats = Counter(
            "dgemma_alerts_heartbeats",
            "Heartbeat alerts received (Alertmanager's always-firing Watchdog), by source: never paged.",
            ["source"],
            registry=r,
        )
        self.heartbeat_at = Gauge(
            "dgemma_alerts_heartbeat_timestamp_seconds",
            "When the last heartbeat alert arrived, in unix seconds, by source: the dead-man's switch "
            "alerts when it grows old or goes missing.",
            ["source"],
            registry=r,
        )
        self.pending = Gauge(
            "dgemma_alerts_pending_classifications",
            "Fallback pages still waiting for their late classification (the ledger's list at the "
            "last scan, and this process's own).",
            registry=r,
        )
        self.pending_age = Gauge(
            "dgemma_alerts_pending_oldest_seconds",
            "Age of the oldest fallback page still waiting for its classification (0: none waits).",
            registry=r,
        )
        self.decision_seconds = Histogram(
            "dgemma_alerts_decision_seconds",
            "Time to an alert's classification, from the router (within the budget only).",
            buckets=(0.1, 0.25, 0.5, 1, 2, 4, 8, 16),
            registry=r,
        )
