"""ID tokens without a network: the header rule, audiences, caching against a controllable clock,
errors in the kit's own words, and the load-test headers setting."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core.config import ConfigError, load
from app.core.identity import IdentityError, IdTokens, audience_of, auth_headers, expiry, google_auth_mint
from deploy import cli
from deploy.cloud.id_tokens import MODES, ApiKeyOnly, id_tokens
from devtools.harness.metadata import claims_of, unsigned_jwt
from loadtest.settings import LoadtestSettings

pytestmark = pytest.mark.unit

SERVICE = "https://candidate---dgemma-abc123-uc.a.run.app"


def test_the_header_rule() -> None:
    assert auth_headers("JWT", "key") == {
        "Authorization": "Bearer key",  # Cloud Run passes it on to the gateway
        "X-Serverless-Authorization": "Bearer JWT",  # Cloud Run's IAM check reads this one first
    }
    assert auth_headers("JWT", None) == {"Authorization": "Bearer JWT"}  # plain IAM
    assert auth_headers(None, "key") == {"Authorization": "Bearer key"}
    assert auth_headers(None, None) == {}
    assert ApiKeyOnly().headers(SERVICE, "key") == {"Authorization": "Bearer key"}


def test_the_audience_is_the_url_scheme_and_host() -> None:
    assert audience_of(f"{SERVICE}/v1/systemone?x=1") == SERVICE
    assert audience_of("https://DGEMMA-abc123-uc.a.run.app/") == "https://dgemma-abc123-uc.a.run.app"
    assert audience_of("http://127.0.0.1:8080/readyz") == "http://127.0.0.1:8080"
    for bad in ("dgemma-abc123-uc.a.run.app", "ftp://host", "https://"):
        with pytest.raises(IdentityError, match="no ID-token audience"):
            audience_of(bad)


def _jwt(audience: str, exp: float, n: int = 0) -> str:
    return unsigned_jwt({"aud": audience, "exp": exp, "iat": exp - 3600, "n": n})


class Minter:
    """Counts its calls; each token expires `lifetime_s` after the clock's now."""

    def __init__(self, clock: list[float], lifetime_s: float = 3600, delay_s: float = 0.0) -> None:
        self.clock, self.lifetime_s, self.delay_s = clock, lifetime_s, delay_s
        self.calls: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, audience: str) -> str:
        time.sleep(self.delay_s)
        with self._lock:
            self.calls.append(audience)
            return _jwt(audience, self.clock[0] + self.lifetime_s, len(self.calls))


def test_a_token_is_reused_until_shortly_before_it_expires() -> None:
    now = [1_000_000.0]
    mint = Minter(now)
    tokens = IdTokens(mint, clock=lambda: now[0], refresh_before_s=300)
    first = tokens.token(SERVICE)
    assert claims_of(first)["aud"] == SERVICE and expiry(first) == now[0] + 3600
    now[0] += 3299  # 301 s left: still good
    assert tokens.token(SERVICE) == first and len(mint.calls) == 1
    now[0] += 1  # 300 s left: mint the next one
    second = tokens.token(SERVICE)
    assert second != first and len(mint.calls) == 2
    assert tokens.token("https://other-abc123-uc.a.run.app") != second  # one cache entry per audience
    assert mint.calls == [SERVICE, SERVICE, "https://other-abc123-uc.a.run.app"]
    assert tokens.headers(SERVICE, "key") == {
        "Authorization": "Bearer key",
        "X-Serverless-Authorization": f"Bearer {second}",
    }


def test_a_short_lived_token_is_reused_for_half_its_life() -> None:
    now = [500.0]
    mint = Minter(now, lifetime_s=60)
    tokens = IdTokens(mint, clock=lambda: now[0], refresh_before_s=300)
    first = tokens.token(SERVICE)
    now[0] += 29
    assert tokens.token(SERVICE) == first
    now[0] += 1
    assert tokens.token(SERVICE) != first and len(mint.calls) == 2


