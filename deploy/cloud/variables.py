"""The deploy's settings, one row each: the module variable (terraform/variables.tf), the
`DeployConfig` field, the flag (or the engine's `DGEMMA_ENGINE_*` variable), its help, and which
service it shapes. The flags, the errors' names and the module's values come from here; what a
deploy does not name comes from what was deployed (the history's last applied variables), as
Terraform's state and `gcloud run deploy` keep what a command leaves out. A new setting is one row
here and its `variables.tf` entry (tests/deploy/cloud/test_module_variables.py holds the two alike).

What each row's `touches` means for a redeploy: `gpu` settings are in the GPU revision's template (a
change makes a new revision, gated); `router`, `monitoring` and `project` ones are not (applied
without a new revision or a cold start); `both` is in the two services'."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.core.config import ConfigError, env_names

if TYPE_CHECKING:
    from deploy.cloud.config import DeployConfig

TOUCHES = ("gpu", "router", "both", "monitoring", "project")


def _same(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


@dataclass(frozen=True)
class Setting:
    """One deploy setting: module variable, field, flag; `to_variable`/`to_field` convert between the
    field's value and the variable's (a policy file and its text, labels and their map)."""

    variable: str
    field: str  # a DeployConfig field, or "engine.NAME": EngineSettings' NAME (DGEMMA_ENGINE_NAME)
    flag: str  # "--name"; "" for the engine's settings, which come from the environment
    help: str
    touches: str
    group: str = "service"  # the --help section
    kind: str = "value"  # value | int | list | bool | file
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    to_variable: Callable[[Any], Any] = _same
    to_field: Callable[[Any], Any] = _tuple

    @property
    def name(self) -> str:
        """What the errors and `--reset` call it: the flag without dashes, or the variable's env name."""
        if self.flag:
            return self.flag.removeprefix("--")
        return env_names(_engine_settings())[self.engine_field][0]

    @property
    def engine_field(self) -> str:
        return self.field.removeprefix("engine.")

    @property
    def on_engine(self) -> bool:
        return self.field.startswith("engine.")

    def value(self, cfg: DeployConfig) -> Any:
        """The field's value in `cfg` (the engine's from its settings)."""
        return getattr(cfg.engine, self.engine_field) if self.on_engine else getattr(cfg, self.field)

    def default(self) -> Any:
        from deploy.cloud.config import DeployConfig

        if self.on_engine:
            return _engine_settings().model_fields[self.engine_field].default
        return DeployConfig.__dataclass_fields__[self.field].default


def _engine_settings() -> Any:
    from deploy.runtime.settings import EngineSettings

    return EngineSettings


def _text(path: Path | None) -> str:
    return path.read_text() if path else ""


