"""How every eval asks the gateway: one retry policy, a few requests at a time, a progress bar."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

from app.jev.client import Retry

# On 429/503 and dropped connections: the gateway sheds load, an eval waits its turn.
RETRY = Retry(attempts=6)

T = TypeVar("T")
R = TypeVar("R")


async def each(
    items: Sequence[T],
    ask: Callable[[T], Awaitable[R]],
    *,
    concurrency: int = 4,
    progress: Callable[[], None] = lambda: None,
) -> list[R]:
    """`ask(item)` for every item, `concurrency` at a time, the answers in item order. The first
    failure is raised and cancels the rest: no request is left running."""
    gate = asyncio.Semaphore(concurrency)

    async def one(item: T) -> R:
        async with gate:
            answer = await ask(item)
        progress()
        return answer

    tasks = [asyncio.ensure_future(one(item)) for item in items]
    try:
        return list(await asyncio.gather(*tasks))
    finally:
        for task in tasks:
            task.cancel()


@contextmanager
def progress_bar(label: str, total: int) -> Iterator[Callable[[], None]]:
    """A bar on stderr, gone when done (stdout keeps only the report); yields what advances it."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda: bar.advance(task)
