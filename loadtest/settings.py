"""The load-test gate's settings section: the credentials it sends, from one place."""

from __future__ import annotations

import json

from pydantic import SecretStr, field_validator

from app.core.config import KitSettings

LOCAL_KEY = "local-gate"


class LoadtestSettings(KitSettings):
    """`dgemma loadtest` (and the Locust users it starts)."""

    loadtest_api_key: SecretStr | None = None
    """Bearer token the gate sends on every request (warm-up, Locust users, overhead phase); a key
    the deployment accepts. Unset: `local-gate`, which only a deployment with DGEMMA_ALLOW_ANY_KEY takes."""
    loadtest_headers: SecretStr | None = None
    """The exact headers of every request, as a JSON object, in place of the API-key header.
    `dgemma loadtest` sets it for its Locust users (with `--id-token`, it carries the ID token)."""

    @field_validator("loadtest_headers")
    @classmethod
    def _a_json_object_of_strings(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            _parse_headers(value.get_secret_value())
        return value

    def api_key(self) -> str:
        """The gate's API key (`local-gate` when unset)."""
        return self.loadtest_api_key.get_secret_value() if self.loadtest_api_key else LOCAL_KEY

    def headers(self) -> dict[str, str]:
        """The headers of every request: DGEMMA_LOADTEST_HEADERS, else the API key as a bearer token."""
        if self.loadtest_headers is not None:
            return _parse_headers(self.loadtest_headers.get_secret_value())
        return {"Authorization": f"Bearer {self.api_key()}"}


def _parse_headers(text: str) -> dict[str, str]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON ({e.msg})") from None  # the message must not echo a token
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise ValueError('expected a JSON object of strings, like {"Authorization": "Bearer KEY"}')
    return {str(k): v for k, v in data.items()}
