"""CKV_DGEMMA_3: a Cloud Run v2 service caps its instance count.

Left unset, max_instance_count is the server default (100 instances): on a GPU service that is a
bill, not a safety margin. Passes when template.scaling.max_instance_count is set, or the
service-level scaling block sets max_instance_count or pins a MANUAL instance count. 0 and null count
as unset (0 is what the API reads as "no value"). Outcomes:
- set to a literal >= 1, or to an expression checkov could not evaluate (a variable without default:
  its value comes from the caller, the cap is written): PASSED;
- only inside a dynamic block whose for_each may be empty: UNKNOWN;
- nowhere, or only 0/null: FAILED.
"""

from __future__ import annotations

from typing import Any

from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.terraform.checks.resource.base_resource_check import BaseResourceCheck
from dgemma_tf_values import MISSING, UNRESOLVED, as_int, attr, blocks


def _cap(scaling: dict[str, Any]) -> bool:
    """Whether this scaling block caps the instance count (a literal >= 1 or an expression)."""
    maximum = as_int(attr(scaling, "max_instance_count"))
    return maximum is UNRESOLVED or (isinstance(maximum, int) and maximum >= 1)


def _manual(scaling: dict[str, Any]) -> bool:
    """Whether this service-level scaling block pins a manual instance count."""
    mode = attr(scaling, "scaling_mode")
    return (
        isinstance(mode, str)
        and mode.upper() == "MANUAL"
        and attr(scaling, "manual_instance_count") not in (MISSING, None)
    )


class CloudRunV2MaxInstances(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(
            name="Ensure a Cloud Run v2 service sets template.scaling.max_instance_count",
            id="CKV_DGEMMA_3",
            categories=(CheckCategories.GENERAL_SECURITY,),
            supported_resources=("google_cloud_run_v2_service",),
        )

    def scan_resource_conf(self, conf: dict[str, list[Any]]) -> CheckResult:
        candidates: list[bool] = []  # certainty of each scaling block that caps
        for scaling, certain in blocks(conf, "scaling"):
            if _cap(scaling) or _manual(scaling):
                candidates.append(certain)
        for template, template_certain in blocks(conf, "template"):
            for scaling, certain in blocks(template, "scaling"):
                if _cap(scaling):
                    candidates.append(certain and template_certain)
        if any(candidates):
            return CheckResult.PASSED
        if candidates:
            self.details.append("max_instance_count only in a dynamic block that may not be rendered")
            return CheckResult.UNKNOWN
        self.details.append("no max_instance_count (unset, null or 0): the server default is 100")
        return CheckResult.FAILED


check = CloudRunV2MaxInstances()
