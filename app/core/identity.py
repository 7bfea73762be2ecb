"""Google-signed ID tokens for calling a private Cloud Run service (IAM `roles/run.invoker`).

The one way the kit mints them through google-auth (a service-account key in
GOOGLE_APPLICATION_CREDENTIALS, or the metadata server on Cloud Run, GCE and Cloud Build), and the
one rule for the headers that carry them next to the gateway's own API key. Nothing here touches the
network at import time.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

from app.core.errors import KitError

Mint = Callable[[str], str]  # audience -> a Google-signed ID token (a JWT)
REFRESH_BEFORE_S = 300.0  # a token handed out stays valid for a whole load-test phase at least

WHAT_TO_DO = (
    "set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file, run where the metadata server "
    "answers (Cloud Run, GCE, Cloud Build), or use `gcloud auth login` with the gcloud path "
    "(user credentials cannot mint ID tokens through google-auth)"
)


class IdentityError(KitError, RuntimeError):
    """No ID token could be had; the message says why and what to do."""

    exit_code = 2
    label = "ID token"


class NoIdTokenCredentials(IdentityError):
    """google-auth found no credentials that can mint ID tokens (none at all, or user credentials)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"no Google credentials that can mint ID tokens: {reason}; {WHAT_TO_DO}")
        self.reason = reason


class RequestHeaders(Protocol):
    """What a caller of a (possibly private) service asks for: the headers of its requests."""

    def headers(self, audience: str, api_key: str | None) -> dict[str, str]: ...


def audience_of(url: str) -> str:
    """The audience Cloud Run expects for `url`: its `scheme://host[:port]`, without a path."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise IdentityError(f"no ID-token audience in {url!r}: expected http(s)://HOST")
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname}{port}"


def auth_headers(id_token: str | None, api_key: str | None) -> dict[str, str]:
    """The header rule. Both: the API key in `Authorization` (Cloud Run passes it to the gateway) and
    the ID token in `X-Serverless-Authorization` (Cloud Run's IAM check reads it there first). Only
    a token: plain IAM, `Authorization`. Only a key: `Authorization`. Neither: no header."""
    if id_token and api_key:
        return {"Authorization": f"Bearer {api_key}", "X-Serverless-Authorization": f"Bearer {id_token}"}
    if id_token:
        return {"Authorization": f"Bearer {id_token}"}
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def expiry(token: str) -> float:
    """The `exp` claim of a JWT (epoch seconds), read without checking the signature: the service
    checks that; here it only says when to mint the next one."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return float(claims["exp"])
    except (IndexError, ValueError, binascii.Error, KeyError, TypeError) as e:
        why = type(e).__name__  # not the exception's text, which may quote the token
        raise IdentityError(f"the minted ID token is not a JWT with an `exp` claim ({why})") from e


def google_auth_mint(audience: str) -> str:
    """An ID token from google-auth: the service-account key in GOOGLE_APPLICATION_CREDENTIALS, else
    the metadata server. Raises NoIdTokenCredentials when neither is there, IdentityError otherwise."""
    import google.auth.exceptions
    import google.auth.transport.requests
    import google.oauth2.id_token

    try:
        token = google.oauth2.id_token.fetch_id_token(  # type: ignore[no-untyped-call]
            google.auth.transport.requests.Request(), audience
        )
    except google.auth.exceptions.DefaultCredentialsError as e:
        broken = _broken_key_file()
        if broken:  # an explicit key file that is unusable is a mistake to report, not to work around
            raise IdentityError(f"cannot mint an ID token: {broken}: {e}") from e
        raise NoIdTokenCredentials(f"google-auth: {e}") from e
    except (google.auth.exceptions.GoogleAuthError, ValueError, OSError) as e:
        raise IdentityError(f"cannot mint an ID token for {audience}: {type(e).__name__}: {e}") from e
    return str(token)


def _broken_key_file() -> str | None:
    path = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
    if not path:
        return None
    try:
        info = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        return f"GOOGLE_APPLICATION_CREDENTIALS={path} is not a readable JSON key file ({e})"
    kind = info.get("type") if isinstance(info, dict) else None
    if kind in ("service_account", "impersonated_service_account"):  # the kinds google-auth mints with
        return f"GOOGLE_APPLICATION_CREDENTIALS={path} is a {kind} file google-auth cannot use"
    return None  # user or other credentials, which google-auth cannot mint ID tokens with


class IdTokens:
    """ID tokens per audience, minted by `mint` and cached until shortly before their `exp`.

    Thread-safe: callers of one audience wait for one mint; other audiences are not held up.
    """

    def __init__(
        self,
        mint: Mint = google_auth_mint,
        *,
        clock: Callable[[], float] = time.time,
        refresh_before_s: float = REFRESH_BEFORE_S,
    ) -> None:
        self._mint = mint
        self._clock = clock
        self._refresh_before_s = refresh_before_s
        self._cache: dict[str, tuple[str, float]] = {}  # audience -> (token, mint again from)
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def token(self, audience: str) -> str:
        """A token for `audience` valid for a while yet (a cached one, or a new one)."""
        with self._guard:
            lock = self._locks.setdefault(audience, threading.Lock())
        with lock:
            cached = self._cache.get(audience)
            now = self._clock()
            if cached and now < cached[1]:
                return cached[0]
            token = self._mint(audience).strip()
            if not token:
                raise IdentityError(f"an empty ID token for {audience}")
            exp = expiry(token)
            # Short-lived tokens (tests, some issuers) are reused for half their remaining life.
            margin = min(self._refresh_before_s, max(0.0, exp - now) / 2)
            self._cache[audience] = (token, exp - margin)
            return token

    def headers(self, audience: str, api_key: str | None) -> dict[str, str]:
        """Headers for one request to the service at `audience` (see `auth_headers`)."""
        return auth_headers(self.token(audience), api_key)
