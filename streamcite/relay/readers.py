"""Readers of streams owned by another relay instance, and their heartbeat.

The owner of a stream cancels it as ``abandoned`` when nobody has listened for
``resume_grace`` seconds. It sees its own pumps; a client that resumed on another
instance is invisible to it. So every instance notes, through the shared stream log,
which foreign streams its clients are reading (:meth:`StreamLog.note_readers`, one call
for all of them, every ``interval`` seconds, valid ``3 × interval``), and an owner whose
grace ran out asks :meth:`StreamLog.readers_elsewhere` before it cancels.

A single-process (memory) log has no elsewhere: the heartbeat costs nothing there.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter

from streamcite.logs import LibraryLogger
from streamcite.streamlog import StreamLog

__all__ = ["ReaderHeartbeat", "heartbeat_interval"]

_LIMIT = 5.0
"""Seconds a heartbeat (or a readers_elsewhere query) may take before it is given up."""


def heartbeat_interval(resume_grace: float) -> float:
    """How often to note readers: twice per grace period (a missed beat still lands in
    time), at most every 5 s, at least every 0.1 s.

    >>> heartbeat_interval(30.0), heartbeat_interval(1.0), heartbeat_interval(0.0)
    (5.0, 0.5, 0.1)
    """
    return min(_LIMIT, max(0.1, resume_grace / 2))


class ReaderHeartbeat:
    """Counts this instance's pumps of foreign streams and notes them in the log."""

    def __init__(self, log: StreamLog, interval: float, logger: LibraryLogger) -> None:
        self.log = log
        self.interval = interval
        self.ttl = 3 * interval
        self.logger = logger
        self.readers: Counter[str] = Counter()
        """Pumps delivering each foreign stream now."""
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def attach(self, sid: str) -> None:
        """A pump started on a stream owned elsewhere: note it at once (not at the next beat:
        the owner's grace may be about to end)."""
        self.readers[sid] += 1
        self._wake.set()

    def detach(self, sid: str) -> None:
        n = self.readers[sid] - 1
        if n > 0:
            self.readers[sid] = n
        else:
            del self.readers[sid]  # its note lapses after ttl: then the owner may abandon it

    async def readers_elsewhere(self, sid: str) -> bool:
        """Whether another instance reads ``sid``; False when the log cannot say in time."""
        try:
            async with asyncio.timeout(_LIMIT):
                return await self.log.readers_elsewhere(sid)
        except Exception as exc:  # the log's outage is reported by its own errors
            self.logger.warning("relay.readers_unknown", stream_id=sid, error=type(exc).__name__)
            return False

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._beat(), name="relay-reader-heartbeat")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _beat(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.interval):
                    await self._wake.wait()
            self._wake.clear()
            if not self.readers:
                continue
            try:
                async with asyncio.timeout(_LIMIT):
                    await self.log.note_readers(list(self.readers), ttl=self.ttl)
            except Exception as exc:  # next beat tries again; the owner's grace covers one miss
                self.logger.warning("relay.readers_note_failed", error=type(exc).__name__)
