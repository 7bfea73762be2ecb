"""Test code of the alert router: a policy builder, the router in process over the real gateway app
and a scripted engine (`router_stacks`, with its recording sinks), and a scripted HTTP receiver
that stands in for a sink's or a webhook's peer on loopback."""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx

from app.alerts.main import create_router_app
from app.alerts.policy import Policy
from app.alerts.records import Alert, Page
from app.alerts.settings import AlertRouterSettings
from app.alerts.sinks import SinkError
from app.alerts.store import ObjectStore
from app.core.polling import wait_until
from app.gateway.main import create_app
from app.jev.client import JevClient
from app.jev.wire import SystemOneResponse
from devtools.harness.loopback import RecordingServer, Reply, Seen, json_reply, serve
from tests.helpers.gateway import ScriptedEngine, gateway_settings

DATA = Path(__file__).resolve().parents[1] / "data" / "alerts"

# -- policies ---------------------------------------------------------------------------------------

THRESHOLDS: dict[str, Any] = {
    "page": 0.7,
    "uncertain": 0.4,
    "ticket": 0.15,
    "page_severity": "critical",
    "team_confidence": 0.5,
}
LEVELS = ("info", "warning", "error", "critical")


# Rules of the policy tests: a page by label, a drop without classifying, a ticket, a team by job.
RULES = """
[[rules]]
name = "payments-always-page"
matchers = ['service="payments"', 'env!="staging"']
action = "page"

[[rules]]
name = "watchdog"
matchers = ['alertname=~"Watch.*"']
action = "drop"
classify = false

[[rules]]
name = "noisy-critical"
matchers = ['alertname="FlappyCritical"']
action = "ticket"

[[rules]]
name = "pg-is-database"
matchers = ['job=~"postgres|pgbouncer"']
team = "database"
"""


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }" if value else "{}"
    return "[" + ", ".join(_toml(v) for v in value) + "]"


def _table(name: str, values: Mapping[str, Any]) -> str:
    return "\n".join([f"[{name}]", *(f"{k} = {_toml(v)}" for k, v in values.items())])


def policy_toml(
    *,
    teams: Mapping[str, str],
    routes: Mapping[str, Mapping[str, Any]],
    questions: Mapping[str, str],
    thresholds: Mapping[str, Any] | None = None,
    floor: Mapping[str, str] | None = None,
    sinks: Mapping[str, Mapping[str, Any]] | None = None,
    levels: Sequence[str] = LEVELS,
    fallback_route: str = "oncall",
) -> str:
    """A router policy's TOML. `teams`: team -> its route (described as the team's name plus "s");
    `routes`: route -> its table (`page`, `ticket` sink lists, `drop`); `thresholds` override
    THRESHOLDS; `floor`: the floor's actions per level (no [floor] table without it); `sinks`: sink ->
    its table (by default every sink the routes name, each `type = "console"`)."""
    if sinks is None:
        named = [s for route in routes.values() for key in ("page", "ticket") for s in route.get(key, ())]
        sinks = {name: {"type": "console"} for name in dict.fromkeys(named)}
    tables = [
        f"fallback_route = {_toml(fallback_route)}",
        _table("thresholds", {**THRESHOLDS, **(thresholds or {})}),
        *([_table("floor", {"actions": floor})] if floor is not None else []),
        _table("questions", questions),
        _table("severity", {"levels": list(levels)}),
        *(
            _table(f"teams.{team}", {"description": f"{team}s", "route": route})
            for team, route in teams.items()
        ),
        *(_table(f"routes.{name}", route) for name, route in routes.items()),
        *(_table(f"sinks.{name}", sink) for name, sink in sinks.items()),
    ]
    return "\n\n".join(tables) + "\n"


def write_policy(path: Path, text: str) -> Path:
    """`text` written to `path` (a directory gets `policy.toml` in it)."""
    if path.is_dir():
        path = path / "policy.toml"
    path.write_text(text)
    return path


ROUTER_SINKS = ("db-pager", "db-chat", "net-pager", "tickets", "oncall-pager")


