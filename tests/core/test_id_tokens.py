"""ID tokens with real parts: google-auth against a fake metadata server and a fake OAuth token
endpoint (real HTTP servers on loopback), gcloud as a stand-in script and as the real CLI, and the
load-test gate sending the token from every request, warm-up and Locust users alike."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.core.identity import IdentityError, IdTokens, NoIdTokenCredentials, audience_of, google_auth_mint
from deploy import cli
from deploy.cloud.id_tokens import GCLOUD_ARGS, gcloud_mint, id_tokens
from devtools.harness.loopback import Reply, Seen, json_reply, serve
from devtools.harness.metadata import FakeMetadata, claims_of, fake_metadata, fake_token_endpoint, id_token

pytestmark = pytest.mark.inprocess

ROOT = Path(__file__).resolve().parents[2]
SERVICE = "https://candidate---dgemma-abc123-uc.a.run.app"
USER_CREDENTIALS = {  # what `gcloud auth application-default login` writes: no ID tokens from it
    "type": "authorized_user",
    "client_id": "764086051850-6qr4p6gpi6hn506pt8ejuq83di341hur.apps.googleusercontent.com",
    "client_secret": "d-FL95Q19q7MQmFpd7hHD0Ty",
    "refresh_token": "1//not-a-real-refresh-token",
}

# google-auth reads GCE_METADATA_HOST once, when its metadata module is first imported, so each use
# of the fake metadata server runs in a fresh interpreter with the variables set from the start.
CHILD = """
import json, sys, time
from app.core.identity import IdTokens, audience_of

skew = [0.0]
tokens = IdTokens(clock=lambda: time.time() + skew[0])
audience = audience_of(sys.argv[1])
out = []
for s in json.loads(sys.argv[2]):
    skew[0] = s
    out.append(tokens.headers(audience, "gate-key"))
print(json.dumps(out))
"""


def _metadata_env(md: FakeMetadata) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "GOOGLE_APPLICATION_CREDENTIALS"}
    return {**env, "GCE_METADATA_HOST": md.host, "GCE_METADATA_IP": md.host}


def _child(md: FakeMetadata, url: str, skews: list[float]) -> list[dict[str, str]]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, url, json.dumps(skews)],
        cwd=ROOT,
        env=_metadata_env(md),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    headers: list[dict[str, str]] = json.loads(done.stdout)
    return headers


def _token(headers: dict[str, str]) -> str:
    return headers["X-Serverless-Authorization"].removeprefix("Bearer ")


def test_the_metadata_server_mints_for_the_service_and_tokens_are_cached() -> None:
    with fake_metadata() as md:
        # now; an hour less 301 s later (still good); 300 s before exp (the next one); again.
        got = _child(md, f"{SERVICE}/v1/systemone", [0, 3299, 3300, 3301])
    tokens = [_token(h) for h in got]
    assert tokens[0] == tokens[1] != tokens[2] == tokens[3]
    assert tokens[0::2] == md.minted  # two mints, and what the server minted is what was sent
    assert all(h["Authorization"] == "Bearer gate-key" for h in got)
    claims = claims_of(tokens[0])
    assert claims["aud"] == SERVICE and claims["email"] == md.email
    calls = md.identity_requests()
    assert [c.query for c in calls] == [{"audience": [SERVICE], "format": ["full"]}] * 2
    assert all(r.headers["metadata-flavor"] == "Google" for r in md.requests)


def test_a_service_account_key_mints_through_its_token_endpoint(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with fake_token_endpoint() as endpoint:
        key = tmp_path / "key.json"
        key.write_text(json.dumps(endpoint.key_file("deployer@dgemma-test.iam.gserviceaccount.com")))
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key))
        tokens = IdTokens()
        first = tokens.token(SERVICE)
        assert tokens.token(SERVICE) == first and len(endpoint.requests) == 1  # cached
        assert not endpoint.refusals  # the grant was signed by the file's key
        assert claims_of(first)["aud"] == SERVICE
        assert claims_of(first)["email"] == "deployer@dgemma-test.iam.gserviceaccount.com"

        # The endpoint refuses a grant signed by another key: an error, not "no credentials".
        forged = endpoint.key_file()
        forged["private_key"] = endpoint.key_file()["private_key"]
        key.write_text(json.dumps(forged))
        with pytest.raises(IdentityError, match=r"cannot mint an ID token for .*invalid_grant") as e:
            google_auth_mint(SERVICE)
        assert not isinstance(e.value, NoIdTokenCredentials)
        assert "Could not verify token signature" in endpoint.refusals[0]


@pytest.fixture
def no_google_auth(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeMetadata]:
    """An operator's machine: user credentials, and no metadata server where google-auth looks
    (something answers there, but not as Google's metadata server)."""
    user = tmp_path / "application_default_credentials.json"
    user.write_text(json.dumps(USER_CREDENTIALS))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(user))
    with fake_metadata(google=False) as elsewhere:
        monkeypatch.setenv("GCE_METADATA_IP", elsewhere.host)
        yield elsewhere


