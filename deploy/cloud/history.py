"""What was deployed, kept beside the Terraform state (`gs://STATE/dgemma/SERVICE/history.json`), so
that `dgemma rollback` works from any machine: the module variables of the last apply, the GPU
revisions that took the traffic, and the alert router's variables at each apply that changed it.
Terraform's state holds resources, not the variables that made them; the rollback needs both."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from deploy.cloud.config import DeployConfig
from deploy.cloud.gcloud import Gcloud
from deploy.cloud.terraform import router_variable
from deploy.errors import DeployError

KEPT = 20  # entries of each list: rollbacks go a few deploys back, not through the whole past


def history_url(cfg: DeployConfig) -> str:
    return f"gs://{cfg.state_bucket}/dgemma/{cfg.service}/history.json"


@dataclass
class History:
    applied: dict[str, Any] = field(default_factory=dict)  # the variables of the last apply
    served: list[str] = field(default_factory=list)  # GPU revisions that took 100 %, oldest first
    # The router's variables at each change, oldest first, each with the GPU revision that took the
    # traffic in the same apply ("with"): a rollback of that revision takes the router's change back.
    routers: list[dict[str, Any]] = field(default_factory=list)
    # Set by a rollback: the variables applied before it and the parts it rolled back, so that the
    # next rollback of the same parts is its undo (back to exactly those variables); a deploy clears it.
    undo: dict[str, Any] = field(default_factory=dict)
    undo_parts: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, gcloud: Gcloud) -> History | None:
        text = gcloud.read_object(history_url(gcloud.cfg), reads="the deploy history")
        if text is None:
            return None
        if gcloud.shell.dry_run:  # what a dry run shows for it: the placeholder, not a history
            return cls(applied={"<variables>": "<the last apply's, from the history>"})
        try:
            return cls(**json.loads(text))
        except (ValueError, TypeError) as e:
            raise DeployError(f"{history_url(gcloud.cfg)} is not a deploy history: {e}") from e

    def write(self, gcloud: Gcloud) -> None:
        self.served, self.routers = self.served[-KEPT:], self.routers[-KEPT:]
        gcloud.write_object(history_url(gcloud.cfg), json.dumps(asdict(self), indent=2) + "\n")

    def record(self, variables: dict[str, Any], *, router: bool, serving: str = "") -> None:
        """One apply: its variables; `router` when it applied the router too; `serving` when the
        traffic moved to that revision."""
        self.applied = dict(variables)
        self.undo, self.undo_parts = {}, []
        if router:
            routed = router_part(variables)
            if not self.routers or self.routers[-1]["variables"] != routed:
                self.routers.append({"with": serving, "variables": routed})
        if serving and (not self.served or self.served[-1] != serving):
            self.served.append(serving)


def router_part(variables: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in variables.items() if router_variable(k)}
