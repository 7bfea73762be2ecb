"""Where pages go: PagerDuty Events API v2, a Slack incoming webhook, a generic JSON webhook, the console.

A sink delivers a `Page` (a firing alert the policy chose to page or ticket, classified or not) and
resolves an `Alert`. Every delivery is keyed by `alert.key`: PagerDuty deduplicates on it (the
`dedup_key`), so a sender's redelivery never pages twice and the later, classified update of the same
alert lands on the same incident. Slack and the webhook do not deduplicate; the router's ledger does.

Each HTTP delivery is retried (tenacity: exponential backoff with full jitter, `Retry-After` honoured
and capped) on connect errors, timeouts, 429 and 5xx, never on another 4xx (a configuration problem)
and never after a 2xx. A delivery that still fails raises `SinkError`. Secrets (the PagerDuty
routing key, the Slack webhook URL, the webhook's token) are read once, from files or env vars,
by `build_sinks`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Protocol

import httpx
from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt
from tenacity.wait import wait_base, wait_random_exponential

from app.alerts.records import Alert, Page, Severity
from app.core.config import ConfigError
from app.core.models import StrictModel
from app.core.retry import retry_after_s

log = logging.getLogger("app.alerts.sinks")

PAGERDUTY_URL = "https://events.pagerduty.com/v2/enqueue"
USER_AGENT = "dgemma-alert-router"
SCHEMA_VERSION = "1"  # of the webhook's and the console's JSON documents
_SUMMARY_MAX = 1024  # PagerDuty's limit on payload.summary
_DEDUP_MAX = 255  # PagerDuty's limit on dedup_key
_ERROR_BODY_MAX = 300  # of a failed answer's body, quoted in SinkError


# -- configuration ------------------------------------------------------------------------------------


class SinkConfigError(ConfigError):
    """A sink's configuration or secret file is unusable; the message names the sink and the file."""


def _http_url(value: str) -> str:
    """`value` if it is an absolute http(s) URL with a host (a typo fails at load, not at 3 a.m.)."""
    try:
        url = httpx.URL(value)
    except (httpx.InvalidURL, TypeError) as e:
        raise ValueError(f"not a URL ({e})") from e
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError("must be an absolute http(s) URL with a host")
    return value


HttpUrlStr = Annotated[str, AfterValidator(_http_url)]  # kept as written (pydantic's HttpUrl adds a "/")
EnvName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]  # an environment variable's name


class _HttpSinkConfig(StrictModel):
    """Retry knobs every HTTP sink shares."""

    attempts: int = Field(3, ge=1, le=10)
    """Deliveries tried in all (1: no retry)."""
    timeout_s: float = Field(10.0, gt=0, le=120)
    """Deadline of one attempt, connect to last byte."""
    backoff_s: float = Field(0.5, ge=0, le=60)
    """Base of the exponential backoff: the n-th retry waits a random time in [0, backoff_s * 2**(n-1)]."""
    backoff_max_s: float = Field(5.0, ge=0, le=300)
    """Cap of any wait between attempts, a server's `Retry-After` included."""


def _one_source(cfg: BaseModel, secret: str, *, required: bool) -> None:
    """A secret comes from a file (`SECRET_file`) or an environment variable (`SECRET_env`), not both."""
    given = [f"{secret}_{kind}" for kind in ("file", "env") if getattr(cfg, f"{secret}_{kind}") is not None]
    if len(given) > 1:
        raise ValueError(f"set {secret}_file or {secret}_env, not both")
    if required and not given:
        raise ValueError(f"{secret}_file or {secret}_env is required")


class PagerDutyConfig(_HttpSinkConfig):
    type: Literal["pagerduty"]
    routing_key_file: Path | None = None
    """File holding the Events API v2 integration key (mounted from Secret Manager)."""
    routing_key_env: EnvName | None = None
    """Or the environment variable holding it (a Cloud Run secret as an env var)."""
    url: HttpUrlStr = PAGERDUTY_URL
    """The Events API v2 endpoint (overridden in tests, or for the EU service region)."""
    client_name: str = Field("DiffusionGemma alert router", min_length=1)
    """The event's `client`, shown on the incident."""

    @model_validator(mode="after")
    def _secret(self) -> PagerDutyConfig:
        _one_source(self, "routing_key", required=True)
        return self


