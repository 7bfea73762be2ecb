"""The operator tooling's typed failures that need no heavy imports, so `dgemma`'s exit-code table
(deploy/cli.py) does not load Cloud Storage and the deploy for every command, the services' own
starts included."""

from __future__ import annotations


class DeployError(RuntimeError):
    """A step of the deploy failed; traffic is where it was. The message names the step."""


class WeightsError(RuntimeError):
    """The checkpoint is not usable; the message names the object or file."""


class GpuCheckError(RuntimeError):
    """`dgemma gpu-check` could not measure: the kit did not start or stop on this GPU."""
