"""The alert router's settings section (`dgemma alerts serve`): `DGEMMA_ALERTS_*` env vars."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import NoDecode

from app.core.config import KitSettings, comma_list
from app.core.secrets import KeyFile

DEFAULT_POLICY = Path(__file__).resolve().parent / "default_policy.toml"


class AlertRouterSettings(KitSettings):
    """The alert router: where it listens, the gateway it asks, how it checks its senders."""

    alerts_host: str = "127.0.0.1"
    """Address the router listens on (`0.0.0.0` in its container)."""
    alerts_port: int = Field(
        8090, validation_alias=AliasChoices("PORT", "DGEMMA_ALERTS_PORT"), ge=1, le=65535
    )
    """Router port. Cloud Run's `PORT` (the router's own service) wins over `DGEMMA_ALERTS_PORT`."""
    alerts_metrics_port: int | None = Field(None, ge=1, le=65535)
    """A second listener, on 127.0.0.1, serving `/metrics` alone without credentials: for a collector
    in the same Cloud Run instance (Google's Prometheus sidecar cannot send a sender's token; Cloud
    Run sends outside requests to the container's port only). Unset: none; the router's own `/metrics`
    asks for any sender's credential."""
    alerts_policy_file: Path = DEFAULT_POLICY
    """The routing policy (TOML): questions, thresholds, uncertain band, teams, routes, sinks; checked
    at start. The default classifies into three example teams and prints pages to the console."""

    alerts_mode: Literal["act", "shadow"] = "act"
    """`act`: pages follow the policy. `shadow`: every firing alert pages as it was sent (the
    fallback route, the sender's own severity) and the policy's decision is only recorded, so that a
    team can trial the classifier for weeks and read the record with `dgemma alerts report`."""
    alerts_audit_file: Path | None = None
    """A JSON Lines file that gets every decision's audit record (page, ticket, drop, late update,
    resolution), beside the log line each record always is. On Cloud Run, read the log instead
    (`jsonPayload.audit`): the instance's disk is memory."""

    alerts_ledger_url: str | None = None
    """Where the ledger keeps each alert episode's decision and what each sink got: `gs://bucket/prefix`,
    shared by every instance and revision of the router (Terraform makes the bucket, writable by the
    router's identity only), so that a page goes out once across instances, restarts and deploys, and
    a fallback page's late classification survives its instance. Unset: this process's memory (one
    instance; a restart forgets it)."""
    alerts_ledger_claim_s: float = Field(60.0, ge=1, le=600)
    """How long a process's claim on a send (or on a late classification, renewed as it runs) keeps
    other processes off it. Past it, a crashed process's work is taken over; longer than a sink's
    slowest call with its retries."""
    alerts_ledger_timeout_s: float = Field(1.0, gt=0, le=30)
    """The most one call to the ledger's store may take, its retries included; on a delivery's path,
    every call also answers by the delivery's arrival plus the decision budget plus this. A call that
    fails or runs out of time marks the store away: the router then routes from this process's memory
    at once (each alert paged at most once more per process, never held or lost), tries the store
    again every 2 s, and writes what it decided meanwhile once the store answers."""
    alerts_ledger_scan_s: float = Field(30.0, gt=0, le=3600)
    """How often the router looks for fallback pages whose classification no live process is doing
    (besides at start and on each delivery)."""

    alerts_gateway_url: str = "http://127.0.0.1:8080"
    """The decision service (the gateway) the router asks."""
    alerts_gateway_api_key: SecretStr | None = None
    """API key the router sends the gateway (`Authorization: Bearer`)."""
    alerts_gateway_api_key_file: Path | None = None
    """File holding that key (a Secret Manager mount, the service's keys one per line: the first is
    sent); re-read every `DGEMMA_ALERTS_GATEWAY_API_KEY_RELOAD_S`, and on a 401 the file's other keys
    are tried, so a rotation (`dgemma keys rotate`) needs no restart and has no 401 window."""
    alerts_gateway_api_key_reload_s: float = Field(60.0, ge=0)
    """How often the router re-reads that file (the gateway re-reads its own as often)."""
    alerts_id_token: bool = False
    """Send the gateway an ID token for its URL (google-auth: the metadata server on Cloud Run), as a
    private Cloud Run service requires."""
    alerts_decision_budget_s: float = Field(5.0, gt=0, le=60)
    """How long an alert may wait for its classification. Past it, or when the gateway is not ready,
    the page goes out unclassified on the policy's fallback route at once and is updated when the
    classification arrives. Keep it well under the senders' deadline: Alertmanager gives a
    notification, retries included, max(group_interval, 10 s)."""
    alerts_reclassify_for_s: float = Field(1800.0, gt=0)
    """How long the router keeps trying to classify an alert it paged unclassified (a scaled-to-zero
    GPU service takes minutes to start)."""
    alerts_max_concurrency: int = Field(8, ge=1, le=256)
    """Alerts of one group classified at once (one decision each)."""

    alerts_alertmanager_token: SecretStr | None = None
    """Bearer token Alertmanager sends (`http_config.authorization.credentials`). This and the five
    settings below take one value per line, each accepted: to rotate, add the new line, move the
    sender to it, then remove the old one (docs/alert-routing.md)."""
    alerts_alertmanager_basic: SecretStr | None = None
    """`user:password` Alertmanager sends (`http_config.basic_auth`), instead of or beside the token."""
    alerts_grafana_token: SecretStr | None = None
    """Bearer token of the Grafana webhook contact point (its Authorization header credentials)."""
    alerts_grafana_basic: SecretStr | None = None
    """`user:password` of the Grafana contact point's basic auth."""
    alerts_cloud_monitoring_token: SecretStr | None = None
    """Token in the URL of a Cloud Monitoring `webhook_tokenauth` channel."""
    alerts_cloud_monitoring_basic: SecretStr | None = None
    """`user:password` of a Cloud Monitoring `webhook_basicauth` channel."""
    alerts_heartbeats: Annotated[list[str], NoDecode] = Field(default_factory=lambda: ["Watchdog"])
    """Alert names, comma-separated, that are a sender's heartbeat, not an incident (Alertmanager's
    always-firing Watchdog): never classified or paged; each arrival sets
    `dgemma_alerts_heartbeat_timestamp_seconds`, which an absence alert outside the router watches
    (the dead-man's switch: docs/alert-routing.md)."""
    alerts_allow_open_senders: bool = False
    """Accept a source with no credential configured (local use: `dgemma dev` turns it on). Off, a
    source without credentials answers 401 to everything, and the router logs it at start."""

    @field_validator("alerts_heartbeats", mode="before")
    @classmethod
    def _split_commas(cls, value: object) -> object:
        return comma_list(value)

    @model_validator(mode="after")
    def _files_exist(self) -> AlertRouterSettings:
        for name, path in (
            ("DGEMMA_ALERTS_POLICY_FILE", self.alerts_policy_file),
            ("DGEMMA_ALERTS_GATEWAY_API_KEY_FILE", self.alerts_gateway_api_key_file),
        ):
            if path is not None and not path.is_file():
                raise ValueError(f"{name}={path} is not a readable file")
        if self.alerts_ledger_url is not None:
            from app.core.storage import parse_gs

            try:
                parse_gs(self.alerts_ledger_url)
            except ValueError as e:
                raise ValueError(f"DGEMMA_ALERTS_LEDGER_URL: {e}") from e
        return self

    def gateway_key(self) -> str | KeyFile | None:
        """The key for the gateway: the setting's, or its file's, re-read every
        `DGEMMA_ALERTS_GATEWAY_API_KEY_RELOAD_S` (its first key sent; the others tried on a 401, so
        that `dgemma keys rotate` gives the router a new key with no 401 window)."""
        if self.alerts_gateway_api_key is not None:
            return self.alerts_gateway_api_key.get_secret_value()
        if self.alerts_gateway_api_key_file is not None:
            return KeyFile(self.alerts_gateway_api_key_file, self.alerts_gateway_api_key_reload_s)
        return None
