"""What `dgemma deploy`, `destroy` and `keys add` are asked for: one dataclass, whose defaults are the
kit's (the commands' flags name them; a deploy's settings it is not given come from what is deployed,
deploy/cloud/variables.py), and the names it derives for the project's resources."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deploy.runtime.settings import EngineSettings

ROOT = Path(__file__).resolve().parents[2]  # the checkout: terraform/, cloudbuild.yaml, Dockerfile
# The alert router's webhook sources; each sender's token is the latest version of its own secret.
SENDERS = ("alertmanager", "grafana", "cloud-monitoring")


@dataclass(frozen=True)
class DeployConfig:
    """What `dgemma deploy` was asked for (flags), with the engine settings it sizes from."""

    project: str
    region: str
    service: str = "dgemma"
    checkpoint: Path | None = None
    weights_prefix: str = "dgemma-w4a16"
    # The checkpoint's folder under the prefix: its manifest's content digest, which --checkpoint sets
    # (each checkpoint its own folder, never overwritten); empty: the prefix itself.
    weights_version: str = ""
    weights_mode: str = "auto"
    invokers: tuple[str, ...] = ()
    max_instances: int = 1
    l4_quota: int = 3
    cold_start_budget_s: int = 900
    profile: str = "l4"
    targets: tuple[str, ...] = ()
    latency_seconds: int | None = None
    throughput_seconds: int | None = None
    warmup_seconds: float = 900
    id_token: str = "auto"
    alerts_policy: Path | None = None  # the router's policy file; none: the image's default policy
    alerts_sinks: tuple[str, ...] = ()  # names of the sinks' secrets (alerts_sink_secrets)
    # act or shadow; None: shadow for a new router, the running router's mode otherwise
    alerts_mode: str | None = None
    calibration: Path | None = None  # the gateway's calibration file; none: raw probabilities
    labels: tuple[str, ...] = ()  # KEY=VALUE, on every resource that takes labels
    cpu: str = "8"  # vCPUs of a GPU instance
    memory: str = "32Gi"  # memory of a GPU instance (its disk too: the weights-mode budget reads it)
    zonal_redundancy: bool = False  # the GPU's zonal redundancy: its own price and quota
    log_level: str = "INFO"
    router_min_instances: int = 1  # 0: none kept, but its uptime check and Watchdog start one (same cost)
    # Cloud Monitoring channels (projects/P/notificationChannels/ID) of the kit's alert policies, and of
    # the dead-man's switch (channels that do not pass through the router)
    notification_channels: tuple[str, ...] = ()
    deadman_channels: tuple[str, ...] = ()
    deadman_switch: bool = True  # off without Alertmanager's Watchdog: its policy would fire for ever
    gpu_uptime_check: bool = False  # an uptime check of the GPU service keeps an L4 up (~$1,022 a month)
    billing_account: str = ""  # with `budget`: a monthly budget alert on the project
    budget: int = 0  # a month's budget, in the billing account's currency
    base_image: str = ""  # the vLLM base (tag or digest); empty: the Dockerfile's VLLM_IMAGE
    allow_dirty: bool = False
    # What the command named (deploy/cloud/variables.py): the fields it gives; the settings (by
    # name) it puts back to the kit's default; all of them; and its leave to change who is paged.
    given: frozenset[str] = frozenset()
    reset: tuple[str, ...] = ()
    from_defaults: bool = False
    allow_paging_change: bool = False
    dry_run: bool = False
    plan: bool = False  # Terraform's plan of the deploy's final apply, then exit
    workdir: Path | None = None
    engine: EngineSettings = field(default_factory=EngineSettings)

    @property
    def directory(self) -> Path:
        return (
            self.workdir or ROOT / ".build" / "deploy" / f"{self.project}-{self.region}-{self.service}"
        ).resolve()

    @property
    def memory_gib(self) -> float:
        return float(self.memory.removesuffix("Gi"))  # checked first: 16Gi to 32Gi (terraform/variables.tf)

    @property
    def weights_folder(self) -> str:
        """The checkpoint's folder in the weights bucket, as terraform/main.tf's `weights_folder`."""
        return (
            f"{self.weights_prefix}/{self.weights_version}" if self.weights_version else self.weights_prefix
        )

    @property
    def weights_url(self) -> str:
        return f"gs://{self.weights_bucket}/{self.weights_folder}"

    @property
    def state_bucket(self) -> str:
        return f"{self.project}-{self.service}-tfstate"

    @property
    def weights_bucket(self) -> str:
        return f"{self.project}-{self.service}-weights"  # as terraform/main.tf names it

    @property
    def router(self) -> str:
        return f"{self.service}-router"  # the router's Cloud Run service (terraform/alerts.tf)

    @property
    def api_keys_secret(self) -> str:
        return f"{self.service}-api-keys"  # as terraform/secrets.tf names it

    def sender_secret(self, source: str) -> str:
        return f"{self.service}-alerts-{source}-token"  # as terraform/main.tf names it

    def sink_secret(self, name: str) -> str:
        return f"{self.service}-alerts-sink-{name}"  # as terraform/main.tf names it


def default(name: str) -> Any:
    """A field's default, as the dataclass writes it (for a flag's `default=` and its help)."""
    return DeployConfig.__dataclass_fields__[name].default