def _labels(labels: tuple[str, ...]) -> dict[str, str]:
    return {key: value for key, _, value in (label.partition("=") for label in labels)}


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "weights_prefix",
        "weights_prefix",
        "--weights-prefix",
        "its folder in the weights bucket",
        "gpu",
        group="weights",
        metavar="PREFIX",
    ),
    Setting(
        "weights_version",
        "weights_version",
        "--weights-version",
        "the checkpoint's folder under the prefix, its manifest's digest (set by --checkpoint; another "
        "serves a checkpoint uploaded before)",
        "gpu",
        group="weights",
        metavar="DIGEST",
    ),
    Setting(
        "weights_mode",
        "weights_mode",
        "--weights-mode",
        "how instances get the checkpoint; auto: the fastest start whose memory budget fits",
        "gpu",
        group="weights",
        choices=("auto", "baked", "download", "gcs_fuse"),
    ),
    Setting(
        "invokers",
        "invokers",
        "--invoker",
        "principal that may call it (repeat)",
        "project",
        kind="list",
        metavar="PRINCIPAL",
    ),
    Setting(
        "max_instance_count",
        "max_instances",
        "--max-instances",
        "at most this many L4s at once",
        "gpu",
        kind="int",
    ),
    Setting(
        "l4_gpu_quota",
        "l4_quota",
        "--l4-quota",
        "the project's L4 quota in the region",
        "project",
        kind="int",
    ),
    Setting(
        "cold_start_budget_s",
        "cold_start_budget_s",
        "--cold-start-budget",
        "seconds to ready (<= 1800)",
        "gpu",
        kind="int",
        metavar="SECONDS",
    ),
    Setting(
        "calibration",
        "calibration",
        "--calibration",
        "a `dgemma calibrate` file for the gateway to serve by (docs/eval-and-calibration.md)",
        "gpu",
        kind="file",
        to_variable=_text,
    ),
    Setting(
        "labels",
        "labels",
        "--label",
        "on every resource (repeat)",
        "both",
        kind="list",
        metavar="KEY=VALUE",
        to_variable=_labels,
        to_field=lambda labels: tuple(f"{k}={v}" for k, v in labels.items()),
    ),
    Setting("cpu", "cpu", "--cpu", "vCPUs of a GPU instance: 4, 6 or 8", "gpu"),
    Setting("memory", "memory", "--memory", "memory of a GPU instance: 16Gi to 32Gi", "gpu"),
    Setting(
        "gpu_zonal_redundancy_disabled",
        "zonal_redundancy",
        "--zonal-redundancy",
        "GPU failover across zones: a higher price and its own L4 quota (--l4-quota states that one)",
        "gpu",
        kind="bool",
        to_variable=lambda on: not on,
        to_field=lambda disabled: not disabled,
    ),
    Setting(
        "log_level",
        "log_level",
        "--log-level",
        "both services': DEBUG, INFO, WARNING or ERROR",
        "both",
    ),
    Setting(
        "billing_account",
        "billing_account",
        "--billing-account",
        "with --budget: a monthly budget alert on the project (needs a billing role on the account)",
        "project",
        metavar="ID",
    ),
    Setting(
        "budget_amount",
        "budget",
        "--budget",
        "a month's budget, in the billing account's currency",
        "project",
        kind="int",
        metavar="AMOUNT",
    ),
    Setting(
        "alerts_policy",
        "alerts_policy",
        "--alerts-policy",
        "its routing policy (TOML); empty: the image's",
        "router",
        group="alert router",
        kind="file",
        to_variable=_text,
    ),
    Setting(
        "alerts_sink_secrets",
        "alerts_sinks",
        "--alerts-sink",
        "a sink secret, mounted at /secrets/sinks/NAME/value; its value added with gcloud (repeat)",
        "router",
        group="alert router",
        kind="list",
        metavar="NAME",
    ),
    Setting(
        "alerts_mode",
        "alerts_mode",
        "--alerts-mode",
        "act on the policy's decisions, or shadow them (page as sent, record what it would do); a new "
        "router starts in shadow",
        "router",
        group="alert router",
        choices=("act", "shadow"),
        to_variable=lambda mode: mode or "shadow",
    ),
    Setting(
        "router_min_instance_count",
        "router_min_instances",
        "--router-min-instances",
        "router instances kept up: 1 answers at once (~$100 a month with its metrics collector); 0 keeps "
        "none, but its uptime check and the Watchdog start one often enough to cost the same",
        "router",
        group="alert router",
        kind="int",
        metavar="N",
    ),
    Setting(
        "notification_channels",
        "notification_channels",
        "--notify",
        "a notification channel of the kit's alert policies, projects/P/notificationChannels/ID (repeat; "
        "none: incidents in the console only)",
        "monitoring",
        group="monitoring",
        kind="list",
        metavar="CHANNEL",
    ),
    Setting(
        "deadman_notification_channels",
        "deadman_channels",
        "--deadman-notify",
        "a channel of the router's dead-man's switch and uptime alerts: one that does not pass through "
        "the router (repeat)",
        "monitoring",
        group="monitoring",
        kind="list",
        metavar="CHANNEL",
    ),
    Setting(
        "deadman_switch",
        "deadman_switch",
        "--deadman-switch",
        "the dead-man's switch: a page when Alertmanager's Watchdog stops reaching the router; off where "
        "no Alertmanager sends one (Grafana or Cloud Monitoring alone), or it fires for ever",
        "monitoring",
        group="monitoring",
        kind="bool",
    ),
    Setting(
        "gpu_uptime_check",
        "gpu_uptime_check",
        "--gpu-uptime-check",
        "an uptime check of the GPU service every 15 min: it keeps an L4 up around the clock (about "
        "$1,022 a month)",
        "monitoring",
        group="monitoring",
        kind="bool",
    ),
    Setting("engine_max_num_seqs", "engine.engine_max_num_seqs", "", "the engine's sequences at once", "gpu"),
    Setting("engine_canvas", "engine.engine_canvas", "", "the engine's canvas tokens", "gpu"),
    Setting("engine_prompt_tokens", "engine.engine_prompt_tokens", "", "the engine's prompt budget", "gpu"),
)
BY_NAME = {s.name: s for s in SETTINGS}
BY_VARIABLE = {s.variable: s for s in SETTINGS}
# Variables outside the GPU revision's template: a change to them alone makes no new revision.
NOT_IN_REVISION = frozenset(s.variable for s in SETTINGS if s.touches in ("router", "monitoring", "project"))
MONITORING = tuple(s.variable for s in SETTINGS if s.touches == "monitoring")