class SlackConfig(_HttpSinkConfig):
    type: Literal["slack"]
    webhook_url_file: Path | None = None
    """File holding the incoming-webhook URL (the URL is the credential)."""
    webhook_url_env: EnvName | None = None
    """Or the environment variable holding it."""

    @model_validator(mode="after")
    def _secret(self) -> SlackConfig:
        _one_source(self, "webhook_url", required=True)
        return self


class WebhookConfig(_HttpSinkConfig):
    type: Literal["webhook"]
    url: HttpUrlStr
    """Where the JSON document (`page_document` / `resolve_document`) is POSTed."""
    token_file: Path | None = None
    """File holding a token sent as `Authorization: Bearer`; none: no Authorization header."""
    token_env: EnvName | None = None
    """Or the environment variable holding it."""

    @model_validator(mode="after")
    def _secret(self) -> WebhookConfig:
        _one_source(self, "token", required=False)
        return self


class ConsoleConfig(StrictModel):
    type: Literal["console"]


SinkConfig = Annotated[
    PagerDutyConfig | SlackConfig | WebhookConfig | ConsoleConfig, Field(discriminator="type")
]
_SINK_CONFIG: TypeAdapter[SinkConfig] = TypeAdapter(SinkConfig)


def parse_sink_configs(raw: Mapping[str, Any], where: str = "sinks") -> dict[str, SinkConfig]:
    """Sink configs from plain data (a policy file's `[sinks.NAME]` tables). Raises SinkConfigError
    naming `where.NAME.field` for every problem."""
    out: dict[str, SinkConfig] = {}
    problems: list[str] = []
    for name, data in raw.items():
        try:
            out[name] = _SINK_CONFIG.validate_python(data)
        except ValidationError as e:
            for err in e.errors():
                # The union's tag ("pagerduty") is in the location; the reader wrote no such key.
                loc = [str(p) for p in err["loc"]]
                if loc and isinstance(data, Mapping) and loc[0] == data.get("type"):
                    loc = loc[1:]
                msg = err["msg"].removeprefix("Value error, ")
                problems.append(f"{'.'.join([where, name, *loc])}: {msg}")
    if problems:
        raise SinkConfigError("; ".join(problems))
    return out


def _secret_of(sink: str, cfg: SinkConfig, secret: str) -> tuple[str, str] | None:
    """The secret's value and where it came from (for messages that never quote it), or None."""
    kind = cfg.type
    var = getattr(cfg, f"{secret}_env")
    if var is not None:
        value = os.environ.get(var, "").strip()
        if not value:
            raise SinkConfigError(f"sink {sink!r} ({kind}): {secret}_env {var!r} is not set or empty")
        if any(c.isspace() for c in value):
            raise SinkConfigError(f"sink {sink!r} ({kind}): {secret}_env {var!r} holds more than one token")
        return value, f"{secret}_env {var!r}"
    path = getattr(cfg, f"{secret}_file")
    if path is None:
        return None
    return _read_secret(sink, kind, f"{secret}_file", path), f"{secret}_file {str(path)!r}"


