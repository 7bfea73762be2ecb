"""`dgemma eval`'s settings section: the credential it sends."""

from __future__ import annotations

from pydantic import SecretStr

from app.core.config import KitSettings

LOCAL_KEY = "local-eval"


class EvalSettings(KitSettings):
    """`dgemma eval`."""

    eval_api_key: SecretStr | None = None
    """Bearer token the eval sends with every decision; a key the deployment accepts. Unset:
    `local-eval`, which only a deployment with DGEMMA_ALLOW_ANY_KEY (the local stack) takes."""

    def api_key(self) -> str:
        return self.eval_api_key.get_secret_value() if self.eval_api_key else LOCAL_KEY
