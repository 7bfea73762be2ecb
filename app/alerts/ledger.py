"""The router's ledger: per alert episode, the page chosen for it and what each sink already got,
kept as create-only facts in a store (app/alerts/store.py) that every router process can share.

Layout, under the store's prefix:
    alerts/<key>/<episode>/chosen            the decided page (the first process to create it wins)
    alerts/<key>/<episode>/updated           the late classification of a fallback page (its page)
    alerts/<key>/<episode>/<step>:<sink>     that sink got that step (page.classified, ticket.fallback,
                                             resolve...): created after the sink's 2xx
    alerts/<key>/<episode>/<step>:<sink>.claim   a process is sending it (owner, until when)
    alerts/<key>/<episode>/resolved          the alert's resolution went out
    alerts/<key>/<episode>/classify.claim    a process is classifying a fallback page late
    pending/<key>~<episode>                  a fallback page waiting for its classification
The episode is the alert's start time: a re-fire after a resolution is a new episode. Facts are
never overwritten (so the one-write-per-second limit per object never applies); only a claim is
taken over, by compare-and-swap on its generation, once it has expired.

A crash between a sink's send and its fact re-sends on the sender's retry once the claim expires:
at least once, as Alertmanager itself chooses (PagerDuty folds it into the open incident by its
`dedup_key`; Slack and the webhook show it twice).
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import time
import urllib.parse
import uuid
from dataclasses import dataclass

from pydantic import TypeAdapter

from app.alerts.answers import RouterAnswers
from app.alerts.records import Alert, Page
from app.alerts.store import Keep, ObjectStore

_PAGE = TypeAdapter(Page)
# Page names RouterAnswers for the type checker alone (records.py stays standard library only, for the
# toy's training): pydantic is given it here. The ledger never stores it (`choose` excludes it).
_PAGE.rebuild(_types_namespace={"RouterAnswers": RouterAnswers})
_ALERT = TypeAdapter(Alert)
RESOLVED, UPDATED, CHOSEN, CLASSIFY = "resolved", "updated", "chosen", "classify"
_CLAIM, _PENDING = ".claim", "pending/"


def keep_in_memory(name: str) -> Keep:
    """What the fail-open store (app/alerts/store.py `FailoverStore`) keeps in memory of each of the
    ledger's names: never a claim (one this process does not hold must not keep a send off while the
    store is away); a pending entry's body, read to resume it, never a listing's empty stand-in; and
    every fact, since its existence is the fact."""
    if name.endswith(_CLAIM):
        return "never"
    return "read" if name.startswith(_PENDING) else "listed"


def episode_of(alert: Alert) -> str:
    """The alert's start time (UTC, sortable), or "-" when its sender gave none."""
    if alert.started_at is None:
        return "-"
    started = alert.started_at
    if started.tzinfo is not None:
        started = started.astimezone(dt.UTC)
    return started.strftime("%Y%m%dT%H%M%S.%fZ")


def _quote(key: str) -> str:
    return urllib.parse.quote(key, safe="")


@dataclass(frozen=True)
class Claim:
    name: str
    generation: int


@dataclass(frozen=True)
class Pending:
    """A fallback page waiting for its classification, as any process finds it."""

    alert: Alert
    since: float  # time.time() of the fallback page


class Ledger:
    def __init__(self, store: ObjectStore, *, claim_s: float = 60.0, owner: str | None = None) -> None:
        self.store = store
        self.claim_s = claim_s
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

    def over(self, store: ObjectStore) -> Ledger:
        """This ledger (its owner, its claims' length) through `store`: one delivery's calls, each
        answered by its deadline (app/alerts/store.py `FailoverStore.within`)."""
        return Ledger(store, claim_s=self.claim_s, owner=self.owner)

    async def episode(self, alert: Alert) -> Episode:
        """The alert's episode, its facts read (one listing)."""
        ep = Episode(self, alert)
        await ep.load()
        return ep

    async def add_pending(self, alert: Alert) -> None:
        body = {"alert": _ALERT.dump_python(alert, mode="json"), "since": time.time()}
        await self.store.create(_pending_name(alert), body)

    async def drop_pending(self, alert: Alert) -> None:
        await self.store.delete(_pending_name(alert))

    async def release(self, claim: Claim) -> None:
        await self.store.delete(claim.name)

    async def pending(self) -> list[Pending]:
        out = []
        for name in await self.store.names(_PENDING):
            found = await self.store.read(name)
            if found is None:
                continue  # done meanwhile
            try:
                alert = _ALERT.validate_python(found.body["alert"])
                since = float(found.body["since"])
            except (KeyError, TypeError, ValueError):
                await self.store.delete(name)  # not one of ours: nothing to resume
                continue
            out.append(Pending(alert, since))
        return out