def _read_secret(sink: str, kind: str, field: str, path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError as e:
        raise SinkConfigError(f"sink {sink!r} ({kind}): {field} {str(path)!r} does not exist") from e
    except (OSError, UnicodeDecodeError) as e:
        raise SinkConfigError(
            f"sink {sink!r} ({kind}): {field} {str(path)!r} is not readable ({type(e).__name__})"
        ) from e
    if not text:
        raise SinkConfigError(f"sink {sink!r} ({kind}): {field} {str(path)!r} is empty")
    if any(c.isspace() for c in text):
        # Never echo the content: it is a secret.
        raise SinkConfigError(f"sink {sink!r} ({kind}): {field} {str(path)!r} holds more than one token")
    return text


# -- errors and retries -------------------------------------------------------------------------------


class SinkError(RuntimeError):
    """A delivery failed for good. The message names the sink, the HTTP status or error, and the
    attempts; `retryable` is True when the last failure was transient (the sink gave up retrying),
    False when the receiver refused the delivery (a 4xx other than 429: a configuration problem)."""

    def __init__(
        self, sink: str, kind: str, problem: str, *, attempts: int, status: int | None, retryable: bool
    ) -> None:
        plural = "s" if attempts != 1 else ""
        super().__init__(f"sink {sink!r} ({kind}): {problem} after {attempts} attempt{plural}")
        self.sink = sink
        self.status = status
        self.attempts = attempts
        self.retryable = retryable


class _Transient(Exception):
    """One attempt failed in a way worth another: a connect error, a timeout, 429 or 5xx."""

    def __init__(self, problem: str, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.status = status
        self.retry_after = retry_after


class _Refused(Exception):
    """The receiver refused the delivery (another 4xx, a 3xx) or the request cannot be sent."""

    def __init__(self, problem: str, status: int | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.status = status


# Transport errors worth another attempt; the others (UnsupportedProtocol, LocalProtocolError) would
# fail the same way again.
_TRANSIENT_ERRORS = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError)


class _Backoff(wait_base):
    """Full-jitter exponential backoff, or the server's `Retry-After` when it sent one; both capped."""

    def __init__(self, base_s: float, cap_s: float) -> None:
        self.cap_s = cap_s
        self.jitter = wait_random_exponential(multiplier=base_s, max=cap_s)

    def __call__(self, retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        error = outcome.exception() if outcome is not None else None
        if isinstance(error, _Transient) and error.retry_after is not None:
            return min(error.retry_after, self.cap_s)
        return float(self.jitter(retry_state))


def _body_excerpt(r: httpx.Response) -> str:
    try:
        data = r.json()
    except ValueError:
        return " ".join(r.text.split())[:_ERROR_BODY_MAX]
    if isinstance(data, dict):
        # PagerDuty: {"status": "invalid event", "message": "Event object is invalid", "errors": [...]}
        parts = [str(data[k]) for k in ("message", "error", "detail") if data.get(k)]
        if isinstance(data.get("errors"), list):
            parts += [str(e) for e in data["errors"]]
        if parts:
            return "; ".join(parts)[:_ERROR_BODY_MAX]
    return json.dumps(data)[:_ERROR_BODY_MAX]


class _SharedClient:
    """The one httpx client of a set of sinks: closed with the last of them if build_sinks made it;
    a client passed in stays open (its owner closes it)."""

    def __init__(self, client: httpx.AsyncClient | None) -> None:
        self._client = client
        self._owned = client is None
        self._users = 0

    def acquire(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                headers={"user-agent": USER_AGENT},
                follow_redirects=False,  # a redirect means a wrong URL: fail, don't re-POST elsewhere
                limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
            )
        self._users += 1
        return self._client

    async def release(self) -> None:
        self._users -= 1
        if self._users == 0 and self._owned and self._client is not None:
            await self._client.aclose()


# -- the sinks ----------------------------------------------------------------------------------------


class Sink(Protocol):
    name: str

    async def deliver(self, page: Page) -> None: ...  # raises SinkError after its retries

    async def resolve(self, alert: Alert) -> None: ...  # raises SinkError after its retries

    async def aclose(self) -> None: ...


class _HttpSink:
    """POSTs JSON with retries; subclasses say what to POST where."""

    kind: ClassVar[str]

    def __init__(self, name: str, config: _HttpSinkConfig, shared: _SharedClient) -> None:
        self.name = name
        self._config = config
        self._shared = shared
        self._http = shared.acquire()
        self._closed = False

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            await self._shared.release()

    async def _post(self, url: str, body: dict[str, Any], headers: Mapping[str, str] | None = None) -> None:
        """POST `body` until a 2xx, a refusal, or the last attempt. Raises SinkError."""
        cfg = self._config
        content = json.dumps(body, default=str, ensure_ascii=False).encode()
        sent = {"content-type": "application/json", "user-agent": USER_AGENT, **(headers or {})}
        attempts = 0

        async def once() -> None:
            nonlocal attempts
            attempts += 1
            try:
                # httpx's timeouts bound each read/write; this bounds the whole attempt.
                async with asyncio.timeout(cfg.timeout_s):
                    r = await self._http.post(
                        url, content=content, headers=sent, timeout=httpx.Timeout(cfg.timeout_s)
                    )
            except TimeoutError as e:
                raise _Transient(f"no answer within {cfg.timeout_s:g} s") from e
            except _TRANSIENT_ERRORS as e:
                raise _Transient(_transport_problem(e)) from e
            except httpx.HTTPError as e:
                raise _Refused(_transport_problem(e)) from e
            if r.is_success:
                return
            problem = f"HTTP {r.status_code}: {_body_excerpt(r) or r.reason_phrase}"
            if r.status_code == 429 or r.status_code >= 500:
                raise _Transient(problem, r.status_code, retry_after_s(r.headers.get("retry-after")))
            raise _Refused(problem, r.status_code)

        def before_sleep(state: RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome is not None else None
            wait = state.next_action.sleep if state.next_action is not None else 0.0
            log.warning(
                "sink %s (%s): attempt %d/%d failed (%s); retrying in %.2f s",
                self.name,
                self.kind,
                state.attempt_number,
                cfg.attempts,
                error,
                wait,
            )

        retrying = AsyncRetrying(
            stop=stop_after_attempt(cfg.attempts),
            wait=_Backoff(cfg.backoff_s, cfg.backoff_max_s),
            retry=retry_if_exception_type(_Transient),
            before_sleep=before_sleep,
            reraise=True,
        )
        try:
            await retrying(once)
        except _Transient as e:
            raise SinkError(
                self.name, self.kind, e.problem, attempts=attempts, status=e.status, retryable=True
            ) from None
        except _Refused as e:
            raise SinkError(
                self.name, self.kind, e.problem, attempts=attempts, status=e.status, retryable=False
            ) from None


def _transport_problem(e: Exception) -> str:
    # str(e) of a connect error is the OS's message; httpx puts no URL in it (URLs may be secrets).
    detail = str(e).strip()
    return f"{type(e).__name__}: {detail}"[:_ERROR_BODY_MAX] if detail else type(e).__name__


def dedup_key(alert: Alert) -> str:
    """PagerDuty's `dedup_key` for the alert: its key, or (past PagerDuty's 255 characters) a prefix
    and a digest of it, so every delivery about the alert still carries the same one."""
    if len(alert.key) <= _DEDUP_MAX:
        return alert.key
    digest = hashlib.sha256(alert.key.encode()).hexdigest()
    return f"{alert.key[: _DEDUP_MAX - len(digest) - 1]}:{digest}"


def _markers(page: Page) -> str:
    tags = []
    if page.action != "page":
        tags.append(f"[{page.action}]")
    if not page.classified:
        tags.append("[unclassified]")
    if page.low_confidence:
        tags.append("[low confidence]")
    return " ".join(tags)


def headline(page: Page) -> str:
    """One line a person reads first: markers (`[ticket]`, `[unclassified]`, `[low confidence]`),
    then the alert's title and summary."""
    alert = page.alert
    text = alert.title
    if alert.summary and alert.summary != alert.title:
        text = f"{text}: {alert.summary}"
    markers = _markers(page)
    return f"{markers} {text}" if markers else text


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _first_label(alert: Alert, *names: str) -> str | None:
    return next((alert.labels[n] for n in names if alert.labels.get(n)), None)


def _links(alert: Alert) -> list[dict[str, str]]:
    """The alert's URL, then every annotation holding a URL (runbook_url, dashboard_url...)."""
    links = [{"href": alert.url, "text": f"Open in {alert.source}"}] if alert.url else []
    for key, value in alert.annotations.items():
        if key.lower().endswith("url") and value.startswith(("https://", "http://")):
            links.append({"href": value, "text": key})
    return links


def answer_text(name: str, answer: Any) -> str:
    """One Jev answer in a few words: `page: yes 0.93`, `team: payments (0.81)`, `severity: 2.4 (0.77)`."""
    if isinstance(answer, Mapping):
        kind = answer.get("type")
        if kind == "noul" and isinstance(answer.get("noul"), int | float):
            return f"{name}: p(yes) {answer['noul']:.2f}"
        if kind == "choice" and "choice" in answer:
            conf = answer.get("confidence")
            return f"{name}: {answer['choice']}" + (f" ({conf:.2f})" if isinstance(conf, int | float) else "")
        if kind == "score" and isinstance(answer.get("score"), int | float):
            conf = answer.get("confidence")
            tail = f" ({conf:.2f})" if isinstance(conf, int | float) else ""
            return f"{name}: {answer['score']:.1f}{tail}"
    return f"{name}: {_clip(json.dumps(answer, default=str), 80)}"


def page_document(page: Page) -> dict[str, Any]:
    """The generic JSON document of a delivery (the webhook's body, the console's line), schema `"1"`:

    {"version": "1", "event": "trigger", "dedup_key": str,   # dedup_key: the alert's key
     "headline": str,                                        # markers + title + summary
     "page": {"action": "page"|"ticket"|"drop", "route": str,
              "severity": "critical"|"error"|"warning"|"info", "classified": bool,
              "low_confidence": bool, "calibrated": bool, "reason": str,
              "answers": {question: Jev answer, probabilities included}},
     "alert": {"source", "key", "status", "title", "summary", "labels": {str: str},
               "annotations": {str: str}, "started_at": ISO 8601 | null, "url": str | null}}
    """
    return {
        "version": SCHEMA_VERSION,
        "event": "trigger",
        "dedup_key": page.alert.key,
        "headline": headline(page),
        "page": _page_fields(page),
        "alert": _alert_document(page.alert),
    }


def _page_fields(page: Page) -> dict[str, Any]:
    """What the router decided, as every sink shows it."""
    return {
        "action": page.action,
        "route": page.route,
        "severity": page.severity,
        "classified": page.classified,
        "low_confidence": page.low_confidence,
        "calibrated": page.calibrated,
        "reason": page.reason,
        "answers": page.answers,
    }


def resolve_document(alert: Alert) -> dict[str, Any]:
    """A resolution: `{"version": "1", "event": "resolve", "dedup_key", "headline", "page": null,
    "alert": {...}}` (the alert as in `page_document`)."""
    return {
        "version": SCHEMA_VERSION,
        "event": "resolve",
        "dedup_key": alert.key,
        "headline": f"[resolved] {alert.title}",
        "page": None,
        "alert": _alert_document(alert),
    }


def _alert_document(alert: Alert) -> dict[str, Any]:
    return {
        "source": alert.source,
        "key": alert.key,
        "status": alert.status,
        "title": alert.title,
        "summary": alert.summary,
        "labels": alert.labels,
        "annotations": alert.annotations,
        "started_at": alert.started_at.isoformat() if alert.started_at else None,
        "url": alert.url,
    }


class PagerDutySink(_HttpSink):
    """PagerDuty Events API v2. `dedup_key` is always the alert's key: a redelivery updates the same
    alert instead of paging twice, the classified update of an unclassified page lands on its
    incident, and `resolve` closes it. A `ticket` (any action but `page`) goes out with severity
    `info`, whatever the page's severity, so it does not wake anyone under PagerDuty's usual
    urgency rules; which routes send tickets here is the policy's choice."""

    kind = "pagerduty"

    def __init__(self, name: str, config: PagerDutyConfig, shared: _SharedClient, routing_key: str) -> None:
        super().__init__(name, config, shared)
        self.url = config.url
        self.client_name = config.client_name
        self._routing_key = routing_key

    def event(self, page: Page) -> dict[str, Any]:
        """The trigger event for `page`."""
        alert = page.alert
        severity: Severity = page.severity if page.action == "page" else "info"
        payload: dict[str, Any] = {
            "summary": _clip(headline(page), _SUMMARY_MAX),
            "source": _first_label(alert, "instance", "host", "pod", "service", "job") or alert.source,
            "severity": severity,
            "class": alert.title,
            "custom_details": {
                **_page_fields(page),
                "summary": alert.summary,
                "alert_source": alert.source,
                "alert_key": alert.key,
                "labels": alert.labels,
                "annotations": alert.annotations,
            },
        }
        if alert.started_at is not None:
            payload["timestamp"] = alert.started_at.isoformat()
        component = _first_label(alert, "service", "job", "container")
        if component:
            payload["component"] = component
        group = _first_label(alert, "namespace", "cluster")
        if group:
            payload["group"] = group
        body: dict[str, Any] = {
            "routing_key": self._routing_key,
            "event_action": "trigger",
            "dedup_key": dedup_key(alert),
            "payload": payload,
            "client": self.client_name,
        }
        if alert.url:
            body["client_url"] = alert.url
        links = _links(alert)
        if links:
            body["links"] = links
        return body

    async def deliver(self, page: Page) -> None:
        await self._post(self.url, self.event(page))

    async def resolve(self, alert: Alert) -> None:
        body = {"routing_key": self._routing_key, "event_action": "resolve", "dedup_key": dedup_key(alert)}
        await self._post(self.url, body)


def _slack_escape(text: str) -> str:
    # Slack's three control characters; everything else is literal text.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_SLACK_ICON = {
    "critical": ":rotating_light:",
    "error": ":red_circle:",
    "warning": ":warning:",
    "info": ":information_source:",
}


class SlackSink(_HttpSink):
    """A Slack incoming webhook: one `{"text": ...}` message (mrkdwn) per delivery, one per
    resolution. Slack answers 200 `ok`."""

    kind = "slack"

    def __init__(self, name: str, config: SlackConfig, shared: _SharedClient, webhook_url: str) -> None:
        super().__init__(name, config, shared)
        self._webhook_url = webhook_url

    @staticmethod
    def message(page: Page) -> dict[str, Any]:
        alert = page.alert
        icon = _SLACK_ICON[page.severity] if page.action == "page" else ":ticket:"
        markers = _markers(page)
        title = f"*{_slack_escape(alert.title)}*"
        lines = [f"{icon} {_slack_escape(markers) + ' ' if markers else ''}{title}"]
        if alert.summary and alert.summary != alert.title:
            lines.append(_slack_escape(alert.summary))
        lines.append(f"{page.action} · route `{_slack_escape(page.route)}` · severity {page.severity}")
        if page.reason:
            lines.append(f"_{_slack_escape(page.reason)}_")
        if page.answers:
            lines.append(_slack_escape(" · ".join(answer_text(k, v) for k, v in page.answers.items())))
        links = [f"<{link['href']}|{_slack_escape(link['text'])}>" for link in _links(alert)]
        if links:
            lines.append(" · ".join(links))
        return {"text": "\n".join(lines)}

    @staticmethod
    def resolution(alert: Alert) -> dict[str, Any]:
        text = f":white_check_mark: [resolved] *{_slack_escape(alert.title)}*"
        if alert.summary and alert.summary != alert.title:
            text += f": {_slack_escape(alert.summary)}"
        return {"text": text}

    async def deliver(self, page: Page) -> None:
        await self._post(self._webhook_url, self.message(page))

    async def resolve(self, alert: Alert) -> None:
        await self._post(self._webhook_url, self.resolution(alert))


class WebhookSink(_HttpSink):
    """A generic JSON webhook: `page_document(page)` per delivery, `resolve_document(alert)` per
    resolution, with `Authorization: Bearer TOKEN` when a token file is configured. Any 2xx is done."""

    kind = "webhook"

    def __init__(self, name: str, config: WebhookConfig, shared: _SharedClient, token: str | None) -> None:
        super().__init__(name, config, shared)
        self.url = config.url
        self._headers = {"authorization": f"Bearer {token}"} if token else {}

    async def deliver(self, page: Page) -> None:
        await self._post(self.url, page_document(page), self._headers)

    async def resolve(self, alert: Alert) -> None:
        await self._post(self.url, resolve_document(alert), self._headers)


class ConsoleSink:
    """One JSON line per delivery on stdout (`{"sink": NAME, ...page_document}`): the local stack's
    default, so a newcomer sees the page that would go out. Never fails."""

    kind = "console"

    def __init__(self, name: str) -> None:
        self.name = name

    def _print(self, document: dict[str, Any]) -> None:
        line = json.dumps({"sink": self.name, **document}, default=str, ensure_ascii=False)
        try:
            print(line, file=sys.stdout, flush=True)
        except (OSError, ValueError) as e:  # stdout closed or gone: the console is best effort
            log.warning("sink %s (console): cannot write to stdout (%s)", self.name, type(e).__name__)

    async def deliver(self, page: Page) -> None:
        self._print(page_document(page))

    async def resolve(self, alert: Alert) -> None:
        self._print(resolve_document(alert))

    async def aclose(self) -> None:
        pass


def build_sinks(
    configs: Mapping[str, SinkConfig], *, client: httpx.AsyncClient | None = None
) -> dict[str, Sink]:
    """One sink per config, secrets read now. The HTTP sinks share `client` (its owner closes it), or
    one made here and closed with the last of them. Raises SinkConfigError (a ConfigError) naming the
    sink and the file."""
    makers = {name: _prepare(name, cfg) for name, cfg in configs.items()}  # every secret checked first
    shared = _SharedClient(client)
    return {name: make(shared) for name, make in makers.items()}


def _prepare(name: str, cfg: SinkConfig) -> Callable[[_SharedClient], Sink]:
    """Read and check the sink's secret now; the sink itself is made once every config passed."""
    if isinstance(cfg, PagerDutyConfig):
        key = _secret_of(name, cfg, "routing_key")
        assert key is not None  # the config requires one
        return lambda shared: PagerDutySink(name, cfg, shared, key[0])
    if isinstance(cfg, SlackConfig):
        found = _secret_of(name, cfg, "webhook_url")
        assert found is not None
        url, origin = found
        try:
            _http_url(url)
        except ValueError:  # the message never quotes the URL: it is the secret
            raise SinkConfigError(
                f"sink {name!r} (slack): {origin} does not hold an absolute http(s) URL"
            ) from None
        return lambda shared: SlackSink(name, cfg, shared, url)
    if isinstance(cfg, WebhookConfig):
        token = _secret_of(name, cfg, "token")
        return lambda shared: WebhookSink(name, cfg, shared, token[0] if token else None)
    return lambda _: ConsoleSink(name)
