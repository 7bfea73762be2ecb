"""A TCP proxy on loopback that plays a store's network faults in front of a real server (the GCS
emulator): it passes through, hangs (accepts and reads, never forwards nor answers: a partition, a
stalled front end), adds a delay to each request (a slow store), or refuses connections (its port
closed). The mode can change at any time; it applies to the next bytes, on open connections too.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

from app.core.net import free_port

Mode = Literal["pass", "hang", "slow", "refuse"]


@dataclass
class FaultProxy:
    target_port: int
    mode: Mode = "pass"
    delay_s: float = 3.0  # "slow": before each request is forwarded
    port: int = field(default_factory=free_port)
    _loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)
    _server: asyncio.Server | None = None
    _conns: set[asyncio.StreamWriter] = field(default_factory=set)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def set(self, mode: Mode, delay_s: float | None = None) -> None:
        """Switch to `mode` ("refuse" closes the port and every connection; leaving it opens it)."""
        if delay_s is not None:
            self.delay_s = delay_s
        asyncio.run_coroutine_threadsafe(self._switch(mode), self._loop).result(10)

    async def _switch(self, mode: Mode) -> None:
        self.mode = mode
        if mode == "refuse" and self._server is not None:
            self._server.close()
            self._server = None
            for w in list(self._conns):
                w.transport.abort()
        elif mode != "refuse" and self._server is None:
            self._server = await asyncio.start_server(self._client, "127.0.0.1", self.port)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._conns.add(writer)
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            self._conns.discard(writer)
            return
        self._conns.add(up_writer)
        new_request = [True]  # the next bytes from the client start a request

        async def upstream() -> None:
            while data := await reader.read(65536):
                if self.mode == "hang":
                    continue  # read and dropped: the client waits for an answer that never comes
                if self.mode == "slow" and new_request[0]:
                    await asyncio.sleep(self.delay_s)
                new_request[0] = False
                up_writer.write(data)
                await up_writer.drain()

        async def downstream() -> None:
            while data := await up_reader.read(65536):
                new_request[0] = True
                writer.write(data)
                await writer.drain()

        pumps = [asyncio.ensure_future(upstream()), asyncio.ensure_future(downstream())]
        try:  # either side closing ends the connection
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            for w in (writer, up_writer):
                self._conns.discard(w)
                w.transport.abort()


@contextmanager
def fault_proxy(target_port: int) -> Iterator[FaultProxy]:
    """The proxy, passing through, in a thread of its own until the block ends."""
    proxy = FaultProxy(target_port)
    thread = threading.Thread(target=proxy._loop.run_forever, name="fault-proxy", daemon=True)
    thread.start()
    try:
        proxy.set("pass")
        yield proxy
    finally:
        proxy.set("refuse")
        asyncio.run_coroutine_threadsafe(_cancel_all(), proxy._loop).result(10)
        proxy._loop.call_soon_threadsafe(proxy._loop.stop)
        thread.join(10)
        proxy._loop.close()


async def _cancel_all() -> None:
    """End every connection's task (the loop stops next)."""
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
