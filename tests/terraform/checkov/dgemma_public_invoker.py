"""CKV_DGEMMA_1: the Cloud Run v2 service stays private.

Built-in checkov only looks at the v1 IAM resources (CKV_GCP_102), so an `allUsers` invoker on a v2
service passes it. Fails on:
- google_cloud_run_v2_service_iam_member / _iam_binding / _iam_policy granting allUsers or
  allAuthenticatedUsers any role on the service (roles/run.invoker is the one that opens it to the
  internet; any other grant to the public is no better on a private service). For _iam_policy the
  policy_data may come from a `google_iam_policy` data source (checkov substitutes its bindings) or a
  jsonencode()d document;
- google_cloud_run_v2_service with invoker_iam_disabled = true (no IAM check on invocation at all).
A member or flag checkov could not evaluate (a variable without default, a resource attribute) gives
UNKNOWN, which checkov leaves out of the report; a member written with its kind
("serviceAccount:${...}") is private.
"""

from __future__ import annotations

import json
from typing import Any

from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.terraform.checks.resource.base_resource_check import BaseResourceCheck
from dgemma_tf_values import MISSING, UNRESOLVED, as_bool, attr, principal_kind, string_list

SERVICE = "google_cloud_run_v2_service"


class CloudRunV2NotPublic(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(
            name="Ensure a Cloud Run v2 service is not public (no allUsers/allAuthenticatedUsers, "
            "invoker IAM check not disabled)",
            id="CKV_DGEMMA_1",
            categories=(CheckCategories.IAM,),
            supported_resources=(
                SERVICE,
                f"{SERVICE}_iam_member",
                f"{SERVICE}_iam_binding",
                f"{SERVICE}_iam_policy",
            ),
        )

    def scan_resource_conf(self, conf: dict[str, list[Any]]) -> CheckResult:
        if self.entity_type == SERVICE:
            return self._invoker_check(conf)
        if self.entity_type == f"{SERVICE}_iam_member":
            members = string_list(conf.get("member", MISSING))
        elif self.entity_type == f"{SERVICE}_iam_binding":
            members = string_list(conf.get("members", MISSING))
        else:
            members = self._policy_members(attr(conf, "policy_data"))
            if members == []:
                return CheckResult.PASSED  # a policy without bindings grants nothing
        if members is None:
            self.details.append("members not evaluated by checkov")
            return CheckResult.UNKNOWN
        if not members:
            # A grant to nobody is pointless: an empty list is an unresolved list variable.
            self.details.append("empty member list: a list variable checkov could not evaluate?")
            return CheckResult.UNKNOWN
        kinds = {m: principal_kind(m) for m in members}
        public = [m for m, kind in kinds.items() if kind == "public"]
        if public:
            self.details.append(f"grants the service to {', '.join(map(str, public))}")
            return CheckResult.FAILED
        unresolved = [m for m, kind in kinds.items() if kind == "unresolved"]
        if unresolved:
            self.details.append(f"member(s) not evaluated: {', '.join(map(str, unresolved))}")
            return CheckResult.UNKNOWN
        return CheckResult.PASSED

    def _invoker_check(self, conf: dict[str, list[Any]]) -> CheckResult:
        disabled = as_bool(attr(conf, "invoker_iam_disabled"))
        if disabled is True:
            self.details.append("invoker_iam_disabled = true: anyone who reaches the URL may invoke")
            return CheckResult.FAILED
        if disabled is UNRESOLVED:
            self.details.append("invoker_iam_disabled not evaluated by checkov")
            return CheckResult.UNKNOWN
        return CheckResult.PASSED

    @staticmethod
    def _policy_members(policy: Any) -> list[Any] | None:
        """Every member of every binding, or None when the policy was not (fully) evaluated."""
        if isinstance(policy, str):
            try:
                policy = json.loads(policy)
            except ValueError:
                return None  # the text of a reference checkov did not follow
        if not isinstance(policy, dict):
            return None
        # jsonencode()d documents say "bindings"; a google_iam_policy data source's blocks, "binding".
        bindings = policy.get("bindings", policy.get("binding"))
        if bindings is None:
            return None
        if not isinstance(bindings, list):
            bindings = [bindings]
        members: list[Any] = []
        for binding in bindings:
            found = string_list(binding.get("members", MISSING)) if isinstance(binding, dict) else None
            if not found:
                return None  # unset, or empty like an unresolved list variable
            members.extend(found)
        return members


check = CloudRunV2NotPublic()
