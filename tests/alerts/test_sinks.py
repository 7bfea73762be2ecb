"""The alert router's sinks against real HTTP receivers on loopback: bodies, headers, retries, errors."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.alerts.records import Alert, Page
from app.alerts.sinks import Sink, SinkConfigError, SinkError, build_sinks, parse_sink_configs
from app.alerts.sinks.console import ConsoleSink
from app.alerts.sinks.documents import dedup_key, page_document
from app.alerts.sinks.pagerduty import PagerDutySink
from app.core.config import ConfigError
from app.core.retry import retry_after_s
from devtools.harness.loopback import RecordingServer, Reply, Seen, json_reply, serve
from tests.helpers.alerts import ACCEPTED, Receiver

pytestmark = pytest.mark.inprocess

ROUTING_KEY = "R0123456789abcdef0123456789abcd"
FAST = {"backoff_s": 0.001, "backoff_max_s": 0.01, "timeout_s": 2.0}  # tests wait milliseconds


def alert(**overrides: Any) -> Alert:
    fields: dict[str, Any] = {
        "source": "alertmanager",
        "key": "alertmanager:3f2a9c1d0b7e6a54",
        "status": "firing",
        "title": "HighErrorRate",
        "summary": "5xx above 5% on checkout for 10 minutes",
        "labels": {"alertname": "HighErrorRate", "instance": "checkout-7f9c", "job": "checkout"},
        "annotations": {"summary": "5xx above 5%", "runbook_url": "https://runbooks.example/5xx"},
        "started_at": dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.UTC),
        "url": "http://prometheus.example/graph?g0.expr=rate",
    }
    return Alert(**{**fields, **overrides})


ANSWERS = {
    "page": {"type": "noul", "noul": 0.93},
    "team": {"type": "choice", "choice": "payments", "confidence": 0.81, "probabilities": {"payments": 0.9}},
}


def page(**overrides: Any) -> Page:
    fields: dict[str, Any] = {
        "alert": alert(),
        "action": "page",
        "route": "payments",
        "severity": "critical",
        "classified": True,
        "answers": ANSWERS,
        "reason": "p(page) 0.93 >= 0.70",
    }
    return Page(**{**fields, **overrides})


@pytest.fixture
def receiver() -> Iterator[Callable[[Receiver], RecordingServer]]:
    with ExitStack() as stack:
        yield lambda script: stack.enter_context(serve(script))


@pytest.fixture
async def make_sinks() -> AsyncIterator[Callable[..., dict[str, Sink]]]:
    built: list[dict[str, Sink]] = []

    def make(raw: dict[str, Any], client: httpx.AsyncClient | None = None) -> dict[str, Sink]:
        built.append(build_sinks(parse_sink_configs(raw), client=client))
        return built[-1]

    yield make
    for sinks in built:
        for sink in sinks.values():
            await sink.aclose()


@pytest.fixture
def secret(tmp_path: Path) -> Callable[[str, str], Path]:
    def write(name: str, content: str) -> Path:
        path = tmp_path / name
        path.write_text(content)
        return path

    return write


def body(seen: Seen) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(seen.body)
    return data


@pytest.fixture
def pagerduty(
    receiver: Callable[[Receiver], RecordingServer],
    make_sinks: Callable[..., dict[str, Sink]],
    secret: Callable[[str, str], Path],
) -> Callable[..., tuple[Sink, RecordingServer]]:
    def make(script: Receiver, **knobs: Any) -> tuple[Sink, RecordingServer]:
        server = receiver(script)
        cfg = {
            "type": "pagerduty",
            "routing_key_file": str(secret("pd-key", ROUTING_KEY + "\n")),
            "url": f"{server.url}/v2/enqueue",
            **FAST,
            **knobs,
        }
        return make_sinks({"pd": cfg})["pd"], server

    return make


# -- PagerDuty ------------------------------------------------------------------------------------------


async def test_pagerduty_trigger_carries_the_alert_key_and_the_answers(pagerduty: Any) -> None:
    sink, server = pagerduty(Receiver())
    await sink.deliver(page())

    [seen] = server.requests
    assert (seen.method, seen.path) == ("POST", "/v2/enqueue")
    assert seen.headers["content-type"] == "application/json"
    event = body(seen)
    assert event["routing_key"] == ROUTING_KEY  # from the file, its newline stripped
    assert event["event_action"] == "trigger"
    assert event["dedup_key"] == "alertmanager:3f2a9c1d0b7e6a54"
    assert event["client"] == "DiffusionGemma alert router"
    assert event["client_url"] == "http://prometheus.example/graph?g0.expr=rate"
    assert {"href": "https://runbooks.example/5xx", "text": "runbook_url"} in event["links"]
    payload = event["payload"]
    assert payload["summary"] == "HighErrorRate: 5xx above 5% on checkout for 10 minutes"
    assert payload["severity"] == "critical"
    assert payload["source"] == "checkout-7f9c"
    assert payload["component"] == "checkout"
    assert payload["class"] == "HighErrorRate"
    assert payload["timestamp"] == "2025-03-01T12:00:00+00:00"
    details = payload["custom_details"]
    assert details["answers"] == ANSWERS
    assert details["classified"] is True
    assert details["low_confidence"] is False
    assert (details["route"], details["action"], details["reason"]) == (
        "payments",
        "page",
        "p(page) 0.93 >= 0.70",
    )
    assert details["labels"]["instance"] == "checkout-7f9c"
    assert details["annotations"]["runbook_url"] == "https://runbooks.example/5xx"


async def test_pagerduty_summary_says_unclassified_low_confidence_and_ticket(pagerduty: Any) -> None:
    sink, server = pagerduty(Receiver())
    await sink.deliver(page(classified=False, answers={}, reason="gateway timed out"))
    await sink.deliver(page(low_confidence=True))
    await sink.deliver(page(action="ticket", severity="error"))

    unclassified, low, ticket = (body(s)["payload"] for s in server.requests)
    assert unclassified["summary"].startswith("[unclassified] HighErrorRate")
    assert unclassified["custom_details"]["classified"] is False
    assert low["summary"].startswith("[low confidence] HighErrorRate")
    assert ticket["summary"].startswith("[ticket] HighErrorRate")
    assert ticket["severity"] == "info"  # a ticket never pages through PagerDuty's urgency
    assert ticket["custom_details"]["severity"] == "error"
    # Same alert, same dedup_key: the classified update lands on the unclassified page's incident.
    assert {body(s)["dedup_key"] for s in server.requests} == {"alertmanager:3f2a9c1d0b7e6a54"}


async def test_pagerduty_summary_is_clipped_and_long_keys_stay_stable(pagerduty: Any) -> None:
    sink, _ = pagerduty(Receiver())
    assert isinstance(sink, PagerDutySink)
    event = sink.event(page(alert=alert(summary="x" * 5000), classified=False))
    assert len(event["payload"]["summary"]) == 1024
    assert event["payload"]["summary"].startswith("[unclassified]")
    long = alert(key="cloud-monitoring:" + "9" * 400)
    assert len(dedup_key(long)) == 255
    assert dedup_key(long) == dedup_key(alert(key="cloud-monitoring:" + "9" * 400))
    assert dedup_key(long) != dedup_key(alert(key="cloud-monitoring:" + "9" * 399))


async def test_pagerduty_resolve(pagerduty: Any) -> None:
    sink, server = pagerduty(Receiver())
    await sink.resolve(alert(status="resolved"))
    [seen] = server.requests
    assert body(seen) == {
        "routing_key": ROUTING_KEY,
        "event_action": "resolve",
        "dedup_key": "alertmanager:3f2a9c1d0b7e6a54",
    }


# -- retries --------------------------------------------------------------------------------------------


async def test_5xx_is_retried_until_accepted(pagerduty: Any) -> None:
    script = Receiver(json_reply(500, {"status": "error"}), (502, {}, b"bad gateway"))
    sink, server = pagerduty(script)
    await sink.deliver(page())
    assert len(server.requests) == 3  # two failures, one accepted delivery
    assert len({s.body for s in server.requests}) == 1  # the same event each time


async def test_a_2xx_is_never_retried(pagerduty: Any) -> None:
    sink, server = pagerduty(Receiver(then=(200, {}, b"not json at all")))
    await sink.deliver(page())
    assert len(server.requests) == 1


async def test_gives_up_after_its_attempts(pagerduty: Any) -> None:
    sink, server = pagerduty(Receiver(then=json_reply(503, {"message": "unavailable"})))
    with pytest.raises(SinkError) as caught:
        await sink.deliver(page())
    assert len(server.requests) == 3
    message = str(caught.value)
    assert "'pd'" in message and "pagerduty" in message
    assert "HTTP 503" in message and "3 attempts" in message
    assert (caught.value.status, caught.value.attempts, caught.value.retryable) == (503, 3, True)


async def test_429_waits_for_retry_after(pagerduty: Any) -> None:
    script = Receiver(json_reply(429, {"message": "rate limited"}, {"retry-after": "0.3"}))
    sink, server = pagerduty(script, backoff_max_s=2.0)
    await sink.deliver(page())
    assert len(server.requests) == 2
    assert script.times[1] - script.times[0] >= 0.28


async def test_retry_after_is_capped(pagerduty: Any) -> None:
    script = Receiver(json_reply(429, {}, {"retry-after": "120"}))
    sink, server = pagerduty(script, backoff_max_s=0.05)
    started = time.monotonic()
    await sink.deliver(page())
    assert len(server.requests) == 2
    assert time.monotonic() - started < 10  # the cap (0.05 s), not the server's 120 s


async def test_400_fails_at_once_naming_status_and_sink(pagerduty: Any) -> None:
    invalid = {"status": "invalid event", "message": "Event object is invalid", "errors": ["bad key"]}
    sink, server = pagerduty(Receiver(then=json_reply(400, invalid)))
    with pytest.raises(SinkError) as caught:
        await sink.deliver(page())
    assert len(server.requests) == 1
    message = str(caught.value)
    assert message.startswith("sink 'pd' (pagerduty): HTTP 400: Event object is invalid; bad key")
    assert message.endswith("after 1 attempt")
    assert ROUTING_KEY not in message
    assert (caught.value.status, caught.value.retryable) == (400, False)


async def test_a_timeout_is_retried(pagerduty: Any) -> None:
    released = threading.Event()

    def stuck(_: Seen) -> Reply:
        released.wait(30)  # answers only once the test is over: the sink must not wait for it
        return ACCEPTED

    sink, server = pagerduty(Receiver(stuck), timeout_s=0.15)
    try:
        await asyncio.wait_for(sink.deliver(page()), 20)
    finally:
        released.set()
    assert len(server.requests) == 2


async def test_a_refused_connection_is_retried_then_reported(
    make_sinks: Callable[..., dict[str, Sink]], secret: Callable[[str, str], Path]
) -> None:
    with serve(Receiver()) as gone:
        url = gone.url  # a loopback port nothing listens on any more
    cfg = {"type": "pagerduty", "routing_key_file": str(secret("k", ROUTING_KEY)), "url": url, **FAST}
    sink = make_sinks({"pd": {**cfg, "attempts": 2}})["pd"]
    with pytest.raises(
        SinkError, match=r"sink 'pd' \(pagerduty\): ConnectError.* after 2 attempts"
    ) as caught:
        await sink.resolve(alert())
    assert caught.value.status is None and caught.value.retryable


def test_retry_after_values() -> None:
    assert retry_after_s("3") == 3.0
    assert retry_after_s(" 0.5 ") == 0.5
    assert (
        retry_after_s("Sun, 01 Jun 2025 00:00:10 GMT", now=dt.datetime(2025, 6, 1, tzinfo=dt.UTC).timestamp())
        == 10
    )
    assert retry_after_s("Sun, 01 Jun 2025 00:00:10 GMT", now=2e9) == 0.0  # a date in the past
    assert retry_after_s("soon") is None
    assert retry_after_s(None) is None
    assert retry_after_s("nan") is None


# -- Slack, webhook, console -----------------------------------------------------------------------------


async def test_slack_message_and_resolution(
    receiver: Callable[[Receiver], RecordingServer],
    make_sinks: Callable[..., dict[str, Sink]],
    secret: Callable[[str, str], Path],
) -> None:
    server = receiver(Receiver(then=(200, {"content-type": "text/plain"}, b"ok")))
    hook = secret("slack-url", f"{server.url}/services/T000/B000/XXXX\n")
    sink = make_sinks({"team-slack": {"type": "slack", "webhook_url_file": str(hook), **FAST}})["team-slack"]

    await sink.deliver(page(low_confidence=True, alert=alert(summary="p99 <2s> & rising")))
    await sink.resolve(alert())

    first, second = server.requests
    assert first.path == "/services/T000/B000/XXXX"
    text = body(first)["text"]
    assert text.startswith(":rotating_light: [low confidence] *HighErrorRate*")
    assert "p99 &lt;2s&gt; &amp; rising" in text  # Slack's control characters escaped
    assert "route `payments`" in text
    assert "page: p(yes) 0.93" in text and "team: payments (0.81)" in text
    assert "<https://runbooks.example/5xx|runbook_url>" in text
    assert body(second)["text"].startswith(":white_check_mark: [resolved] *HighErrorRate*")


async def test_slack_4xx_is_not_retried(
    receiver: Callable[[Receiver], RecordingServer],
    make_sinks: Callable[..., dict[str, Sink]],
    secret: Callable[[str, str], Path],
) -> None:
    server = receiver(Receiver(then=(404, {"content-type": "text/plain"}, b"no_service")))
    hook = secret("slack-url", f"{server.url}/services/secret-part")
    sink = make_sinks({"s": {"type": "slack", "webhook_url_file": str(hook), **FAST}})["s"]
    with pytest.raises(
        SinkError, match=r"^sink 's' \(slack\): HTTP 404: no_service after 1 attempt$"
    ) as caught:
        await sink.deliver(page())
    assert "secret-part" not in str(caught.value)
    assert len(server.requests) == 1


async def test_webhook_body_and_bearer_token(
    receiver: Callable[[Receiver], RecordingServer],
    make_sinks: Callable[..., dict[str, Sink]],
    secret: Callable[[str, str], Path],
) -> None:
    server = receiver(Receiver(then=(204, {}, b"")))
    token = secret("hook-token", "s3cr3t-token\n")
    sinks = make_sinks(
        {
            "hook": {"type": "webhook", "url": f"{server.url}/pages", "token_file": str(token), **FAST},
            "open": {"type": "webhook", "url": f"{server.url}/open", **FAST},
        }
    )
    the_page = page(classified=False, answers={}, reason="gateway unavailable")
    await sinks["hook"].deliver(the_page)
    await sinks["hook"].resolve(alert(status="resolved"))
    await sinks["open"].deliver(the_page)

    delivered, resolved, anonymous = server.requests
    assert delivered.headers["authorization"] == "Bearer s3cr3t-token"
    assert body(delivered) == page_document(the_page)
    assert body(delivered) == {
        "version": "1",
        "event": "trigger",
        "dedup_key": "alertmanager:3f2a9c1d0b7e6a54",
        "headline": "[unclassified] HighErrorRate: 5xx above 5% on checkout for 10 minutes",
        "page": {
            "action": "page",
            "route": "payments",
            "severity": "critical",
            "classified": False,
            "low_confidence": False,
            "calibrated": False,
            "reason": "gateway unavailable",
            "answers": {},
        },
        "alert": {
            "source": "alertmanager",
            "key": "alertmanager:3f2a9c1d0b7e6a54",
            "status": "firing",
            "title": "HighErrorRate",
            "summary": "5xx above 5% on checkout for 10 minutes",
            "labels": alert().labels,
            "annotations": alert().annotations,
            "started_at": "2025-03-01T12:00:00+00:00",
            "url": "http://prometheus.example/graph?g0.expr=rate",
        },
    }
    assert resolved.headers["authorization"] == "Bearer s3cr3t-token"
    assert body(resolved) == {
        "version": "1",
        "event": "resolve",
        "dedup_key": "alertmanager:3f2a9c1d0b7e6a54",
        "headline": "[resolved] HighErrorRate",
        "page": None,
        "alert": {**body(delivered)["alert"], "status": "resolved"},
    }
    assert "authorization" not in anonymous.headers


async def test_console_prints_one_json_line_per_delivery(
    make_sinks: Callable[..., dict[str, Sink]], capsys: pytest.CaptureFixture[str]
) -> None:
    sink = make_sinks({"console": {"type": "console"}})["console"]
    assert isinstance(sink, ConsoleSink)
    await sink.deliver(page(low_confidence=True))
    await sink.resolve(alert(status="resolved"))
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    delivered, resolved = (json.loads(line) for line in lines)
    assert delivered == {"sink": "console", **page_document(page(low_confidence=True))}
    assert delivered["headline"].startswith("[low confidence] ")
    assert resolved["event"] == "resolve" and resolved["dedup_key"] == "alertmanager:3f2a9c1d0b7e6a54"


# -- configuration and the shared client --------------------------------------------------------------


def test_a_missing_or_empty_secret_file_names_the_sink_and_the_file(
    tmp_path: Path, secret: Callable[[str, str], Path]
) -> None:
    missing = tmp_path / "nope"
    configs = parse_sink_configs({"oncall": {"type": "pagerduty", "routing_key_file": str(missing)}})
    with pytest.raises(
        ConfigError, match=rf"sink 'oncall' \(pagerduty\): routing_key_file '{missing}' does not exist"
    ):
        build_sinks(configs)
    empty = secret("empty", "\n")
    configs = parse_sink_configs(
        {"hook": {"type": "webhook", "url": "https://x.example", "token_file": str(empty)}}
    )
    with pytest.raises(SinkConfigError, match=rf"sink 'hook' \(webhook\): token_file '{empty}' is empty"):
        build_sinks(configs)


def test_a_slack_file_without_a_url_is_refused_without_quoting_it(secret: Callable[[str, str], Path]) -> None:
    path = secret("slack", "xoxb-not-a-url")
    configs = parse_sink_configs({"chat": {"type": "slack", "webhook_url_file": str(path)}})
    with pytest.raises(
        SinkConfigError, match=r"sink 'chat' \(slack\): webhook_url_file .* http\(s\) URL"
    ) as caught:
        build_sinks(configs)
    assert "xoxb" not in str(caught.value)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"type": "pagerdooty", "routing_key_file": "k"}, r"sinks\.x: Input tag 'pagerdooty' .*'pagerduty'"),
        ({"routing_key_file": "k"}, r"sinks\.x: Unable to extract tag using discriminator 'type'"),
        (
            {"type": "webhook", "url": "ftp://files.example"},
            r"sinks\.x\.url: must be an absolute http\(s\) URL",
        ),
        ({"type": "webhook", "url": "/relative"}, r"sinks\.x\.url: must be an absolute http\(s\) URL"),
        ({"type": "pagerduty"}, r"sinks\.x: routing_key_file or routing_key_env is required"),
        (
            {"type": "slack", "webhook_url_file": "f", "webhook_url_env": "HOOK"},
            r"sinks\.x: set webhook_url_file or webhook_url_env, not both",
        ),
        (
            {"type": "webhook", "url": "https://h", "token_env": "1X"},
            r"sinks\.x\.token_env: String should match",
        ),
        (
            {"type": "slack", "webhook_url": "https://h"},
            r"sinks\.x\.webhook_url: Extra inputs are not permitted",
        ),
        ({"type": "console", "attempts": 2}, r"sinks\.x\.attempts: Extra inputs"),
        (
            {"type": "webhook", "url": "https://h.example", "attempts": 0},
            r"sinks\.x\.attempts: .*greater than",
        ),
    ],
)
def test_bad_configs_are_named(raw: dict[str, Any], expected: str) -> None:
    with pytest.raises(SinkConfigError, match=expected):
        parse_sink_configs({"x": raw})


async def test_the_shared_client_closes_with_the_last_sink_it_made() -> None:
    cfg = parse_sink_configs(
        {
            "a": {"type": "webhook", "url": "https://a.example"},
            "b": {"type": "webhook", "url": "https://b.example"},
            "c": {"type": "console"},
        }
    )
    sinks = build_sinks(cfg)
    http = sinks["a"]._http  # type: ignore[attr-defined]
    assert http is sinks["b"]._http  # type: ignore[attr-defined]
    await sinks["a"].aclose()
    await sinks["a"].aclose()  # idempotent: does not count twice
    assert not http.is_closed
    await sinks["b"].aclose()
    await sinks["c"].aclose()
    assert http.is_closed

    async with httpx.AsyncClient() as mine:
        sinks = build_sinks(cfg, client=mine)
        for sink in sinks.values():
            await sink.aclose()
        assert not mine.is_closed  # its owner closes it


async def test_a_secret_from_an_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    configs = parse_sink_configs({"oncall": {"type": "pagerduty", "routing_key_env": "PD_KEY"}})
    with pytest.raises(
        SinkConfigError, match=r"sink 'oncall' \(pagerduty\): routing_key_env 'PD_KEY' is not set"
    ):
        build_sinks(configs)
    monkeypatch.setenv("PD_KEY", ROUTING_KEY)
    sinks = build_sinks(configs)
    assert sinks["oncall"].event(page())["routing_key"] == ROUTING_KEY  # type: ignore[attr-defined]
    await sinks["oncall"].aclose()
    monkeypatch.setenv("HOOK", "not a url")
    slack = parse_sink_configs({"chat": {"type": "slack", "webhook_url_env": "HOOK"}})
    with pytest.raises(SinkConfigError) as caught:
        build_sinks(slack)
    assert "webhook_url_env 'HOOK'" in str(caught.value) and "not a url" not in str(caught.value)