def _pending_name(alert: Alert) -> str:
    return f"{_PENDING}{_quote(alert.key)}~{episode_of(alert)}"


class Episode:
    """One alert episode's facts, as read by `load` and added to by this process."""

    def __init__(self, ledger: Ledger, alert: Alert) -> None:
        self.ledger, self.store, self.alert = ledger, ledger.store, alert
        self.prefix = f"alerts/{_quote(alert.key)}/{episode_of(alert)}/"
        self.facts: set[str] = set()

    async def load(self) -> None:
        cut = len(self.prefix)
        # Facts only accumulate (a concurrent send's mark must survive an older listing).
        self.facts |= {name[cut:] for name in await self.store.names(self.prefix)}

    def done(self, step: str) -> bool:
        return step in self.facts

    async def page(self) -> Page | None:
        """The page to deliver again on a repeat: the late classification once there is one, else
        the chosen page."""
        for fact in (UPDATED, CHOSEN):
            if fact in self.facts:
                found = await self.store.read(self.prefix + fact)
                if found is not None and "page" in found.body:
                    return _PAGE.validate_python(found.body["page"])
        return None

    async def choose(self, page: Page, fact: str = CHOSEN) -> tuple[Page, bool]:
        """Make `page` the episode's decision: (page, True), or (the page another process decided
        first, False)."""
        # The answers are kept (`answers`); the policy's reading of them is this process's (Page).
        page_json = _PAGE.dump_python(page, mode="json", exclude={"router_answers"})
        body = {"page": page_json, "owner": self.ledger.owner}
        created = await self.store.create(self.prefix + fact, body)
        self.facts.add(fact)
        if created is not None:
            return page, True
        found = await self.store.read(self.prefix + fact)
        if found is None or "page" not in found.body:
            return page, False
        return _PAGE.validate_python(found.body["page"]), False

    async def mark(self, step: str) -> bool:
        """Record `step` as done: True if this call did (False: it was already)."""
        created = await self.store.create(self.prefix + step, {"owner": self.ledger.owner})
        self.facts.add(step)
        return created is not None

    async def claim(self, step: str) -> Claim | None:
        """Take `step`'s claim: when nobody holds it, it is this process's, or it has expired.
        None: another process holds it."""
        name = self.prefix + step + _CLAIM
        body = {"owner": self.ledger.owner, "until": time.time() + self.ledger.claim_s}
        generation = await self.store.create(name, body)
        if generation is not None:
            return Claim(name, generation)
        found = await self.store.read(name)
        if found is None:  # released meanwhile: try once more
            generation = await self.store.create(name, body)
            return Claim(name, generation) if generation is not None else None
        if found.body.get("owner") != self.ledger.owner and float(found.body.get("until", 0)) > time.time():
            return None
        generation = await self.store.replace(name, body, found.generation)
        return Claim(name, generation) if generation is not None else None

    async def renew(self, claim: Claim) -> Claim | None:
        """Extend this process's claim; None if another process took it over."""
        body = {"owner": self.ledger.owner, "until": time.time() + self.ledger.claim_s}
        generation = await self.store.replace(claim.name, body, claim.generation)
        return Claim(claim.name, generation) if generation is not None else None

    async def release(self, claim: Claim) -> None:
        await self.ledger.release(claim)

    def sinks(self) -> set[str]:
        """The sinks that got a page or ticket for the episode."""
        return {
            fact.rsplit(":", 1)[1]
            for fact in self.facts
            if fact.startswith(("page", "ticket")) and ":" in fact and not fact.endswith(_CLAIM)
        }

    async def forget(self) -> None:
        """Start the episode over (an alert whose sender gives no start time fires again after its
        resolution)."""
        for name in await self.store.names(self.prefix):
            await self.store.delete(name)
        self.facts = set()
