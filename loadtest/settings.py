"""The load-test gate's settings section: the credentials it sends, from one place."""

from __future__ import annotations

from pydantic import SecretStr

from app.config import KitSettings


class LoadtestSettings(KitSettings):
    """`dgemma loadtest` (and the Locust users it starts)."""

    loadtest_api_key: SecretStr | None = None
    """Bearer token the gate sends on every request (warm-up, Locust users, overhead phase); a key
    the deployment accepts. Unset: `local-gate`, which only a deployment with DGEMMA_ALLOW_ANY_KEY takes."""

    def headers(self) -> dict[str, str]:
        token = self.loadtest_api_key.get_secret_value() if self.loadtest_api_key else "local-gate"
        return {"Authorization": f"Bearer {token}"}
