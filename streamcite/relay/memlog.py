"""In-memory :class:`~streamcite.streamlog.StreamLog` for a single relay process.

Each stream keeps its payloads back to back in one ``bytearray`` with an ``array`` of end
offsets (8 bytes per entry): the bytes the limits count are the bytes held, whatever the
allocator gave the caller's ``bytes`` (an ``orjson.dumps`` result holds about 4 KiB however
short it is). Entries are bounded by count and bytes per stream and by bytes in total (the
oldest are dropped first, which a resuming reader sees as a gap); a stream is kept
``retention`` seconds after :meth:`finish`, then dropped. A blocked :meth:`read` waits on a per-stream list
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
from array import array
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from streamcite.logs import get_logger
from streamcite.streamlog import LogEntry, StreamLog, StreamStatus

__all__ = ["MemoryStreamLog"]

_log = get_logger("streamcite.relay.memlog")
_TICK = 0.05
"""Granularity of ``read(block=...)`` timeouts, in seconds."""
ENTRY_OVERHEAD = 8
"""Bytes accounted per entry on top of its payload (its end offset)."""


class _Stream:
    __slots__ = (
        "base",
        "buf",
        "ends",
        "expiry",
        "finished",
        "finished_at",
        "origin",
        "owner",
        "waiters",
    )

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.buf = bytearray()
        """The payloads kept, back to back."""
        self.ends: array[int] = array("q")
        """End offset of each kept entry (absolute: since the stream began)."""
        self.origin = 0
        """Absolute offset of ``buf[0]``."""
        self.base = 1
        """Sequence number of the first kept entry (entries are contiguous)."""
        self.finished = False
        self.finished_at = 0.0
        self.waiters: list[asyncio.Future[None]] = []
        self.expiry: asyncio.TimerHandle | None = None

    @property
    def count(self) -> int:
        return len(self.ends)

    @property
    def nbytes(self) -> int:
        """Accounted bytes: payloads plus ``ENTRY_OVERHEAD`` per entry."""
        return len(self.buf) + ENTRY_OVERHEAD * len(self.ends)

    @property
    def last_seq(self) -> int:
        return self.base + len(self.ends) - 1

    def add(self, payload: bytes) -> int:
        self.buf += payload
        self.ends.append(self.origin + len(self.buf))
        return self.base + len(self.ends) - 1

    def slice(self, after_seq: int) -> list[LogEntry]:
        ends = self.ends
        start = max(after_seq + 1 - self.base, 0)
        if start >= len(ends):
            return []
        buf, origin, seq = self.buf, self.origin, self.base + start
        pos = (ends[start - 1] if start else origin) - origin
        out = []
        for i in range(start, len(ends)):
            end = ends[i] - origin
            out.append(LogEntry(seq, bytes(buf[pos:end])))
            pos = end
            seq += 1
        return out

    def replace(self, seq: int, payload: bytes) -> int:
        """Put ``payload`` in place of entry ``seq`` (kept); the change in bytes held.

        Costs the bytes and entries after it (a memmove, one offset each): the relay
        replaces the citations frame a newer one superseded, a few entries back."""
        i = seq - self.base
        if i < 0 or i >= len(self.ends):
            return 0
        origin, ends = self.origin, self.ends
        start = (ends[i - 1] if i else origin) - origin
        end = ends[i] - origin
        delta = len(payload) - (end - start)
        self.buf[start:end] = payload
        for j in range(i, len(ends)):
            ends[j] += delta
        return delta

    def drop(self, count: int) -> int:
        """Drop the ``count`` oldest entries; the bytes accounted that were freed."""
        count = min(count, len(self.ends))
        if count <= 0:
            return 0
        cut = self.ends[count - 1] - self.origin
        del self.buf[:cut]
        del self.ends[:count]
        self.origin += cut
        self.base += count
        return cut + ENTRY_OVERHEAD * count

    def wake(self) -> None:
        waiters, self.waiters = self.waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)


class MemoryStreamLog:
    """Per-stream event logs in this process's memory (satisfies ``StreamLog``).

    ``max_entries`` / ``max_bytes`` bound one stream (oldest entries dropped first);
    ``max_total_bytes`` bounds all streams together (finished streams are dropped first,
    oldest first, then the oldest entries of the largest live streams). Bytes are the
    payloads as held (one exact-size buffer per stream) plus ``ENTRY_OVERHEAD`` per entry;
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
        max_total_bytes: int = 1024 * 1024 * 1024,
    ) -> None:
        if max_entries < 1 or max_bytes < 1 or max_streams < 1 or max_total_bytes < 1:
            raise ValueError("max_entries, max_bytes, max_total_bytes and max_streams must be >= 1")
        if retention < 0:
            raise ValueError("retention must be >= 0")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.retention = retention
        self.max_streams = max_streams
        self.max_total_bytes = max_total_bytes
        self._total = 0
        """Accounted bytes of every stream kept (see ``_Stream.nbytes``)."""
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
        return self.append_nowait(stream_id, payload)

    def append_nowait(self, stream_id: str, payload: bytes) -> int:
        """:meth:`append` without a coroutine (the relay's producer calls it per event):
        copies ``payload`` into the stream's buffer, wakes blocked readers, if any."""
        st = self._streams[stream_id]
        if st.finished:
            raise ValueError(f"stream {stream_id!r} is finished")
        # _Stream.add, count and nbytes inlined (this runs once per event).
        buf, ends = st.buf, st.ends
        buf += payload
        ends.append(st.origin + len(buf))
        n = len(ends)
        seq = st.base + n - 1
        self._total += len(payload) + ENTRY_OVERHEAD
        if n > self.max_entries or len(buf) + ENTRY_OVERHEAD * n > self.max_bytes:
            self._trim(st)
        if self._total > self.max_total_bytes:
            self._shrink(st)
        if st.waiters:
            st.wake()
        return seq

    def supersede_nowait(self, stream_id: str, seq: int, payload: bytes) -> None:
        """Replace entry ``seq`` (still kept) by the smaller ``payload``: a frame a newer
        one made obsolete (a citations set the next one replaces) stops holding the
        log's bytes, so it cannot push live events out. Unknown or trimmed: nothing."""
        st = self._streams.get(stream_id)
        if st is not None:
            self._total += st.replace(seq, payload)

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
        out = st.slice(after_seq)
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
        return [] if current is None else current.slice(after_seq)

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

    async def note_readers(self, stream_ids: Collection[str], *, ttl: float) -> None:
        """Nothing to do: one process is one instance, and it knows its own readers."""

    async def readers_elsewhere(self, stream_id: str) -> bool:
        """Always False: a memory log has no other instance."""
        return False

    async def aclose(self) -> None:
        """Drop every stream and wake every blocked reader. Idempotent."""
        self._closed = True
        self._total = 0
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
            "entries": sum(st.count for st in self._streams.values()),
            "bytes": self._total,
            "waiters": sum(len(st.waiters) for st in self._streams.values()),
        }

    # -- internals -----------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the stream log is closed")

    def _trim(self, st: _Stream) -> None:
        # Drop at least a tenth at a time so trimming stays amortised O(1) per append;
        # always keep the newest entry.
        n = st.count
        drop = min(max(n - self.max_entries, n // 10, 1), n - 1)
        ends = st.ends
        while (
            drop < n - 1
            and st.nbytes - (ends[drop - 1] - st.origin + ENTRY_OVERHEAD * drop) > self.max_bytes
        ):
            drop += 1
        self._total -= st.drop(drop)

    def _shrink(self, current: _Stream) -> None:
        """Back under ``max_total_bytes``: finished streams first (oldest first), then the
        oldest entries of the largest live streams (a tenth at a time)."""
        for sid in [sid for sid, st in self._streams.items() if st.finished]:
            if self._total <= self.max_total_bytes:
                return
            self._drop_stream(sid)
        while self._total > self.max_total_bytes:
            st = max(self._streams.values(), key=lambda s: s.nbytes)
            keep = 1 if st is current else 0
            if st.count <= keep:
                return  # only the newest entry of the stream appended to is left
            self._total -= st.drop(max(st.count // 10, 1) if st.count > 10 else st.count - keep)

    def _drop_stream(self, sid: str) -> None:
        st = self._streams.pop(sid)
        self._total -= st.nbytes
        if st.expiry is not None:
            st.expiry.cancel()
        st.wake()

    def _fire(self, key: int) -> None:
        for fut in self._buckets.pop(key, ()):
            if not fut.done():
                fut.set_result(None)

    def _expire(self, stream_id: str, st: _Stream) -> None:
        if self._streams.get(stream_id) is st:
            self._drop_stream(stream_id)

    def _evict_finished(self, count: int) -> None:
        victims = [sid for sid, st in self._streams.items() if st.finished][:count]
        for sid in victims:
            self._drop_stream(sid)


def _check_protocol(log: MemoryStreamLog) -> StreamLog:
    return log  # mypy: MemoryStreamLog satisfies the StreamLog protocol