def router_policy(thresholds: Mapping[str, Any] | None = None) -> str:
    """The router harness's policy: two teams, their routes' sinks named for what they stand for,
    every sink a console (the harness replaces them with recorders). No floor: the sample alerts say
    severity=critical, and here the thresholds alone decide."""
    return policy_toml(
        teams={"database": "database", "network": "network"},
        routes={
            "database": {"page": ["db-pager", "db-chat"], "ticket": ["tickets"], "drop": True},
            "network": {"page": ["net-pager"], "ticket": ["tickets"]},
            "oncall": {"page": ["oncall-pager"]},
        },
        questions={"page": "Wake someone now?", "team": "Which team owns it?", "severity": "How severe?"},
        thresholds=thresholds,
        floor={},
    )


ROUTER_POLICY = router_policy()


# -- the router in process --------------------------------------------------------------------------


class Verdicts(ScriptedEngine):
    """The scripted engine, answering per alert title: (p(page), p(database), severity level).
    An unknown title is a test mistake and fails loudly."""

    def __init__(self) -> None:
        super().__init__()
        self.verdicts: dict[str, tuple[float, float, str]] = {}
        self.health_checks = 0  # the gateway's /readyz asks this
        self.asked: list[str] = []  # the alert title of each read

    async def healthy(self) -> bool:
        self.health_checks += 1
        return await super().healthy()

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:  # type: ignore[override]
        self.asked.append(json.loads(body["state"])["alert"])
        (title,) = [t for t in self.verdicts if json.loads(body["state"])["alert"] == t]
        p_page, p_db, level = self.verdicts[title]
        answers = {}
        for name, q in body["questions"].items():
            if q["type"] == "noul" or set(q.get("criteria", ())) <= {"yes", "no"}:
                probs = {"yes": p_page, "no": 1 - p_page}  # a noul re-read as lettered options too
            elif q["type"] == "choice":
                probs = {"database": p_db, "network": 1 - p_db}
            else:  # score: the levels in the order this read shows them
                probs = {str(j): 0.97 if d == level else 0.01 for j, d in enumerate(q["criteria"])}
            total = sum(probs.values())
            answers[name] = {"type": q["type"], "probabilities": {k: v / total for k, v in probs.items()}}
        usage = {"input_tokens": 10, "output_tokens": len(answers)}
        diagnostics = {name: {"label_mass": 0.9} for name in answers}
        return {"answers": answers, "diagnostics": diagnostics, "usage": usage}


class Recorder:
    """A sink that records deliveries; `fail` more of them raise SinkError first."""

    kind = "recorder"

    def __init__(self, name: str) -> None:
        self.name = name
        self.pages: list[Page] = []
        self.resolved: list[Alert] = []
        self.fail = 0
        self.attempts = 0

    async def deliver(self, page: Page) -> None:
        self.attempts += 1
        if self.fail:
            self.fail -= 1
            raise SinkError(self.name, "recorder", "HTTP 500", attempts=3, status=500, retryable=True)
        self.pages.append(page)

    async def resolve(self, alert: Alert) -> None:
        self.resolved.append(alert)

    async def aclose(self) -> None:
        pass


class CountingGateway(JevClient):
    """The real client, counting its decisions in flight."""

    in_flight = peak = 0

    async def response(self, request: Any) -> SystemOneResponse:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            return await super().response(request)
        finally:
            self.in_flight -= 1


def group(*alerts: tuple[str, str], status: str = "firing", starts_at: str | None = None) -> dict[str, Any]:
    """An Alertmanager group of alerts (title, fingerprint), from the sample firing payload."""
    payload: dict[str, Any] = json.loads((DATA / "alertmanager_firing.json").read_text())
    template = payload["alerts"][0]
    payload["alerts"] = []
    for title, fingerprint in alerts:
        a = copy.deepcopy(template)
        a.update(status=status, fingerprint=fingerprint)
        if starts_at is not None:  # a new episode of the alert (Alertmanager: a re-fire's new start)
            a["startsAt"] = starts_at
        a["labels"]["alertname"] = title
        payload["alerts"].append(a)
    payload["status"] = status
    return payload


class Stack:
    """One router in process: its scripted engine, its recording sinks, a client of its webhooks."""

    def __init__(self, engine: Verdicts, sinks: dict[str, Recorder], client: httpx.AsyncClient, app: Any):
        self.engine, self.sinks, self.client, self.app = engine, sinks, client, app
        self.router = app.state.triage

    def pages(self, sink: str) -> list[Page]:
        return self.sinks[sink].pages

    def delivered(self) -> dict[str, int]:
        """Pages per sink that got any."""
        return {name: len(s.pages) for name, s in self.sinks.items() if s.pages}

    async def fire(
        self,
        *alerts: tuple[str, str],
        source: str = "alertmanager",
        starts_at: str | None = None,
        **headers: str,
    ) -> httpx.Response:
        """An Alertmanager group of firing alerts (title, fingerprint)."""
        body = group(*alerts, starts_at=starts_at)
        return await self.client.post(f"/v1/alerts/{source}", json=body, headers=headers)

    async def resolve(self, *alerts: tuple[str, str]) -> httpx.Response:
        return await self.client.post("/v1/alerts/alertmanager", json=group(*alerts, status="resolved"))


