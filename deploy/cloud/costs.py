"""What the kit costs a month, per scenario, from one model: the prices and assumptions of
deploy/cloud/costs.toml, the `l4` gate profile's instance price, gate length and decisions/s floor
(loadtest/profiles.toml), the checkpoint's size and the cold start (deploy/cloud/start_budget.py), and the
GPU instance's size (deploy/cloud/config.py). docs/deploy.md's cost table is generated from here
(`make docs`). Projections from list prices, not quotes; none of it is billed or measured here.

Every monthly scenario is the idle line (the router, its collector, storage, the router's metrics)
plus what it adds, so that the rows cannot disagree about what idling costs."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from deploy.cloud.config import DeployConfig
from deploy.cloud.start_budget import CHECKPOINT_GB, total

COSTS = Path(__file__).with_name("costs.toml")
Range = tuple[float, float]


class _Table(BaseModel):
    # A misspelt key in costs.toml fails the load instead of falling back to nothing.
    model_config = ConfigDict(extra="forbid", frozen=True)


class Prices(_Table):
    cloud_run_vcpu_s: float
    cloud_run_gib_s: float
    gcs_gb_month: float
    registry_gb_month: float
    cloud_build_min: float
    prometheus_per_million: float


class Router(_Table):
    vcpu: float
    memory_gib: float
    collector_vcpu: float
    collector_memory_gib: float
    uptime_check_s: float
    watchdog_s: float
    start_s: float


class Metrics(_Table):
    scrape_s: float
    series_per_instance: float


class Images(_Table):
    kept: int
    base_gb: float
    kit_gb: float
    router_gb: float


class Storage(_Table):
    checkpoints_kept: int


class DeploySteps(_Table):
    build_min: Range
    gate_extra_s: Range


class CostModel(_Table):
    """costs.toml, with what comes from the other sources."""

    hours_a_month: float
    idle_window_s: float
    prices: Prices
    router: Router
    metrics: Metrics
    images: Images
    storage: Storage
    deploy: DeploySteps
    # Not in costs.toml: each has its own source (CostModel.load).
    profile: str
    l4_hour: float
    gate_s: float
    decisions_per_s: float
    checkpoint_gb: float
    cold_start_s: Range
    l4_vcpu: str
    l4_memory: str

    @classmethod
    def load(cls, path: Path = COSTS, profile: str = "l4") -> CostModel:
        from loadtest.gate import GateProfile

        gate = GateProfile.load(profile)
        defaults = DeployConfig.__dataclass_fields__
        return cls(
            **tomllib.loads(path.read_text()),
            profile=profile,
            l4_hour=gate.hourly_price_usd,
            gate_s=gate.latency_seconds + gate.throughput_seconds,
            decisions_per_s=gate.targets["throughput_decisions_per_s"]["min"],
            checkpoint_gb=CHECKPOINT_GB,
            cold_start_s=total("baked"),  # the default weights mode
            l4_vcpu=defaults["cpu"].default,
            l4_memory=defaults["memory"].default,
        )

    @property
    def month_s(self) -> float:
        return self.hours_a_month * 3600

    def cloud_run(self, vcpu: float, gib: float, seconds: float) -> float:
        return seconds * (vcpu * self.prices.cloud_run_vcpu_s + gib * self.prices.cloud_run_gib_s)

    def router_up(self, *, min_instances: int = 1, watchdog: bool = True, uptime_check: bool = True) -> float:
        """The share of the month a router instance is up, and billed. With none kept, each request
        (the Watchdog's, the uptime check's) starts one, which then stays the idle window: requests
        closer than that keep it up around the clock."""
        if min_instances >= 1:
            return 1.0
        wakes = [
            interval
            for interval, on in (
                (self.router.watchdog_s, watchdog),
                (self.router.uptime_check_s, uptime_check),
            )
            if on
        ]
        if not wakes:
            return 0.0
        return min(1.0, (self.router.start_s + self.idle_window_s) / min(wakes))

    def router_month(
        self, *, min_instances: int = 1, watchdog: bool = True, uptime_check: bool = True
    ) -> float:
        """The router's instance, its collector included."""
        r = self.router
        up = self.router_up(min_instances=min_instances, watchdog=watchdog, uptime_check=uptime_check)
        return self.cloud_run(
            r.vcpu + r.collector_vcpu, r.memory_gib + r.collector_memory_gib, up * self.month_s
        )

    def collector_month(self) -> float:
        return self.cloud_run(self.router.collector_vcpu, self.router.collector_memory_gib, self.month_s)

    def images_gb(self) -> float:
        """The repository at steady state: the base's layers once, then each kept image's own."""
        i = self.images
        return i.base_gb + i.kept * (self.checkpoint_gb + i.kit_gb) + i.kept * i.router_gb

    def checkpoint_month(self) -> float:
        return self.storage.checkpoints_kept * self.checkpoint_gb * self.prices.gcs_gb_month

    def images_month(self) -> float:
        return self.images_gb() * self.prices.registry_gb_month

    def samples_m(self, instance_hours: float) -> float:
        """Millions of samples one collector writes in that many instance hours."""
        return self.metrics.series_per_instance * instance_hours * 3600 / self.metrics.scrape_s / 1e6

    def metrics_month(self, instance_hours: float) -> float:
        return self.samples_m(instance_hours) * self.prices.prometheus_per_million

    def l4_hours(self, every_s: float) -> Range:
        """L4 instance hours a month with one alert every `every_s`: each starts an instance when none
        runs, which stays the idle window after it; alerts closer than that keep it up for good."""
        if every_s <= self.idle_window_s:
            return self.hours_a_month, self.hours_a_month
        alerts = self.month_s / every_s
        low, high = (alerts * (start + self.idle_window_s) / 3600 for start in self.cold_start_s)
        return min(low, self.hours_a_month), min(high, self.hours_a_month)

    def idle(self, *, min_instances: int = 1, watchdog: bool = True) -> Scenario:
        """No request, no alert: the router (kept, or woken by the Watchdog and its uptime check),
        its metrics, the checkpoint and the images."""
        r, i, p = self.router, self.images, self.prices
        up = self.router_up(min_instances=min_instances, watchdog=watchdog)
        router = self.router_month(min_instances=min_instances, watchdog=watchdog)
        collector = up * self.collector_month()
        checkpoint, images = self.checkpoint_month(), self.images_month()
        metrics = self.metrics_month(up * self.hours_a_month)
        row = Scenario(
            "idle: no request, no alert",
            f"the alert router and its metrics collector ({num(r.vcpu + r.collector_vcpu)} vCPU, "
            f"{num(r.memory_gib + r.collector_memory_gib)} GiB), "
            f"{'up around the clock' if up == 1 else f'up {up:.0%} of the month'}; the checkpoint "
            "in its bucket; the images kept",
            f"router {num(up * self.hours_a_month)} h x 3,600 s x ({num(r.vcpu + r.collector_vcpu)} vCPU x "
            f"{price(p.cloud_run_vcpu_s)} + {num(r.memory_gib + r.collector_memory_gib)} GiB x "
            f"{price(p.cloud_run_gib_s)}) = {usd(router)} ({usd(collector)} of it the collector); "
            f"checkpoint {self.storage.checkpoints_kept} x {num(self.checkpoint_gb)} GB x "
            f"{price(p.gcs_gb_month)} = {usd(checkpoint)}; images {num(self.images_gb())} GB x "
            f"{price(p.registry_gb_month)} = {usd(images)} (the vLLM base's {num(i.base_gb)} GB once, "
            f"{i.kept} x ({num(self.checkpoint_gb)} GB of weights + {num(i.kit_gb)} GB) for the GPU "
            f"service, {i.kept} x {num(i.router_gb)} GB for the router); metrics "
            f"{num(self.metrics.series_per_instance)} series every {num(self.metrics.scrape_s)} s = "
            f"{self.samples_m(up * self.hours_a_month):.1f} M samples x {price(p.prometheus_per_million)} a "
            f"million = {usd(metrics)}",
            {"router": pair(router), "storage": pair(checkpoint + images), "metrics": pair(metrics)},
        )
        if not min_instances:
            return row
        cold = usd(self.idle(min_instances=0, watchdog=watchdog).low)
        shown = "the same" if cold == usd(row.low) else cold
        return replace(row, note=f"{shown} with `--router-min-instances 0`, below")

    def alerts_every(self, every_s: float) -> Scenario:
        idle = self.idle()
        hours = self.l4_hours(every_s)
        l4 = scaled(hours, self.l4_hour)
        metrics = scaled(hours, self.metrics_month(1))
        minutes = f"{num(every_s / 60)} min"
        if every_s <= self.idle_window_s:
            runs = (
                "the router asks the GPU service about every firing alert, which starts an L4 instance "
                f"when none runs; {minutes} < the {num(self.idle_window_s / 60)} min an idle instance "
                "stays up: the L4 never scales down"
            )
            arithmetic = f"{num(hours[0])} h x {price(self.l4_hour)}/h = {usd(l4[0])}"
        else:
            alerts = self.month_s / every_s
            start = self.cold_start_s
            runs = (
                f"each one a cold start ({start[0]:.0f}-{start[1]:.0f} s projected) plus "
                f"{num(self.idle_window_s / 60)} min up"
            )
            arithmetic = (
                f"{alerts:,.0f} alerts x ({start[0]:.0f}-{start[1]:.0f} s + {num(self.idle_window_s)} s) = "
                f"{hours[0]:.0f}-{hours[1]:.0f} h x {price(self.l4_hour)}/h = {usd_range(l4)}"
            )
        arithmetic += f"; its metrics {usd_range(metrics)}; plus the idle line, {usd(idle.low)}"
        return Scenario(
            f"an alert every {every(every_s)}",
            runs,
            arithmetic,
            {"idle": pair(idle.low), "L4": l4, "metrics": metrics},
        )

    def sustained(self) -> Scenario:
        idle = self.idle()
        l4 = self.hours_a_month * self.l4_hour
        metrics = self.metrics_month(self.hours_a_month)
        per_1000 = self.l4_hour / (self.decisions_per_s * 3600) * 1000
        return Scenario(
            "sustained load, one L4",
            f"{num(self.decisions_per_s)}+ decisions/s at the gate's floor",
            f"{price(self.l4_hour)} / ({num(self.decisions_per_s)} x 3,600) x 1,000 = ${per_1000:.3f} per "
            f"1,000 decisions; {num(self.hours_a_month)} h x {price(self.l4_hour)}/h = {usd(l4)} per L4 kept "
            f"busy, its metrics {usd(metrics)}; plus the idle line, {usd(idle.low)}",
            {"idle": pair(idle.low), "L4": pair(l4), "metrics": pair(metrics)},
            note=f"{usd(l4 + metrics)} for each more L4, which `--max-instances` caps",
        )

    def each_deploy(self) -> Scenario:
        """One deploy, beside the month: the build, and the candidate's L4 time."""
        build = scaled(self.deploy.build_min, self.prices.cloud_build_min)
        seconds = [
            start + self.gate_s + extra + self.idle_window_s
            for start, extra in zip(self.cold_start_s, self.deploy.gate_extra_s, strict=True)
        ]
        hours = (seconds[0] / 3600, seconds[1] / 3600)
        gpu = scaled(hours, self.l4_hour)
        start, extra = self.cold_start_s, self.deploy.gate_extra_s
        return Scenario(
            "each deploy",
            f"Cloud Build of both images (E2_HIGHCPU_8, {num(self.deploy.build_min[0])}-"
            f"{num(self.deploy.build_min[1])} min with baked weights); the candidate's cold start and "
            "gate beside the serving revision; then one L4 instance idling out "
            f"{num(self.idle_window_s / 60)} min (the candidate's, or the old revision's once the traffic "
            "moves)",
            f"build {num(self.deploy.build_min[0])}-{num(self.deploy.build_min[1])} min x "
            f"{price(self.prices.cloud_build_min)} = {usd_range(build)}; GPU {start[0]:.0f}-{start[1]:.0f} s "
            f"+ the gate's {num(self.gate_s)} s + {num(extra[0])}-{num(extra[1])} s around it + "
            f"{num(self.idle_window_s)} s idle = {hours[0]:.2f}-{hours[1]:.2f} h x {price(self.l4_hour)}/h = "
            f"{usd_range(gpu)}",
            {"build": build, "L4": gpu},
            per="a deploy",
        )

    def scenarios(self) -> list[Scenario]:
        return [
            self.idle(),
            self.alerts_every(600),
            self.alerts_every(3600),
            self.sustained(),
            self.each_deploy(),
        ]

    def preamble(self) -> str:
        return (
            "**Cost, per scenario** (projections from list prices, not quotes, and none billed here: "
            f"the `{self.profile}` profile's {price(self.l4_hour)}/h for an L4 instance with {self.l4_vcpu} "
            f"vCPU and {self.l4_memory.removesuffix('Gi')} GiB, a community estimate; Cloud Run's "
            "instance-based rates; a tier-1 region's list prices for Cloud Storage, Artifact Registry, "
            "Cloud Build and Managed Service for Prometheus; all in deploy/cloud/costs.toml and "
            "loadtest/profiles.toml, computed by deploy/cloud/costs.py. Check your region's prices.) "
            "Cloud Run bills both services per instance while the instance exists, and an instance "
            f"stays up to {num(self.idle_window_s / 60)} minutes after its last request, so what costs "
            "is the hours an instance is up, not the requests. Each month includes the idle line:"
        )

    def assumptions(self) -> list[str]:
        r, i = self.router, self.images
        window = f"{num(self.idle_window_s / 60)} min"
        alone = self.router_up(min_instances=0, watchdog=False) == 1.0
        return [
            "**The router is up around the clock, whatever `--router-min-instances`.** With 1 an "
            "instance is kept; with 0 none is, but Alertmanager's Watchdog, which the dead-man's switch "
            f"needs, reaches it every {every(r.watchdog_s)} and its uptime check every "
            f"{every(r.uptime_check_s)}, each well within the {window} an idle instance stays "
            "up, so one is up all the same"
            + (
                " (with the switch off, the uptime check alone keeps it up)."
                if alone
                else f" (with the switch off, {usd(self.router_month(min_instances=0, watchdog=False))})."
            ),
            f"**Images**: {i.kept} kept per image name (`image_retention_count`), layers shared between "
            "images stored once (the vLLM base's); with baked weights each build downloads the "
            "checkpoint afresh, so each kept image holds a layer of it. Each other checkpoint uploaded "
            "keeps its own folder in the weights bucket: "
            f"{usd(self.checkpoint_gb * self.prices.gcs_gb_month)} a month each.",
            "**Not counted**: Cloud Run's free tier (the billing account's, shared with all it pays "
            "for), alert conditions where Cloud Monitoring's alerting pricing applies, Secret Manager, "
            "the ledger's and the state's object operations, logs within Cloud Logging's free "
            "allotment, taxes.",
        ]


