"""How checkov's Terraform parser hands values to a check, and what of it is proof.

Seen with checkov 3.3 (pinned in scripts/checkov.sh):
- every attribute is wrapped in a list (`name = "x"` -> ["x"]; a list attribute -> [["a", "b"]]),
  every nested block is a list of dicts;
- references are replaced by what checkov could evaluate (variable defaults, module inputs, locals,
  even a data source's body); what it could not stays as the expression's text ("var.max",
  "local.x ? 1 : 2", "google_service_account.sa.member");
- but a list- or map-typed variable without a default becomes an empty list or map;
- a `dynamic` block is rendered as a block of that name whatever its for_each (even an empty one),
  and its body is kept under the parent's "dynamic" key.

So the checks read values through these helpers, and FAIL only on a value checkov evaluated;
an expression checkov left unevaluated is never taken for a violation.
This module is loaded by checkov like the checks beside it; it registers no check.
"""

from __future__ import annotations

import re
from typing import Any

PUBLIC_PRINCIPALS = ("allUsers", "allAuthenticatedUsers")
# An IAM member that names its kind ("user:", "serviceAccount:", "principalSet:", ...) is not public,
# even when the rest is an interpolation ("serviceAccount:${google_service_account.sa.email}").
_TYPED_PRINCIPAL = re.compile(r"^[A-Za-z]+:")
# A service account's `member` attribute is "serviceAccount:<email>" by the provider's definition.
_SERVICE_ACCOUNT_MEMBER = re.compile(
    r"^(module\.[\w-]+\.)*(data\.)?google_service_account\.[\w-]+(\[[^\]]*\])?\.member$"
)


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


MISSING = _Marker("MISSING")  # the attribute is not written at all
UNRESOLVED = _Marker("UNRESOLVED")  # written, but checkov left an expression


def unwrap(value: Any) -> Any:
    """The value inside checkov's one-element list wrappers."""
    while isinstance(value, list) and len(value) == 1:
        value = value[0]
    return value


def attr(block: Any, key: str) -> Any:
    """An attribute's value, or MISSING."""
    if not isinstance(block, dict) or key not in block:
        return MISSING
    return unwrap(block[key])


def as_bool(value: Any) -> Any:
    """True/False for a literal boolean (or its string), None for null, MISSING, or UNRESOLVED."""
    if value is MISSING or value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return UNRESOLVED


def as_int(value: Any) -> Any:
    """An int for a literal number (or its string), None for null, MISSING, or UNRESOLVED."""
    if value is MISSING or value is None:
        return value
    if isinstance(value, bool):
        return UNRESOLVED
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*\d+\s*", value):
        return int(value)
    return UNRESOLVED


def principal_kind(member: Any) -> str:
    """'public', 'private' (a typed member, or a service account's `member`), or 'unresolved'
    (anything else checkov did not evaluate)."""
    if member in PUBLIC_PRINCIPALS:
        return "public"
    if isinstance(member, str) and (_TYPED_PRINCIPAL.match(member) or _SERVICE_ACCOUNT_MEMBER.match(member)):
        return "private"
    return "unresolved"


def string_list(value: Any) -> list[Any] | None:
    """The items of a list attribute as checkov wraps it (raw, not unwrapped), or None if unset."""
    if value is MISSING or value is None:
        return None
    while isinstance(value, list) and len(value) == 1 and isinstance(value[0], list):
        value = value[0]
    if isinstance(value, list):
        return value
    return [value]


def _surely_non_empty(for_each: Any) -> bool:
    """Whether a dynamic block's for_each is a collection checkov evaluated and found non-empty.
    An empty one proves nothing: an unresolved list or map variable looks empty too."""
    if not isinstance(for_each, list) or not for_each:
        return False
    if len(for_each) > 1:
        return True
    inner = for_each[0]
    if isinstance(inner, (list, dict)):
        return bool(inner)
    # A lone string is the text of an expression checkov could not evaluate (or a one-string list:
    # not provable either way, so treated as possibly empty).
    return not isinstance(inner, str)


def blocks(parent: Any, name: str) -> list[tuple[dict[str, Any], bool]]:
    """The nested blocks `name` of `parent` as (body, certain) pairs. A static block is certain;
    a dynamic block is certain only when its for_each is provably non-empty."""
    if not isinstance(parent, dict):
        return []
    dynamic: list[tuple[dict[str, Any], bool]] = []
    for spec in parent.get("dynamic") or []:
        if not isinstance(spec, dict) or not isinstance(spec.get(name), dict):
            continue
        certain = _surely_non_empty(spec[name].get("for_each"))
        content = spec[name].get("content")
        bodies = content if isinstance(content, list) else [content]
        dynamic.extend((body, certain) for body in bodies if isinstance(body, dict))
    # Besides the static blocks, the list holds renderings of the dynamic ones (checkov's graph adds
    # one each, and checkov appends their content again before calling the check): a block equal to
    # a dynamic body is taken for one, so an identical static block only loses certainty.
    static = [b for b in parent.get(name) or [] if isinstance(b, dict) and all(b != d for d, _ in dynamic)]
    return [(b, True) for b in static] + dynamic