def add_flags(parser: argparse.ArgumentParser) -> None:
    """The settings' flags, by group. None is "not given": the deployed value, or on a first deploy
    the kit's default, which each help names."""
    groups: dict[str, Any] = {}
    for s in SETTINGS:
        if not s.flag:
            continue
        group = groups.get(s.group) or groups.setdefault(s.group, parser.add_argument_group(s.group))
        default = s.default()
        if isinstance(default, bool):
            shown = "on" if default else "off"
        elif isinstance(default, tuple):
            shown = ", ".join(default) or "none"
        else:
            shown = "none" if default in ("", None) else str(default)
        help_ = f"{s.help} (not given: as deployed; kit default: {shown})"
        kwargs: dict[str, Any] = {"dest": s.field, "default": None, "help": help_.replace("%", "%%")}
        if s.kind == "list":
            kwargs |= {"action": "append"}
        elif s.kind == "bool":
            kwargs |= {"action": argparse.BooleanOptionalAction}
        elif s.kind == "int":
            kwargs |= {"type": int}
        elif s.kind == "file":
            kwargs |= {"type": Path}
        if s.kind != "bool" and not s.choices:
            kwargs["metavar"] = s.metavar or {"int": "N", "file": "FILE"}.get(s.kind, s.name.upper())
        if s.choices:
            kwargs["choices"] = list(s.choices)
        group.add_argument(s.flag, **kwargs)
    state = parser.add_argument_group("what is deployed (a deploy changes only what it names)")
    state.add_argument(
        "--reset",
        action="append",
        default=[],
        choices=[s.name for s in SETTINGS],
        metavar="SETTING",
        help="put this setting back to the kit's default (its flag without dashes, e.g. alerts-sink; repeat)",
    )
    state.add_argument(
        "--from-defaults",
        action="store_true",
        help="start from the kit's defaults, not from what is deployed: every setting not given is reset",
    )
    state.add_argument(
        "--allow-paging-change",
        action="store_true",
        help="allow a change of who gets paged: a sink or the policy removed, the router's mode switched, "
        "the last notification channel dropped, the dead-man's switch turned off",
    )


def given(args: argparse.Namespace) -> tuple[dict[str, Any], frozenset[str]]:
    """The command's setting flags given, as DeployConfig values; and every field it names: those,
    and the engine's settings set in the environment (EngineSettings reads their values itself)."""
    values = {
        s.field: _tuple(getattr(args, s.field))
        for s in SETTINGS
        if s.flag and getattr(args, s.field, None) is not None
    }
    names = env_names(_engine_settings())
    engine = {
        s.field for s in SETTINGS if s.on_engine and any(n in os.environ for n in names[s.engine_field])
    }
    return values, frozenset(values) | engine


