"""The operator tooling's typed failures that need no heavy imports, so `dgemma`'s exit-code table
(deploy/cli.py) does not load Cloud Storage and the deploy for every command, the services' own
starts included."""

from __future__ import annotations

from app.core.errors import KitError


class DeployError(KitError, RuntimeError):
    """A step of the deploy failed; traffic is where it was. The message names the step."""

    exit_code = 1
    label = "deploy failed"


class WeightsError(KitError, RuntimeError):
    """The checkpoint is not usable; the message names the object or file."""

    exit_code = 2
    label = "weights"


class GpuCheckError(KitError, RuntimeError):
    """`dgemma gpu-check` could not measure: the kit did not start or stop on this GPU."""

    exit_code = 1
    label = "gpu check"
