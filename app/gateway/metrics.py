"""The gateway's metrics (Prometheus, at /metrics)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from app.core.observability import HttpMetrics


class Metrics(HttpMetrics):
    """The gateway's metrics."""

    def __init__(self) -> None:
        super().__init__()
        self.decision_seconds = Histogram(
            "dgemma_decision_seconds",
            "Time to answer a decision request (successful ones).",
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32),
            registry=self.registry,
        )
        self.reads_per_question = Histogram(
            "dgemma_engine_reads_per_question",
            "Engine reads a question took (re-reads and chunk reads included).",
            buckets=(0, 1, 2, 3, 4, 6, 8, 12, 16, 32),
            registry=self.registry,
        )
        self.inflight = Gauge(
            "dgemma_decisions_inflight", "Decisions being read now.", registry=self.registry
        )
        self.queued = Gauge(
            "dgemma_decisions_queued", "Decisions waiting for a slot.", registry=self.registry
        )
        self.units_in_use = Gauge(
            "dgemma_admission_units_in_use",
            "Admission units held by decisions being read (a unit per started engine call of reads).",
            registry=self.registry,
        )
        self.shed = Counter(
            "dgemma_decisions_shed",
            "Decisions turned away with 429: the line was full, no slot came within the wait limit, or "
            "none would come in time to answer before the deadline.",
            ["reason"],
            registry=self.registry,
        )
        self.timed_out = Counter(
            "dgemma_decisions_timed_out",
            "Decisions whose reads were cancelled at their client's stated timeout, answered 503 with "
            "Retry-After.",
            registry=self.registry,
        )
        self.cancelled = Counter(
            "dgemma_decisions_cancelled",
            "Decisions cancelled because the client went away before the answer.",
            registry=self.registry,
        )