def module_values(cfg: DeployConfig) -> dict[str, Any]:
    """The settings' module variables for `cfg` (the weights mode as `cfg` has it resolved)."""
    return {s.variable: s.to_variable(s.value(cfg)) for s in SETTINGS}


def remembered(cfg: DeployConfig, applied: dict[str, Any]) -> DeployConfig:
    """`cfg` with every setting the command did not name taken from `applied` (the last apply's
    variables), unless reset (`--reset`, `--from-defaults`). A policy or calibration that was applied
    is written to the work folder, where the checks read it as they read a flag's file."""
    if cfg.from_defaults or not applied:
        return cfg
    changes: dict[str, Any] = {}
    engine: dict[str, Any] = {}
    for s in SETTINGS:
        if s.field in cfg.given or s.name in cfg.reset or s.variable not in applied:
            continue
        value = applied[s.variable]
        if s.kind == "file":
            if not value:
                changes[s.field] = None
                continue
            path = (
                cfg.directory
                / "deployed"
                / f"{s.variable}.{'toml' if s.variable == 'alerts_policy' else 'json'}"
            )
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(value)
            changes[s.field] = path
        elif s.on_engine:
            engine[s.engine_field] = value
        else:
            changes[s.field] = s.to_field(value)
    if engine:
        changes["engine"] = cfg.engine.model_copy(update=engine)
    return replace(cfg, **changes)


@dataclass(frozen=True)
class Change:
    variable: str
    before: Any
    after: Any

    def __str__(self) -> str:
        return f"{self.variable}: {_shown(self.before)} -> {_shown(self.after)}"


def _shown(value: Any) -> str:
    """A value as one short line: a long text (a policy, a calibration) by its size and digest."""
    text = value if isinstance(value, str) else json.dumps(value)
    if isinstance(value, str) and ("\n" in value or len(value) > 60):
        return f"{len(value):,} characters (sha256 {hashlib.sha256(value.encode()).hexdigest()[:8]})"
    return "(none)" if value in ("", [], {}) else text


def changes(applied: dict[str, Any], variables: dict[str, Any]) -> list[Change]:
    """The settings whose variable differs between the last apply and this one, in the table's order."""
    return [
        Change(s.variable, applied.get(s.variable), variables[s.variable])
        for s in SETTINGS
        if s.variable in variables and applied.get(s.variable) != variables[s.variable]
    ]


def paging_changes(applied: dict[str, Any], variables: dict[str, Any]) -> list[str]:
    """What in this deploy changes who gets paged, against the last apply: each a short reason."""
    if not applied:
        return []
    reasons = []
    gone = [n for n in applied.get("alerts_sink_secrets", []) if n not in variables["alerts_sink_secrets"]]
    if gone:
        reasons.append(f"the sink(s) {', '.join(gone)} removed (their secrets and values deleted)")
    if applied.get("alerts_policy") and not variables["alerts_policy"]:
        reasons.append("the routing policy emptied (the image's default pages to the log only)")
    if "alerts_mode" in applied and applied["alerts_mode"] != variables["alerts_mode"]:
        reasons.append(f"the router switched from {applied['alerts_mode']} to {variables['alerts_mode']}")
    for variable, what in (
        ("notification_channels", "the alert policies' last notification channel"),
        ("deadman_notification_channels", "the dead-man's switch's last channel"),
    ):
        if applied.get(variable) and not variables[variable]:
            reasons.append(f"{what} dropped")
    # A deploy from before the variable had the switch on: the module's default.
    if applied.get("deadman_switch", True) and not variables.get("deadman_switch", True):
        reasons.append("the dead-man's switch turned off (no page when the Watchdog stops reaching it)")
    return reasons


def check_paging(cfg: DeployConfig, applied: dict[str, Any], variables: dict[str, Any]) -> None:
    """Refuse (exit 2, before any cloud change) a deploy that changes who gets paged unless it says so."""
    reasons = paging_changes(applied, variables)
    if reasons and not cfg.allow_paging_change:
        raise ConfigError(
            f"this deploy changes who gets paged: {'; '.join(reasons)}. A deploy keeps every setting it "
            "does not name; if this is meant, add --allow-paging-change"
        )
