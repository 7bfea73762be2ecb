"""Google's identity endpoints, faked on loopback for tests: real HTTP servers in a thread.

- `fake_metadata()`: the metadata server as google-auth uses it to mint ID tokens on Cloud Run and
  GCE (the `/` ping, the default service account, its `identity` endpoint). Point google-auth at it
  with `GCE_METADATA_HOST` and `GCE_METADATA_IP` set to `FakeMetadata.host` (google-auth reads
  GCE_METADATA_HOST once, at import: set it before `google.auth.compute_engine` is imported, e.g. in
  a child process).
- `fake_token_endpoint()`: the OAuth token endpoint a service-account key file names in `token_uri`;
  it checks the key's signature on the JWT grant and answers with an ID token.

Both are `devtools.harness.loopback.serve` servers (recording HTTP servers on loopback).

ID tokens minted here are well-formed JWTs (`RS256` header; `aud`, `exp`, `iat`, `email`, `sub`) with
a signature nothing can verify: google-auth reads their `exp` without checking it. Both servers
record every request; neither sets anything globally.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from devtools.harness.loopback import Recorder, Reply, Seen, json_reply, serve

DEFAULT_EMAIL = "router@dgemma-test.iam.gserviceaccount.com"
GOOGLE_TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token"  # the `aud` google-auth's grants carry
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
_serial = itertools.count(1)  # every minted token differs, even within one second


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsigned_jwt(claims: dict[str, Any]) -> str:
    """A JWT with an RS256 header and a signature that verifies against nothing."""
    header = {"alg": "RS256", "typ": "JWT", "kid": "fake"}
    parts = [json.dumps(p, separators=(",", ":")).encode() for p in (header, claims)]
    return ".".join([*(_b64(p) for p in parts), _b64(b"not-a-signature")])


def claims_of(token: str) -> dict[str, Any]:
    """A JWT's payload, unverified (what a test asserts on)."""
    payload = token.split(".")[1]
    claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return claims


def id_token(audience: str, email: str = DEFAULT_EMAIL, lifetime_s: float = 3600) -> str:
    """An ID token as Google issues it for `email`, addressed to `audience`."""
    now = int(time.time())
    return unsigned_jwt(
        {
            "iss": "https://accounts.google.com",
            "aud": audience,
            "azp": email,
            "email": email,
            "email_verified": True,
            "sub": str(int(hashlib.sha256(email.encode()).hexdigest()[:15], 16)),
            "iat": now,
            "exp": now + int(lifetime_s),
            "jti": f"fake-{next(_serial)}",
        }
    )


@dataclass
class FakeMetadata:
    """The metadata server: `host` is `127.0.0.1:PORT` (for GCE_METADATA_HOST / GCE_METADATA_IP)."""

    email: str = DEFAULT_EMAIL
    lifetime_s: float = 3600
    google: bool = True  # False: something answers, but it is not Google's metadata server
    port: int = 0
    minted: list[str] = field(default_factory=list)  # every ID token handed out, in order
    _recorder: Recorder = field(default_factory=Recorder)

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    @property
    def requests(self) -> list[Seen]:
        return self._recorder.requests

    def identity_requests(self) -> list[Seen]:
        return [r for r in self.requests if r.path.endswith("/identity")]

    def answer(self, seen: Seen) -> Reply:
        if not self.google:
            return 404, {"content-type": "text/plain"}, b"not a metadata server"
        flavor = {"metadata-flavor": "Google"}
        if seen.headers.get("metadata-flavor") != "Google":  # as the real one: the header is required
            return 403, {"content-type": "text/plain", **flavor}, b"Missing Metadata-Flavor:Google header."
        account = "/computeMetadata/v1/instance/service-accounts/"
        if seen.path == "/":
            return 200, {"content-type": "application/text", **flavor}, b"computeMetadata/\n"
        if seen.path in (f"{account}default/", f"{account}{self.email}/"):
            scopes = ["https://www.googleapis.com/auth/cloud-platform"]
            return json_reply(200, {"email": self.email, "scopes": scopes, "aliases": ["default"]}, flavor)
        if seen.path in (f"{account}default/identity", f"{account}{self.email}/identity"):
            audience = seen.query.get("audience", [""])[0]
            if not audience:
                return 400, {"content-type": "text/plain", **flavor}, b"non-empty audience parameter required"
            token = id_token(audience, self.email, self.lifetime_s)
            self.minted.append(token)
            return 200, {"content-type": "text/html", **flavor}, token.encode()
        return 404, {"content-type": "text/plain", **flavor}, b"Not Found"


@contextmanager
def fake_metadata(
    email: str = DEFAULT_EMAIL, *, lifetime_s: float = 3600, google: bool = True
) -> Iterator[FakeMetadata]:
    """A fake metadata server on a free loopback port, for the duration of the block."""
    fake = FakeMetadata(email=email, lifetime_s=lifetime_s, google=google)
    with serve(fake.answer) as server:
        fake._recorder = server.recorder
        fake.port = server.server_address[1]
        yield fake


@dataclass
class FakeTokenEndpoint:
    """An OAuth token endpoint for service-account keys: `key_file(...)` makes a key that names it."""

    url: str = ""
    lifetime_s: float = 3600
    minted: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)  # why grants were refused
    _public_keys: dict[str, bytes] = field(default_factory=dict)  # private_key_id -> PEM
    _recorder: Recorder = field(default_factory=Recorder)

    @property
    def requests(self) -> list[Seen]:
        return self._recorder.requests

    def key_file(self, email: str = DEFAULT_EMAIL, project: str = "dgemma-test") -> dict[str, Any]:
        """A service-account key file's JSON with a fresh RSA key, its `token_uri` this endpoint."""
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        key_id = f"fake-key-{next(_serial)}"
        self._public_keys[key_id] = key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        private = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        return {
            "type": "service_account",
            "project_id": project,
            "private_key_id": key_id,
            "private_key": private.decode(),
            "client_email": email,
            "client_id": "1" + key_id.removeprefix("fake-key-").rjust(20, "0"),
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": self.url,
        }

    def answer(self, seen: Seen) -> Reply:
        import google.auth.exceptions
        import google.auth.jwt

        form = {k: v[0] for k, v in parse_qs(seen.body.decode()).items()}
        try:
            if seen.method != "POST" or form.get("grant_type") != JWT_BEARER:
                raise ValueError(f"expected a POST with grant_type={JWT_BEARER}")
            assertion = form["assertion"]
            # Verify the grant as Google does: signed by the key it names, addressed to the endpoint.
            claims = google.auth.jwt.decode(  # type: ignore[no-untyped-call]
                assertion, certs=self._public_keys, audience=GOOGLE_TOKEN_AUDIENCE
            )
            audience = claims["target_audience"]
        except (KeyError, ValueError, google.auth.exceptions.GoogleAuthError) as e:
            self.refusals.append(f"{type(e).__name__}: {e}")
            return json_reply(400, {"error": "invalid_grant", "error_description": str(e)})
        token = id_token(audience, str(claims["iss"]), self.lifetime_s)
        self.minted.append(token)
        return json_reply(200, {"id_token": token})


@contextmanager
def fake_token_endpoint(*, lifetime_s: float = 3600) -> Iterator[FakeTokenEndpoint]:
    """A fake OAuth token endpoint on a free loopback port, for the duration of the block."""
    fake = FakeTokenEndpoint(lifetime_s=lifetime_s)
    with serve(fake.answer) as server:
        fake._recorder = server.recorder
        fake.url = f"http://127.0.0.1:{server.server_address[1]}/token"
        yield fake
