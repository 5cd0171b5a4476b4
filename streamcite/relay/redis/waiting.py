"""Readers waiting for entries: futures woken together, timeouts sharing one timer per tick."""

from __future__ import annotations

import asyncio
import math
from typing import Final

__all__ = ["TimerWheel", "Waiters"]


class TimerWheel:
    """Timeouts of blocked reads, rounded up to the next 50 ms tick so that they share one
    loop timer per tick: a blocked read per event per client is the relay's hot path, and a
    timer each (``asyncio.timeout``) costs more than the rest of the read."""

    __slots__ = ("_buckets",)
    TICK: Final = 0.05

    def __init__(self) -> None:
        self._buckets: dict[int, set[asyncio.Future[None]]] = {}

    def add(self, fut: asyncio.Future[None], limit: float) -> int:
        loop = asyncio.get_running_loop()
        key = math.ceil((loop.time() + limit) / self.TICK)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = set()
            loop.call_at(key * self.TICK, self._fire, key)
        bucket.add(fut)
        return key

    def discard(self, key: int, fut: asyncio.Future[None]) -> None:
        bucket = self._buckets.get(key)
        if bucket is not None:
            bucket.discard(fut)

    def _fire(self, key: int) -> None:
        for fut in self._buckets.pop(key, ()):
            if not fut.done():
                fut.set_result(None)

    def fire_all(self) -> None:
        for key in list(self._buckets):
            self._fire(key)


class Waiters:
    """Readers blocked on one thing (a stream, the writer's progress): a list of futures
    resolved together."""

    __slots__ = ("futures",)

    def __init__(self) -> None:
        self.futures: list[asyncio.Future[None]] = []

    async def wait(self, limit: float, wheel: TimerWheel) -> None:
        """Until :meth:`wake` or about ``limit`` seconds (up to 50 ms more), whichever first."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.futures.append(fut)
        key = wheel.add(fut, limit)
        try:
            await fut
        finally:
            wheel.discard(key, fut)
            if not fut.done():
                fut.cancel()
            if self.futures and fut in self.futures:
                self.futures.remove(fut)

    def wake(self) -> None:
        if self.futures:
            futures, self.futures = self.futures, []
            for fut in futures:
                if not fut.done():
                    fut.set_result(None)

    def __len__(self) -> int:
        return len(self.futures)
