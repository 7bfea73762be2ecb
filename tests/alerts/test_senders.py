"""Per-source webhook authentication: each kind accepted with its credential, refused otherwise."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import pytest
from starlette.datastructures import Headers, QueryParams

from app.alerts.records import Source
from app.alerts.senders import SenderAuth
from app.core.config import ConfigError
from app.core.errors import Unauthorized
from app.core.http_errors import service_error_response

pytestmark = pytest.mark.unit

TOKEN = "s3cret-t0ken-value"


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def accepts(
    auth: SenderAuth, headers: Mapping[str, str] | None = None, query: Mapping[str, str] | None = None
) -> bool:
    try:
        auth.check(headers or {}, query or {})
    except Unauthorized as e:
        assert type(e) is Unauthorized
        assert e.detail == "Invalid or missing webhook credentials."  # says nothing of which failed
        return False
    return True


# -- Authorization header (Alertmanager `authorization`, Grafana scheme + credentials) ---------


def test_bearer_token() -> None:
    auth = SenderAuth.from_secrets("alertmanager", bearer=TOKEN)
    assert accepts(auth, {"Authorization": f"Bearer {TOKEN}"})
    assert accepts(auth, {"authorization": f"bearer  {TOKEN} "})  # scheme and header name: any case
    assert not accepts(auth, {"Authorization": "Bearer wrong"})
    assert not accepts(auth, {"Authorization": f"Bearer {TOKEN[:-1]}"})  # a prefix
    assert not accepts(auth, {"Authorization": f"Bearer {TOKEN}x"})  # an extension
    assert not accepts(auth, {"Authorization": f"Token {TOKEN}"})  # another scheme
    assert not accepts(auth, {"Authorization": TOKEN})  # no scheme
    assert not accepts(auth, {"Authorization": "Bearer "})
    assert not accepts(auth, {"Authorization": basic(TOKEN, TOKEN)})
    assert not accepts(auth)  # absent
    assert not accepts(auth, {}, {"auth_token": TOKEN})  # Alertmanager's credential is not a query token


def test_grafana_custom_scheme() -> None:
    auth = SenderAuth.from_secrets("grafana", bearer=TOKEN, scheme="Token")
    assert accepts(auth, {"Authorization": f"Token {TOKEN}"})
    assert accepts(auth, {"Authorization": f"token {TOKEN}"})
    assert not accepts(auth, {"Authorization": f"Bearer {TOKEN}"})
    assert auth.challenge == 'Token realm="alerts"'


def test_starlette_headers_and_two_authorization_headers() -> None:
    auth = SenderAuth.from_secrets("grafana", bearer=TOKEN)
    one = Headers(raw=[(b"authorization", f"Bearer {TOKEN}".encode())])
    assert accepts(auth, one)
    two = Headers(raw=[(b"authorization", f"Bearer {TOKEN}".encode()), (b"authorization", b"Bearer x")])
    assert not accepts(auth, two)  # ambiguous: refused


# -- Basic -------------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["alertmanager", "grafana", "cloud-monitoring"])
def test_basic_auth(source: Source) -> None:
    auth = SenderAuth.from_secrets(source, basic="router:pa:ss wörd")
    assert accepts(auth, {"Authorization": basic("router", "pa:ss wörd")})
    assert not accepts(auth, {"Authorization": basic("router", "pa:ss wör")})  # a prefix of the password
    assert not accepts(auth, {"Authorization": basic("route", "pa:ss wörd")})
    assert not accepts(auth, {"Authorization": basic("", "")})
    assert not accepts(auth, {"Authorization": "Basic not-base64!"})
    assert not accepts(auth, {"Authorization": "Basic " + base64.b64encode(b"no colon").decode()})
    assert not accepts(auth, {"Authorization": "Basic " + base64.b64encode(b"\xff\xfe:x").decode()})
    assert not accepts(auth, {"Authorization": "Bearer " + basic("router", "pa:ss wörd").split()[1]})
    assert not accepts(auth)
    assert auth.challenge == 'Basic realm="alerts", charset="UTF-8"'


# -- query token (Cloud Monitoring `webhook_tokenauth`) ----------------------------------------


def test_query_token() -> None:
    auth = SenderAuth.from_secrets("cloud-monitoring", query_token=TOKEN)
    assert accepts(auth, query={"auth_token": TOKEN})
    assert accepts(auth, query=QueryParams(f"auth_token={TOKEN}&other=1"))
    assert not accepts(auth, query={"auth_token": TOKEN[:5]})
    assert not accepts(auth, query={"auth_token": ""})
    assert not accepts(auth, query={"token": TOKEN})  # another parameter
    assert not accepts(auth, {"Authorization": f"Bearer {TOKEN}"})  # Cloud Monitoring sends no such header
    assert not accepts(auth)


def test_query_parameter_name_is_configurable() -> None:
    auth = SenderAuth.from_secrets("cloud-monitoring", query_token=TOKEN, query_param="token")
    assert accepts(auth, query={"token": TOKEN})
    assert not accepts(auth, query={"auth_token": TOKEN})


def test_cloud_monitoring_token_or_basic() -> None:
    auth = SenderAuth.from_secrets("cloud-monitoring", basic="u:p", query_token=TOKEN)
    assert accepts(auth, query={"auth_token": TOKEN})
    assert accepts(auth, {"Authorization": basic("u", "p")})
    assert not accepts(auth, {"Authorization": basic("u", TOKEN)}, {"auth_token": "p"})  # crossed over


def test_either_configured_kind_is_accepted() -> None:
    auth = SenderAuth.from_secrets("alertmanager", bearer=TOKEN, basic="u:p")
    assert accepts(auth, {"Authorization": f"Bearer {TOKEN}"})
    assert accepts(auth, {"Authorization": basic("u", "p")})
    assert not accepts(auth, {"Authorization": "Bearer p"})
    assert not accepts(auth, {"Authorization": basic("u", TOKEN)})
    assert auth.challenge == 'Bearer realm="alerts", Basic realm="alerts", charset="UTF-8"'


def test_several_tokens_each_accepted() -> None:
    auth = SenderAuth("grafana", tokens=("old-token", "new-token"))  # rotation
    assert accepts(auth, {"Authorization": "Bearer old-token"})
    assert accepts(auth, {"Authorization": "Bearer new-token"})
    assert not accepts(auth, {"Authorization": "Bearer other"})


# -- construction ------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["alertmanager", "grafana", "cloud-monitoring"])
def test_no_credential_is_refused_unless_explicitly_open(source: Source) -> None:
    with pytest.raises(ConfigError, match=f"no credential for {source} webhooks"):
        SenderAuth.from_secrets(source)
    with pytest.raises(ConfigError, match="no credential"):
        SenderAuth.from_secrets(source, bearer="  ", query_token="")  # blank
    auth = SenderAuth.from_secrets(source, allow_open=True)
    assert auth.open
    assert accepts(auth)
    assert accepts(auth, {"Authorization": "Bearer anything"})


def test_allow_open_does_not_open_a_source_with_credentials() -> None:
    auth = SenderAuth.from_secrets("alertmanager", bearer=TOKEN, allow_open=True)
    assert not auth.open
    assert not accepts(auth)


@pytest.mark.parametrize(
    ("source", "secrets", "message"),
    [
        ("alertmanager", {"query_token": TOKEN}, "alertmanager webhooks cannot send query credentials"),
        ("grafana", {"query_token": TOKEN}, "grafana webhooks cannot send query credentials"),
        ("cloud-monitoring", {"bearer": TOKEN}, "cloud-monitoring webhooks cannot send header credentials"),
        ("grafana", {"basic": ":p"}, "basic auth needs a username"),
        ("grafana", {"basic": "u:"}, "basic auth needs a username"),
        ("grafana", {"basic": "u"}, "basic auth needs a username"),
        ("grafana", {"bearer": TOKEN, "scheme": "Basic"}, "scheme must be one word other than Basic"),
        ("grafana", {"bearer": TOKEN, "scheme": "Two words"}, "scheme must be one word"),
    ],
)
def test_credentials_a_sender_cannot_send_are_config_errors(
    source: Source, secrets: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        SenderAuth.from_secrets(source, **secrets)


def test_secrets_are_not_kept_in_clear() -> None:
    auth = SenderAuth.from_secrets("grafana", bearer=TOKEN, basic="router:hunter22")
    held = repr(vars(auth))
    assert TOKEN not in held
    assert "hunter22" not in held


def test_refusal_is_a_401() -> None:
    auth = SenderAuth.from_secrets("alertmanager", bearer=TOKEN)
    with pytest.raises(Unauthorized) as caught:
        auth.check({}, {})
    assert caught.value.status == 401
    assert service_error_response(caught.value).headers["WWW-Authenticate"] == "Bearer"


def test_a_rotation_accepts_the_old_and_the_new_value_at_once() -> None:
    """A secret version holding two lines (as Secret Manager hands it, a trailing newline too):
    both tokens pass while the senders move over, any other does not; the same for basic auth."""
    auth = SenderAuth.from_secrets("alertmanager", bearer=f"{TOKEN}\nnew-{TOKEN}\n", basic="u:old\nu:new\n")
    for good in (TOKEN, f"new-{TOKEN}"):
        assert accepts(auth, {"Authorization": f"Bearer {good}"})
    assert accepts(auth, {"Authorization": basic("u", "old")}) and accepts(
        auth, {"Authorization": basic("u", "new")}
    )
    assert not accepts(auth, {"Authorization": f"Bearer {TOKEN}\nnew-{TOKEN}"})
    assert not accepts(auth, {"Authorization": basic("u", "old\nu:new")})
    after = SenderAuth.from_secrets("alertmanager", bearer=f"new-{TOKEN}")
    assert not accepts(after, {"Authorization": f"Bearer {TOKEN}"})