@dataclass(frozen=True)
class Scenario:
    """One row of the table: a month's figure (or a deploy's) as the sum of its parts."""

    name: str
    runs: str
    arithmetic: str
    parts: dict[str, Range] = field(default_factory=dict)
    per: str = "a month"
    note: str = ""

    @property
    def low(self) -> float:
        return sum(low for low, _ in self.parts.values())

    @property
    def high(self) -> float:
        return sum(high for _, high in self.parts.values())

    def figure(self) -> str:
        shown = f"**~{usd_range((self.low, self.high))}{'' if self.per == 'a month' else ' ' + self.per}**"
        return f"{shown} ({self.note})" if self.note else shown


def pair(value: float) -> Range:
    return value, value


def scaled(quantity: Range, price: float) -> Range:
    return quantity[0] * price, quantity[1] * price


def num(x: float) -> str:
    """A quantity or a unit price as written: 730, 0.5, 15.7, 0.000018."""
    return f"{x:,.6f}".rstrip("0").rstrip(".") if x != int(x) else f"{int(x):,}"


def price(x: float) -> str:
    """A unit price: $1.40, $0.10, $0.000018."""
    decimals = len(num(x).partition(".")[2])
    return f"${x:,.{max(2, decimals)}f}"


def every(seconds: float) -> str:
    """An interval as said: "minute", "5 min", "hour"."""
    return {60: "minute", 3600: "hour"}.get(int(seconds), f"{num(seconds / 60)} min")


def usd(x: float) -> str:
    """Dollars, in cents under $100."""
    return f"${x:,.2f}" if x < 100 else f"${x:,.0f}"


def usd_range(r: Range) -> str:
    low, high = usd(r[0]), usd(r[1])
    return low if low == high else f"{low}-{high.removeprefix('$')}"
