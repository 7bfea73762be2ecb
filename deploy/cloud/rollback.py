"""`dgemma rollback`: the traffic back to the revision that served before (or `--to` one), and the
alert router back to its settings before, through Terraform and the deploy history kept beside the
state (deploy/cloud/history.py). The GPU service's template stays the last one applied, so no
revision is made, only the traffic moves; the variables the rollback applied become the history's
and the work folder's, so the next Terraform run keeps it, and the next `dgemma deploy` gates its
revision again before the traffic moves back."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from app.core.config import ConfigError
from deploy.cloud.config import DeployConfig
from deploy.cloud.gcloud import Gcloud
from deploy.cloud.history import History, history_url, router_part
from deploy.cloud.inputs import check_project
from deploy.cloud.shell import Shell
from deploy.cloud.terraform import GPU_SERVICE, Terraform, tfvars

PARTS = ("service", "router")


def rollback(cfg: DeployConfig, console: Console, *, to: str = "", parts: tuple[str, ...] = PARTS) -> int:
    """Roll `parts` back; 0 when done. A target that is not there is refused (exit 2) before any
    apply."""
    check_project(cfg, "rollback", "gcloud", "terraform")
    shell = Shell(console, cfg.directory, dry_run=cfg.dry_run)
    if not cfg.dry_run:
        cfg.directory.mkdir(parents=True, exist_ok=True)
    tf, gcloud = Terraform(cfg, shell), Gcloud(cfg, shell)
    tf.init(tfvars(cfg, "baked"))
    history = History.read(gcloud)
    if history is None or not history.applied:
        raise ConfigError(
            f"no deploy history in {history_url(cfg)}: nothing this kit deployed to roll back to "
            "(deploys before the history was kept wrote none; deploy once, or move the traffic "
            "with gcloud run services update-traffic)"
        )
    variables = dict(history.applied)
    plan: list[tuple[str, tuple[str, ...]]] = []
    live = gcloud.describe_service()
    serving = live.serving if live else ""
    now = serving
    if history.undo and history.undo_parts == list(parts) and not to:
        return _undo(cfg, console, tf, gcloud, history, serving)
    if "service" in parts:
        target = to or _before(history.served, serving, cfg.dry_run)
        known = gcloud.revisions()
        if not cfg.dry_run and target not in known:
            raise ConfigError(f"{target} is not a revision of {cfg.service} (it has {', '.join(known[:5])})")
        if target == serving and not cfg.dry_run:
            raise ConfigError(f"{target} already serves {cfg.service}")
        variables.update(serving_revision=target, candidate_revision="")
        plan.append((f"the traffic of {cfg.service} from {serving} to {target}", (GPU_SERVICE,)))
        history.served.append(target)
        now = target
    changed = len(history.routers) >= 2 and history.routers[-1]["with"] == serving
    if parts == ("router",) and len(history.routers) < 2 and not cfg.dry_run:
        raise ConfigError(f"{cfg.router} has no earlier settings in the history to go back to")
    if parts == ("router",) or ("router" in parts and (changed or cfg.dry_run)):
        # Alone: its last change, whenever it was; with the service: only the change that came with
        # the revision that serves now (the router may not have changed in the last deploy).
        before = history.routers[-2]["variables"] if len(history.routers) >= 2 else {}
        variables.update(before)
        plan.append((f"{cfg.router} back to its settings before its last change", ()))
        history.routers.append({"with": now, "variables": before})
    elif "router" in parts:
        console.print(f"{cfg.router} did not change with {serving}: it stays as it is", markup=False)
    _apply(plan, variables, tf, gcloud, history, list(parts))
    if not cfg.dry_run:
        console.print(
            "rolled back: " + "; ".join(why for why, _ in plan) + ". The next `dgemma deploy` gates its "
            "revision again before the traffic moves; `dgemma rollback` again undoes this one."
        )
    return 0


def _undo(
    cfg: DeployConfig, console: Console, tf: Terraform, gcloud: Gcloud, history: History, serving: str
) -> int:
    """The rollback just before this one taken back: every variable as it was before it (the traffic,
    the router's mode, policy and sinks), the GPU service's traffic first, then the rest."""
    variables, parts = dict(history.undo), list(history.undo_parts)
    target = str(variables.get("serving_revision", ""))
    steps: list[tuple[str, tuple[str, ...]]] = []
    if "service" in parts and target and target != serving:
        steps.append((f"the traffic of {cfg.service} from {serving} back to {target}", (GPU_SERVICE,)))
        history.served.append(target)
    if "router" in parts:
        steps.append((f"{cfg.router} back to its settings before the last rollback", ()))
        history.routers.append({"with": target or serving, "variables": router_part(variables)})
    _apply(steps, variables, tf, gcloud, history, parts)
    if not cfg.dry_run:
        console.print(
            "rolled back the rollback: " + "; ".join(why for why, _ in steps) + ". `dgemma rollback` again "
            "undoes this one."
        )
    return 0


def _apply(
    steps: list[tuple[str, tuple[str, ...]]],
    variables: dict[str, Any],
    tf: Terraform,
    gcloud: Gcloud,
    history: History,
    parts: list[str],
) -> None:
    """Each step's apply of `variables`, recorded as it lands, with what an undo of it applies: the
    variables before the first step."""
    before = dict(history.applied)
    for why, targets in steps:
        tf.apply(variables, why, targets=targets)
        history.applied = dict(variables)
        history.undo, history.undo_parts = before, parts
        history.write(gcloud)


def _before(served: list[str], serving: str, dry_run: bool) -> str:
    """The revision that served before the one serving now."""
    if dry_run:
        return "<the revision that served before>"
    # Its last entry: after a rollback the history ends with the revision rolled back to, so a second
    # rollback goes forward again.
    last = len(served) - 1 - served[::-1].index(serving) if serving in served else len(served) - 1
    earlier = served[:last]
    if not earlier:
        raise ConfigError("no earlier serving revision in the history: name one with --to REVISION")
    return earlier[-1]
