"""CKV_DGEMMA_2: a Cloud Run v2 service with a GPU keeps its CPU always allocated.

Cloud Run GPU services require CPU always allocated, i.e. `cpu_idle = false`. Whether a container
without the attribute gets it depends on the provider/API default (it flips with the presence of
`resources`), so the check asks for it written out, on every container of the template.

A template requests a GPU when a container's resources.limits has "nvidia.com/gpu" (not "0") or
node_selector.accelerator is set. Outcomes:
- no GPU requested: PASSED (nothing to hold);
- GPU requested: FAILED if a container surely in the template has cpu_idle true or unset; UNKNOWN if
  some cpu_idle is an expression checkov could not evaluate, or the offending container comes from a
  dynamic block whose for_each may be empty; PASSED otherwise;
- GPU possibly requested (limits or accelerator from an unevaluated expression, or a dynamic block):
  PASSED if every container says cpu_idle = false, UNKNOWN otherwise.
Note: a map variable without default reaches checkov as {} and so cannot reveal a GPU limit.
"""

from __future__ import annotations

import re
from typing import Any

from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.terraform.checks.resource.base_resource_check import BaseResourceCheck
from dgemma_tf_values import MISSING, UNRESOLVED, as_bool, attr, blocks, unwrap

GPU_LIMIT = "nvidia.com/gpu"
# An accelerator written as a literal ("nvidia-l4"), not an expression checkov left as text.
_LITERAL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


def _gpu_in_limits(limits: Any) -> bool | None:
    """True/False for limits checkov evaluated to a map, None for an expression."""
    if limits is MISSING or limits is None:
        return False
    if not isinstance(limits, dict):
        return None
    if GPU_LIMIT not in limits:
        return False
    return unwrap(limits[GPU_LIMIT]) not in (0, "0", None)


class CloudRunV2GpuCpuAlwaysAllocated(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(
            name="Ensure a Cloud Run v2 service with a GPU keeps CPU always allocated (cpu_idle = false)",
            id="CKV_DGEMMA_2",
            categories=(CheckCategories.GENERAL_SECURITY,),
            supported_resources=("google_cloud_run_v2_service",),
        )

    def scan_resource_conf(self, conf: dict[str, list[Any]]) -> CheckResult:
        gpu: bool | None = False  # None: possibly
        cpu_bad: list[str] = []
        cpu_unknown: list[str] = []
        for template, template_certain in blocks(conf, "template"):
            for selector, certain in blocks(template, "node_selector"):
                accelerator = attr(selector, "accelerator")
                if accelerator is MISSING or accelerator is None or accelerator == "":
                    continue
                literal = isinstance(accelerator, str) and _LITERAL_NAME.fullmatch(accelerator)
                if literal and certain and template_certain:
                    gpu = True
                elif gpu is False:
                    gpu = None
            for index, (container, container_certain) in enumerate(blocks(template, "containers")):
                where = f"containers[{index}]"
                resources = blocks(container, "resources")
                if not resources:
                    (cpu_bad if container_certain else cpu_unknown).append(f"{where}: no resources block")
                    continue
                for body, resources_certain in resources:
                    certain = template_certain and container_certain and resources_certain
                    has_gpu = _gpu_in_limits(attr(body, "limits"))
                    if has_gpu is True and certain:
                        gpu = True
                    elif has_gpu is not False and gpu is False:
                        gpu = None
                    idle = as_bool(attr(body, "cpu_idle"))
                    if idle is False:
                        continue
                    if idle is UNRESOLVED:
                        cpu_unknown.append(f"{where}: cpu_idle not evaluated by checkov")
                    else:
                        problem = f"{where}: cpu_idle {'= true' if idle is True else 'unset'}"
                        (cpu_bad if certain else cpu_unknown).append(problem)
        if gpu is False:
            return CheckResult.PASSED
        if gpu is True and cpu_bad:
            self.details.extend(cpu_bad)
            return CheckResult.FAILED
        if cpu_bad or cpu_unknown:
            self.details.extend(cpu_bad + cpu_unknown)
            return CheckResult.UNKNOWN
        return CheckResult.PASSED


check = CloudRunV2GpuCpuAlwaysAllocated()
