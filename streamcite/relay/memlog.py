"""In-memory :class:`~streamcite.relay.log.StreamLog` for a single relay process.

Each stream keeps its entries in a list (bounded by count and bytes; the oldest are
dropped first, which a resuming reader sees as a gap), is kept ``retention`` seconds
after :meth:`finish`, then dropped. A blocked :meth:`read` waits on a per-stream list
of futures that :meth:`append` / :meth:`finish` resolve: no polling, and no task per
reader.

All methods run on the event loop thread; nothing here is thread-safe, and nothing
needs to be (one loop per relay process).
"""

from __future__ import annotations

import asyncio
import inspect
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

from streamcite.logs import get_logger
from streamcite.relay.log import LogEntry, StreamLog, StreamStatus

__all__ = ["MemoryStreamLog"]

_log = get_logger("streamcite.relay.memlog")
_TICK = 0.05
"""Granularity of ``read(block=...)`` timeouts, in seconds."""


class _Stream:
    __slots__ = (
        "base",
        "entries",
        "expiry",
        "finished",
        "finished_at",
        "nbytes",
        "owner",
        "waiters",
    )

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.entries: list[LogEntry] = []
        self.base = 1
        """Sequence number of ``entries[0]`` (entries are contiguous)."""
        self.nbytes = 0
        self.finished = False
        self.finished_at = 0.0
        self.waiters: list[asyncio.Future[None]] = []
        self.expiry: asyncio.TimerHandle | None = None

    @property
    def last_seq(self) -> int:
        return self.base + len(self.entries) - 1

    def wake(self) -> None:
        waiters, self.waiters = self.waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)