def _stand_in_gcloud(bin_dir: Path, *, token: str = "", fail: str = "") -> Path:
    """A `gcloud` executable that records its argv (a JSON line each) and prints `token` or fails."""
    bin_dir.mkdir(exist_ok=True)
    record = bin_dir / "argv.jsonl"
    script = bin_dir / "gcloud"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        f"with open({str(record)!r}, 'a') as f:\n"
        "    f.write(json.dumps(sys.argv[1:]) + '\\n')\n"
        f"if {fail!r}:\n"
        f"    sys.stderr.write({fail!r})\n"
        "    sys.exit(1)\n"
        f"print({token!r})\n"
    )
    script.chmod(0o755)
    return record


def test_auto_falls_back_to_gcloud_for_user_credentials(
    no_google_auth: FakeMetadata, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with pytest.raises(NoIdTokenCredentials, match="Neither metadata server"):
        google_auth_mint(SERVICE)  # what google-auth makes of it
    user_token = id_token("32555940559.apps.googleusercontent.com", "operator@example.com")
    record = _stand_in_gcloud(tmp_path / "bin", token=user_token)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    pings = len(no_google_auth.requests)
    tokens = id_tokens("auto")
    assert tokens.headers(SERVICE, "gate-key") == {
        "Authorization": "Bearer gate-key",
        "X-Serverless-Authorization": f"Bearer {user_token}",
    }
    assert tokens.headers(SERVICE, None) == {"Authorization": f"Bearer {user_token}"}  # cached
    tokens.headers("https://other-abc123-uc.a.run.app", "gate-key")
    argv = [json.loads(line) for line in record.read_text().splitlines()]
    assert argv == [list(GCLOUD_ARGS)] * 2 == [["auth", "print-identity-token", "--quiet"]] * 2
    assert len(no_google_auth.requests) == pings + 1  # google-auth was asked once, not per audience


def test_gcloud_failures_say_what_gcloud_said(
    no_google_auth: FakeMetadata, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    said = "ERROR: (gcloud.auth.print-identity-token) There was a problem refreshing your current auth tokens"
    record = _stand_in_gcloud(tmp_path / "bin", fail=said)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(IdentityError) as only:
        id_tokens("gcloud").headers(SERVICE, "k")
    assert str(only.value) == f"`gcloud auth print-identity-token --quiet` failed (exit 1): {said}"
    with pytest.raises(IdentityError) as auto:
        id_tokens("auto").headers(SERVICE, "k")
    message = str(auto.value)
    assert message.startswith("no Google credentials that can mint ID tokens: google-auth: ")
    assert "Neither metadata server" in message and said in message and "`gcloud auth login`" in message
    assert len(record.read_text().splitlines()) == 2

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(IdentityError, match="gcloud is not on PATH"):
        gcloud_mint(SERVICE)


@pytest.mark.skipif(not Path("/usr/bin/gcloud").exists(), reason="no Google Cloud CLI here")
def test_the_real_gcloud_parses_the_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """With no account, a command gcloud parses stops at authentication (exit 1); a flag it does
    not know would be exit 2."""
    real = Path(shutil.which("gcloud") or "/usr/bin/gcloud")
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud-config"))
    monkeypatch.setenv("PATH", f"{real.parent}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(IdentityError) as e:
        gcloud_mint(SERVICE, timeout_s=120)
    assert "failed (exit 1)" in str(e.value)
    assert "You do not currently have an active account selected" in str(e.value)
    wrong = subprocess.run(
        [str(real), *GCLOUD_ARGS, "--no-such-flag"], capture_output=True, text=True, timeout=120
    )
    assert wrong.returncode == 2 and "unrecognized arguments" in wrong.stderr


def _decision(questions: dict[str, Any]) -> dict[str, Any]:
    """A body loadtest/validate.py accepts for these questions."""
    answers: dict[str, Any] = {}
    for name, q in questions.items():
        if q["type"] == "noul":
            answers[name] = {"type": "noul", "noul": 0.25}
            continue
        labels = list(q["criteria"]) if q["type"] == "choice" else [str(i) for i in range(len(q["criteria"]))]
        answer = {
            "type": q["type"],
            "probabilities": dict.fromkeys(labels, 1 / len(labels)),
            "confidence": 0.5,
        }
        answers[name] = answer | ({"choice": labels[0]} if q["type"] == "choice" else {})
    return {
        "model": "receiver",
        "answers": answers,
        "usage": {"input_tokens": 12, "output_tokens": len(answers)},
    }


def _gateway_enough(seen: Seen) -> Reply:
    """The gateway, just enough for the gate."""
    if seen.method == "GET" and seen.path == "/readyz":
        return json_reply(200, {"status": "ready"})
    if seen.method == "POST" and seen.path == "/v1/systemone":
        return json_reply(200, _decision(json.loads(seen.body)["questions"]))
    return json_reply(404, {"detail": "Not Found"})


def test_the_gate_sends_the_id_token_on_every_request(tmp_path: Path) -> None:
    with fake_metadata() as md, serve(_gateway_enough) as receiver:
        env = {**_metadata_env(md), "DGEMMA_LOADTEST_API_KEY": "gate-key"}
        env = {k: v for k, v in env.items() if k != "DGEMMA_LOADTEST_HEADERS"}
        done = subprocess.run(
            [sys.executable, "-m", "deploy.cli", "loadtest", "--host", receiver.url, "--id-token", "auto",
             "--latency-seconds", "2", "--throughput-seconds", "2", "--warmup-seconds", "10",
             "--out", str(tmp_path)],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        seen = receiver.requests
    assert done.returncode == 0, done.stdout + done.stderr
    assert [c.query["audience"] for c in md.identity_requests()] == [[receiver.url]]  # one, reused
    token = md.minted[0]
    assert claims_of(token)["aud"] == receiver.url == audience_of(receiver.url)
    for r in seen:
        assert r.headers.get("authorization") == "Bearer gate-key", r
        assert r.headers.get("x-serverless-authorization") == f"Bearer {token}", r
    warm_up = [r for r in seen if r.headers["user-agent"].startswith("python-httpx/")]
    assert {r.path for r in warm_up} == {"/readyz", "/v1/systemone"}
    users = [r for r in seen if "gevent-http-client" in r.headers["user-agent"]]  # Locust's FastHttpUser
    assert len(warm_up) + len(users) == len(seen)
    # The gate counts every request its users sent (Locust's stats CSV misses the run's last second).
    counted = [
        json.loads((tmp_path / f"{p}_figures.json").read_text())["requests"]
        for p in ("latency", "throughput")
    ]
    assert sum(counted) == len(users) and all(counted), counted
    questions = {len(json.loads(r.body)["questions"]) for r in users}
    assert questions == {1, 3}  # both phases: one question (latency), the three alert questions
    assert "PASS" in (tmp_path / "summary.md").read_text()


def test_no_token_no_gate(
    no_google_auth: FakeMetadata,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-gcloud"))
    with serve(_gateway_enough) as receiver:
        argv = ["loadtest", "--host", receiver.url, "--id-token", "auto", "--out", str(tmp_path / "out")]
        assert cli.main(argv) == 2
        assert not receiver.requests  # refused before the warm-up
    err = capsys.readouterr().err
    assert "ID token: no Google credentials that can mint ID tokens" in err and "gcloud is not on PATH" in err
