"""ID tokens on the operator's side: for `dgemma loadtest --id-token` and `dgemma deploy`.

`id_tokens(mode)` gives what builds a request's headers (`headers(audience, api_key)`):

- `off`: the API key alone (a public service, the local stack);
- `auto`: google-auth (a service-account key in GOOGLE_APPLICATION_CREDENTIALS, or the metadata
  server on GCE and Cloud Build) and, where that finds nothing that can mint (an operator's machine
  with user credentials), `gcloud auth print-identity-token`;
- `gcloud`: only `gcloud auth print-identity-token`.

gcloud mints for its active account. For a user account it refuses `--audiences`, so the token's
audience is gcloud's own client, which Cloud Run accepts from users; a service account activated in
gcloud should rather be used through its key file (`auto`), which mints for the service's URL.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
from typing import Literal, get_args

from app.core.config import ConfigError
from app.core.identity import (
    IdentityError,
    IdTokens,
    NoIdTokenCredentials,
    RequestHeaders,
    auth_headers,
    google_auth_mint,
)

Mode = Literal["off", "auto", "gcloud"]
MODES: tuple[str, ...] = get_args(Mode)
# `--quiet`: fail instead of prompting (stdin is closed; a prompt would hang until the timeout).
GCLOUD_ARGS = ("auth", "print-identity-token", "--quiet")
GCLOUD_TIMEOUT_S = 60.0


class ApiKeyOnly:
    """`off`: no ID token; the API key in `Authorization`, as before."""

    def headers(self, audience: str, api_key: str | None) -> dict[str, str]:
        return auth_headers(None, api_key)


def gcloud_mint(audience: str, *, timeout_s: float = GCLOUD_TIMEOUT_S) -> str:
    """An ID token from `gcloud auth print-identity-token` (gcloud's active account; `audience` is
    not passed: see the module docstring). Raises IdentityError with gcloud's stderr."""
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        raise IdentityError(
            "gcloud is not on PATH: install the Google Cloud CLI and run `gcloud auth login`, or set "
            "GOOGLE_APPLICATION_CREDENTIALS to a service-account key file (`--id-token auto`)"
        )
    command = " ".join(("gcloud", *GCLOUD_ARGS))
    try:
        done = subprocess.run(
            [gcloud, *GCLOUD_ARGS],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired as e:
        raise IdentityError(f"`{command}` did not answer within {timeout_s:.0f} s") from e
    except OSError as e:
        raise IdentityError(f"`{command}` could not run: {e}") from e
    if done.returncode != 0:
        raise IdentityError(f"`{command}` failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    token = done.stdout.strip()
    if not token:
        raise IdentityError(f"`{command}` printed no token: {done.stderr.strip()[-2000:]}")
    return token


class AutoMint:
    """google-auth first; once it has found no credentials that can mint, gcloud from then on (so a
    machine without a metadata server pays for google-auth's probe once, not per audience)."""

    def __init__(self, *, timeout_s: float = GCLOUD_TIMEOUT_S) -> None:
        self._timeout_s = timeout_s
        self._google_auth_cannot: str | None = None  # why, once known
        self._lock = threading.Lock()

    def __call__(self, audience: str) -> str:
        with self._lock:
            cannot = self._google_auth_cannot
        if cannot is None:
            try:
                return google_auth_mint(audience)
            except NoIdTokenCredentials as e:
                with self._lock:
                    self._google_auth_cannot = cannot = e.reason
        try:
            return gcloud_mint(audience, timeout_s=self._timeout_s)
        except IdentityError as e:
            raise IdentityError(
                f"no Google credentials that can mint ID tokens: {cannot}; and {e}. Run `gcloud auth "
                "login`, or set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file"
            ) from e


def id_tokens(mode: str) -> RequestHeaders:
    """What builds the headers of requests to a service, for `mode` (see the module docstring)."""
    if mode == "off":
        return ApiKeyOnly()
    if mode == "auto":
        return IdTokens(AutoMint())
    if mode == "gcloud":
        return IdTokens(gcloud_mint)
    raise ConfigError(f"--id-token {mode!r}: expected one of {', '.join(MODES)}")
