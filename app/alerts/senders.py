"""Per-source webhook authentication, as each sender can authenticate:

- Alertmanager: `Authorization: Bearer <token>` (`http_config.authorization`) or Basic
  (`http_config.basic_auth`);
- Grafana: Basic (username/password), or `Authorization: <scheme> <credentials>` (scheme
  `authorization_scheme`, Bearer by default);
- Cloud Monitoring: `webhook_tokenauth` (a token the operator writes into the channel's URL query,
  `?auth_token=...` by default) or `webhook_basicauth` (Basic). It cannot send other headers.

Secrets are kept only as SHA-256 digests and compared in constant time, every configured one on
every request, by app/core/secrets.py's `matches`. A source with no credential is refused at
construction unless explicitly left open (local use), as the gateway's DGEMMA_ALLOW_ANY_KEY.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Literal

from app.alerts.records import Source
from app.core.config import ConfigError
from app.core.errors import Unauthorized
from app.core.secrets import digest, matches

Kind = Literal["header", "basic", "query"]

# What each sender can send; a credential of another kind could never match, so it is a config error.
SUPPORTED: dict[Source, frozenset[Kind]] = {
    "alertmanager": frozenset({"header", "basic"}),
    "grafana": frozenset({"header", "basic"}),
    "cloud-monitoring": frozenset({"query", "basic"}),
}
QUERY_PARAM = "auth_token"  # Cloud Monitoring token auth: the operator's choice, this by default
REALM = "alerts"


class SenderAuth:
    """The credentials one source's webhooks must carry. `check` raises Unauthorized unless the
    request carries one of them."""

    def __init__(
        self,
        source: Source,
        *,
        tokens: tuple[str, ...] = (),
        basic: tuple[tuple[str, str], ...] = (),
        query_tokens: tuple[str, ...] = (),
        scheme: str = "Bearer",
        query_param: str = QUERY_PARAM,
        allow_open: bool = False,
    ) -> None:
        self.source = source
        self.scheme = scheme.strip()
        self.query_param = query_param
        if not self.scheme or " " in self.scheme or self.scheme.lower() == "basic":
            raise ConfigError(
                f"{source} webhook auth: the Authorization scheme must be one word other than Basic "
                "(basic auth is configured as a username and password)"
            )
        for user, password in basic:
            if not user or not password or ":" in user:
                raise ConfigError(
                    f"{source} webhook auth: basic auth needs a username (without ':') and a password"
                )
        self._tokens = tuple(digest(t) for t in dict.fromkeys(tokens) if t)
        # `user:password` as one secret: the user has no ':', so equal texts mean equal pairs.
        self._basic = tuple(digest(f"{u}:{p}") for u, p in dict.fromkeys(basic))
        self._query = tuple(digest(t) for t in dict.fromkeys(query_tokens) if t)
        configured: set[Kind] = set()
        if self._tokens:
            configured.add("header")
        if self._basic:
            configured.add("basic")
        if self._query:
            configured.add("query")
        unsupported = sorted(configured - SUPPORTED[source])
        if unsupported:
            raise ConfigError(f"{source} webhooks cannot send {' or '.join(unsupported)} credentials")
        self.open = not configured
        if self.open and not allow_open:
            raise ConfigError(
                f"no credential for {source} webhooks: configure one, or allow them open (local use only)"
            )

    @classmethod
    def from_secrets(
        cls,
        source: Source,
        bearer: str | None = None,
        basic: str | None = None,
        query_token: str | None = None,
        *,
        scheme: str = "Bearer",
        query_param: str = QUERY_PARAM,
        allow_open: bool = False,
    ) -> SenderAuth:
        """Each kind as the plain text of its setting (the caller unwraps its SecretStr): one value
        per line, each accepted, so that a rotation adds the new value before the old one goes
        (no 401 window); `basic` lines are `user:password`. None or blank: not configured. A bearer
        token is sent as `Authorization: <scheme> <token>`."""

        def lines(text: str | None) -> tuple[str, ...]:
            return tuple(line.strip() for line in (text or "").splitlines() if line.strip())

        pairs = tuple((user, password) for user, _, password in (v.partition(":") for v in lines(basic)))
        return cls(
            source,
            tokens=lines(bearer),
            basic=pairs,
            query_tokens=lines(query_token),
            scheme=scheme,
            query_param=query_param,
            allow_open=allow_open,
        )

    @property
    def challenge(self) -> str:
        """The `WWW-Authenticate` value for a 401 from this source (RFC 7235: one challenge per
        scheme that would be accepted; a query token has no scheme, so Bearer stands for it)."""
        challenges = []
        if self._tokens or not self._basic:
            challenges.append(f'{self.scheme} realm="{REALM}"')
        if self._basic:
            challenges.append(f'Basic realm="{REALM}", charset="UTF-8"')
        return ", ".join(challenges)

    def check(self, headers: Mapping[str, str], query: Mapping[str, str]) -> None:
        """Raise Unauthorized unless the request carries a configured credential. `headers` is
        read case-insensitively; two Authorization headers are refused as ambiguous."""
        if self.open:
            return
        values = [v for k, v in headers.items() if k.lower() == "authorization"]
        authorization = values[0] if len(values) == 1 else ""
        scheme, _, credentials = authorization.strip().partition(" ")
        credentials = credentials.strip()
        token = credentials if scheme.lower() == self.scheme.lower() and credentials else None
        pair = _basic_text(credentials) if scheme.lower() == "basic" else None
        query_token = query.get(self.query_param) or None
        # `|`, not `or`: every kind is compared, whichever matches (see `matches`).
        ok = matches(token, self._tokens) | matches(pair, self._basic) | matches(query_token, self._query)
        if not ok:
            raise Unauthorized("Invalid or missing webhook credentials.")


def _basic_text(credentials: str) -> str | None:
    """`user:password` from a Basic credential (RFC 7617), or None when it is not one."""
    try:
        text = base64.b64decode(credentials, validate=True).decode()
    except (binascii.Error, ValueError):  # ValueError covers UnicodeDecodeError
        return None
    return text if ":" in text else None