StackFactory = Callable[..., Stack]


@asynccontextmanager
async def router_stacks(policy_file: Path) -> AsyncIterator[StackFactory]:
    """Makes routers on `policy_file` (each over its own gateway app and scripted engine, its sinks
    recorders); closes them all on the way out."""
    made: list[Stack] = []

    def make(
        *,
        gateway_keys: str | None = None,
        gateway_class: type = JevClient,
        gateway_overrides: dict[str, Any] | None = None,
        store: ObjectStore | None = None,
        sinks: dict[str, Recorder] | None = None,
        **overrides: Any,
    ) -> Stack:
        """A router (`store`: its ledger's, shared with another router; `sinks`: shared too)."""
        engine = Verdicts()
        gw_overrides = {"api_keys": gateway_keys, "allow_any_key": False} if gateway_keys else {}
        gw_overrides.update(gateway_overrides or {})
        gateway_app = create_app(gateway_settings(**gw_overrides), engine=engine)
        gateway = gateway_class(
            "http://gateway", api_key="router-key", transport=httpx.ASGITransport(app=gateway_app)
        )
        values: dict[str, Any] = {
            "alerts_policy_file": policy_file,
            "alerts_allow_open_senders": True,
            "alerts_decision_budget_s": 2.0,
            **overrides,
        }
        sinks = sinks or {name: Recorder(name) for name in ROUTER_SINKS}
        app = create_router_app(
            AlertRouterSettings(**values),
            policy=Policy.load(policy_file),
            gateway=gateway,
            sinks=dict(sinks),
            store=store,
        )
        app.state.triage.retry_base_s = 0.02
        client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://router", timeout=30
        )
        made.append(Stack(engine, sinks, client, app))
        return made[-1]

    yield make
    for stack in made:
        await stack.router.aclose()
        await stack.client.aclose()
        await stack.router.gateway.aclose()


# -- a receiver on loopback -------------------------------------------------------------------------

# What PagerDuty's Events API answers an event it accepted.
ACCEPTED = json_reply(202, {"status": "success", "message": "Event processed", "dedup_key": "x"})


def text_reply(status: int) -> Reply:
    """A plain-text reply: `ok` below 300, `sink failed` from 300 on."""
    return status, {"content-type": "text/plain"}, b"sink failed" if status >= 300 else b"ok"


class Receiver:
    """A scripted HTTP receiver, the answer of `devtools.harness.loopback.serve`: its `replies` in turn (a
    reply, or a callable making one from the request), then `then` for every later request; notes
    when each request came (`times`, time.monotonic()). `served()` serves it and keeps the server."""

    def __init__(
        self, *replies: Reply | Callable[[Seen], Reply], then: Reply = ACCEPTED, path: str = ""
    ) -> None:
        self.replies = list(replies)
        self.then = then
        self.path = path  # the path `url` points at
        self.times: list[float] = []
        self._lock = threading.Lock()
        self._server: RecordingServer | None = None

    def __call__(self, seen: Seen) -> Reply:
        with self._lock:
            self.times.append(time.monotonic())
            reply = self.replies.pop(0) if self.replies else self.then
        return reply(seen) if callable(reply) else reply

    @contextmanager
    def served(self) -> Iterator[Receiver]:
        with serve(self) as self._server:
            yield self

    @property
    def server(self) -> RecordingServer:
        assert self._server is not None, "the receiver is not served"
        return self._server

    @property
    def url(self) -> str:
        return f"{self.server.url}{self.path}"

    def requests(self, count: int, timeout_s: float) -> list[Seen]:
        """The first `count` requests once they have come; fails the test if they do not in time."""
        came = wait_until(lambda: len(self.server.requests) >= count, timeout_s, interval_s=0.05)
        assert came, f"{len(self.server.requests)} of {count} requests within {timeout_s} s"
        return self.server.requests[:count]