class MemoryStreamLog:
    """Per-stream event logs in this process's memory (satisfies ``StreamLog``).

    ``max_entries`` / ``max_bytes`` bound one stream (oldest entries dropped first);
    ``retention`` is how long a finished stream stays readable; ``max_streams`` bounds
    how many streams are kept (the oldest *finished* streams are dropped first; live
    streams are never dropped — the relay caps those itself).
    """

    def __init__(
        self,
        *,
        max_entries: int = 50_000,
        max_bytes: int = 32 * 1024 * 1024,
        retention: float = 120.0,
        max_streams: int = 10_000,
    ) -> None:
        if max_entries < 1 or max_bytes < 1 or max_streams < 1:
            raise ValueError("max_entries, max_bytes and max_streams must be >= 1")
        if retention < 0:
            raise ValueError("retention must be >= 0")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.retention = retention
        self.max_streams = max_streams
        self._streams: dict[str, _Stream] = {}
        self._cancel_handlers: list[Callable[[str], Awaitable[None] | None]] = []
        self._closed = False
        self._buckets: dict[int, set[asyncio.Future[None]]] = {}
        """Blocked reads by deadline tick (see :meth:`read`)."""

    def __repr__(self) -> str:
        return f"<MemoryStreamLog streams={len(self._streams)}>"

    def __len__(self) -> int:
        """Streams currently kept (live and retained)."""
        return len(self._streams)

    # -- StreamLog -----------------------------------------------------------------

    async def open_stream(self, stream_id: str, *, owner: str) -> None:
        """Create an empty log for ``stream_id``; ``ValueError`` if it already exists."""
        self._check_open()
        if stream_id in self._streams:
            raise ValueError(f"stream {stream_id!r} already exists")
        if len(self._streams) >= self.max_streams:
            self._evict_finished(len(self._streams) - self.max_streams + 1)
        self._streams[stream_id] = _Stream(owner)

    async def append(self, stream_id: str, payload: bytes) -> int:
        """Append one event's wire JSON; return its ``seq``. ``KeyError`` if unknown."""
        st = self._streams[stream_id]
        if st.finished:
            raise ValueError(f"stream {stream_id!r} is finished")
        entries = st.entries
        seq = st.base + len(entries)
        entries.append(LogEntry(seq, payload))
        st.nbytes += len(payload)
        if len(entries) > self.max_entries or st.nbytes > self.max_bytes:
            self._trim(st)
        if st.waiters:
            st.wake()
        return seq

    async def finish(self, stream_id: str) -> None:
        """Mark the stream finished; it is dropped ``retention`` seconds later."""
        st = self._streams.get(stream_id)
        if st is None or st.finished:
            return
        st.finished = True
        st.finished_at = time.monotonic()
        st.wake()
        loop = asyncio.get_running_loop()
        st.expiry = loop.call_later(self.retention, self._expire, stream_id, st)

    async def read(
        self, stream_id: str, after_seq: int, *, block: float | None = None
    ) -> list[LogEntry]:
        """Entries with ``seq > after_seq``; waits up to ``block`` seconds for new ones.

        The wait is rounded up to the next 50 ms tick (timeouts share timers).

        Returns ``[]`` at once for an unknown stream, and after waking on
        :meth:`finish` with nothing new (check :meth:`status`). If older entries were
        trimmed, the first entry returned has ``seq > after_seq + 1``: a visible gap.
        """
        st = self._streams.get(stream_id)
        if st is None:
            return []
        out = self._slice(st, after_seq)
        if out or not block or block <= 0 or st.finished:
            return out
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        st.waiters.append(fut)
        # Timeouts share one timer per tick instead of one per read: a blocked read
        # per event per client is the relay's hot path.
        key = math.ceil((loop.time() + block) / _TICK)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = set()
            loop.call_at(key * _TICK, self._fire, key)
        bucket.add(fut)
        try:
            await fut
        finally:
            bucket.discard(fut)
            if not fut.done():
                fut.cancel()
            if st.waiters and fut in st.waiters:
                st.waiters.remove(fut)
        current = self._streams.get(stream_id)
        return [] if current is None else self._slice(current, after_seq)

    async def status(self, stream_id: str) -> StreamStatus | None:
        st = self._streams.get(stream_id)
        if st is None:
            return None
        # One process: the owner is alive for as long as this log is.
        return StreamStatus(
            last_seq=st.last_seq, finished=st.finished, owner=st.owner, owner_alive=True
        )

    async def request_cancel(self, stream_id: str) -> None:
        """Call every registered cancel handler with ``stream_id`` (unknown ids ignored)."""
        if stream_id not in self._streams:
            return
        for handler in list(self._cancel_handlers):
            try:
                result = handler(stream_id)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                _log.exception("memlog.cancel_handler_failed", stream_id=stream_id)

    def on_cancel(self, callback: Callable[[str], Awaitable[None] | None]) -> None:
        self._cancel_handlers.append(callback)

    async def aclose(self) -> None:
        """Drop every stream and wake every blocked reader. Idempotent."""
        self._closed = True
        streams, self._streams = self._streams, {}
        for st in streams.values():
            if st.expiry is not None:
                st.expiry.cancel()
            st.wake()
        buckets, self._buckets = self._buckets, {}
        for bucket in buckets.values():
            for fut in bucket:
                if not fut.done():
                    fut.set_result(None)
        self._cancel_handlers.clear()

    # -- introspection (tests, metrics) ---------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Counts for metrics: streams kept, live streams, entries and payload bytes."""
        live = sum(1 for st in self._streams.values() if not st.finished)
        return {
            "streams": len(self._streams),
            "live": live,
            "entries": sum(len(st.entries) for st in self._streams.values()),
            "bytes": sum(st.nbytes for st in self._streams.values()),
            "waiters": sum(len(st.waiters) for st in self._streams.values()),
        }

    # -- internals -----------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the stream log is closed")

    @staticmethod
    def _slice(st: _Stream, after_seq: int) -> list[LogEntry]:
        start = after_seq + 1 - st.base
        if start <= 0:
            return list(st.entries)
        if start >= len(st.entries):
            return []
        return st.entries[start:]

    def _trim(self, st: _Stream) -> None:
        # Drop at least a tenth at a time so trimming stays amortised O(1) per append;
        # always keep the newest entry.
        entries = st.entries
        drop = min(max(len(entries) - self.max_entries, len(entries) // 10, 1), len(entries) - 1)
        dropped_bytes = sum(len(e.payload) for e in entries[:drop])
        while st.nbytes - dropped_bytes > self.max_bytes and drop < len(entries) - 1:
            dropped_bytes += len(entries[drop].payload)
            drop += 1
        del entries[:drop]
        st.nbytes -= dropped_bytes
        st.base += drop

    def _fire(self, key: int) -> None:
        for fut in self._buckets.pop(key, ()):
            if not fut.done():
                fut.set_result(None)

    def _expire(self, stream_id: str, st: _Stream) -> None:
        if self._streams.get(stream_id) is st:
            del self._streams[stream_id]
            st.wake()

    def _evict_finished(self, count: int) -> None:
        victims = [sid for sid, st in self._streams.items() if st.finished][:count]
        for sid in victims:
            st = self._streams.pop(sid)
            if st.expiry is not None:
                st.expiry.cancel()
            st.wake()


def _check_protocol(log: MemoryStreamLog) -> StreamLog:
    return log  # mypy: MemoryStreamLog satisfies the StreamLog protocol