def test_concurrent_callers_share_one_mint_per_audience() -> None:
    now = [0.0]
    # Each mint waits for the other audience's: if they ran in turn, the barrier would break.
    side_by_side = threading.Barrier(2, timeout=10)
    minter = Minter(now)

    def mint(audience: str) -> str:
        side_by_side.wait()
        return minter(audience)

    tokens = IdTokens(mint, clock=lambda: now[0])
    audiences = [SERVICE, "https://other-abc123-uc.a.run.app"] * 8
    got: list[str] = []
    threads = [threading.Thread(target=lambda a=a: got.append(tokens.token(a))) for a in audiences]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not side_by_side.broken, "the two audiences' mints ran in turn, not side by side"
    assert sorted(minter.calls) == sorted(set(audiences))  # one mint per audience
    assert len(got) == 16 and len(set(got)) == 2


def test_a_failed_mint_is_not_cached_and_a_bad_token_is_an_identity_error() -> None:
    answers: Iterator[str | Exception] = iter(
        [IdentityError("metadata server said 500"), "not-a-jwt", _jwt(SERVICE, 9e9)]
    )

    def mint(audience: str) -> str:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    tokens = IdTokens(mint, clock=lambda: 0.0)
    with pytest.raises(IdentityError, match="said 500"):
        tokens.token(SERVICE)
    with pytest.raises(IdentityError, match="not a JWT with an `exp` claim"):
        tokens.token(SERVICE)
    assert claims_of(tokens.token(SERVICE))["aud"] == SERVICE
    for not_jwt in ("a.b", "x", unsigned_jwt({"aud": SERVICE})):
        with pytest.raises(IdentityError):
            expiry(not_jwt)


def test_an_unusable_key_file_is_reported_not_worked_around(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """google-auth checks GOOGLE_APPLICATION_CREDENTIALS before any network."""
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    with pytest.raises(IdentityError, match=r"missing\.json is not a readable JSON key file") as e:
        google_auth_mint(SERVICE)
    assert type(e.value) is IdentityError  # not "no credentials": `auto` must not fall back to gcloud
    (tmp_path / "broken.json").write_text('{"type": "service_account", "private_key": "-----BEGIN')
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "broken.json"))
    with pytest.raises(IdentityError, match=r"broken\.json is not a readable JSON key file"):
        google_auth_mint(SERVICE)
    (tmp_path / "half.json").write_text(json.dumps({"type": "service_account"}))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "half.json"))
    with pytest.raises(IdentityError, match=r"half\.json is a service_account file google-auth cannot use"):
        google_auth_mint(SERVICE)


def test_modes() -> None:
    assert MODES == ("off", "auto", "gcloud")
    assert isinstance(id_tokens("off"), ApiKeyOnly)
    assert all(isinstance(id_tokens(m), IdTokens) for m in ("auto", "gcloud"))  # nothing minted yet
    with pytest.raises(ConfigError, match="--id-token 'on': expected one of off, auto, gcloud"):
        id_tokens("on")


def test_the_gate_headers_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert LoadtestSettings().headers() == {"Authorization": "Bearer local-gate"}
    monkeypatch.setenv("DGEMMA_LOADTEST_API_KEY", "gate-key")
    assert load(LoadtestSettings).api_key() == "gate-key"
    exact = {"Authorization": "Bearer gate-key", "X-Serverless-Authorization": "Bearer JWT"}
    monkeypatch.setenv("DGEMMA_LOADTEST_HEADERS", json.dumps(exact))
    assert load(LoadtestSettings).headers() == exact
    for bad in ('{"Authorization": "Bearer secret-token"', '["Bearer secret-token"]', '{"n": 1}'):
        monkeypatch.setenv("DGEMMA_LOADTEST_HEADERS", bad)
        with pytest.raises(ConfigError, match="DGEMMA_LOADTEST_HEADERS") as e:
            load(LoadtestSettings)
        assert "secret-token" not in str(e.value)


def test_identity_errors_are_refusals(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["loadtest", "--host", "ftp://gateway", "--id-token", "gcloud", "--out", str(tmp_path)]
    assert cli.main(argv) == 2
    assert "ID token: no ID-token audience in 'ftp://gateway'" in capsys.readouterr().err
    monkeypatch.setenv("DGEMMA_LOADTEST_HEADERS", '{"Authorization": "Bearer k"}')
    assert cli.main(argv) == 2
    assert "DGEMMA_LOADTEST_HEADERS and --id-token both set the headers" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # refused before the gate started
