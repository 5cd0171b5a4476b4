"""The batched writer: every entry appended since the last round trip goes in one ``EVALSHA``.

:meth:`RedisStreamLog.append <streamcite.relay.redis.RedisStreamLog.append>` allocates the
``seq`` locally (the owner is the only writer) and queues the entry here; one task sends the
queue as a single call of :data:`~.scripts.APPEND`, which runs one
``XADD … MAXLEN ~ maxlen {seq}-0 p …`` per entry, replaces superseded entries (a citations
frame a newer one replaced: see :meth:`BatchedWriter.supersede`) and publishes the batch
for followers.
Appends issued in the same loop iteration (or while a batch is in flight) share one round
trip and one reply. Explicit ids make a retried batch idempotent.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, Final

from redis.exceptions import NoScriptError

from streamcite.core.errors import StreamciteError
from streamcite.relay.redis.connections import RedisConnections
from streamcite.relay.redis.errors import TRANSIENT, RedisUnavailable, StreamLogConflict
from streamcite.relay.redis.lease import LeaseKeeper
from streamcite.relay.redis.owned import OwnedStream
from streamcite.relay.redis.scripts import APPEND, bulk, pack_append
from streamcite.relay.redis.settings import RedisLogSettings
from streamcite.relay.redis.waiting import TimerWheel, Waiters
from streamcite.streamlog import LogEntry

__all__ = ["MAX_PENDING", "BatchedWriter"]

MAX_PENDING: Final = 100_000
"""Entries queued beyond which ``append`` waits for the writer (backpressure)."""
SCAN_BACK: Final = 256
"""Queued entries :meth:`BatchedWriter.supersede` looks back through for the one replaced."""

Batch = list[tuple[OwnedStream, LogEntry]]


class BatchedWriter:
    """The queue of entries to write and the task that writes them, in append order."""

    def __init__(
        self,
        settings: RedisLogSettings,
        conns: RedisConnections,
        lease: LeaseKeeper,
        wheel: TimerWheel,
        log: Any,
    ) -> None:
        self._settings = settings
        self._conns = conns
        self._lease = lease
        self._wheel = wheel
        self._log = log
        self._counters = conns.counters
        self._maxlen_bulk = bulk(str(settings.maxlen).encode())
        self._channel_bulk = bulk(settings.keys.fanout(settings.instance_id).encode())
        self.pending: Batch = []
        """Entries queued for the writer (in append order)."""
        self.superseded: Batch = []
        """Replacements of entries already sent (or in flight), for the next round trip."""
        self._markers: set[int] = set()
        """Queued entries (by ``id``) replaced before they were sent, a later entry of their
        stream queued after them: only their replacement is kept (see ``APPEND``)."""
        self.in_flight = 0
        self.cut_in_flight = 0
        """Entries of a write cancelled mid-way (the log closing): Redis may or may not
        have stored them."""
        self.progress = Waiters()
        """Woken after every write round trip (backpressure, finish, close wait on it)."""
        self._event = asyncio.Event()

    @property
    def busy(self) -> bool:
        """Entries are queued or in flight."""
        return bool(self.pending or self.superseded or self.in_flight)

    def enqueue(self, o: OwnedStream, entry: LogEntry) -> bool:
        """Queue ``entry`` of ``o`` (no coroutine: the producer calls it per event). True when
        more than :data:`MAX_PENDING` are queued: the caller should then :meth:`drain`."""
        pending = self.pending
        pending.append((o, entry))
        self._event.set()
        return len(pending) > MAX_PENDING

    def supersede(self, o: OwnedStream, entry: LogEntry) -> None:
        """Replace the payload of ``o``'s entry ``entry.seq``: in the queue when it has not
        been sent yet (one of the last :data:`SCAN_BACK` queued; with a later entry of its
        stream queued, it is then never added to the stream, only its replacement kept),
        else in Redis on the next round trip (see :data:`~.scripts.APPEND`)."""
        pending = self.pending
        later = False
        for i in range(len(pending) - 1, max(len(pending) - SCAN_BACK, 0) - 1, -1):
            target, queued = pending[i]
            if target is not o:
                continue
            if queued.seq == entry.seq:
                self._markers.discard(id(queued))
                pending[i] = (o, entry)
                if later:
                    self._markers.add(id(entry))
                return
            later = True
        if len(self.superseded) < MAX_PENDING:  # beyond: kept whole, as before (bounded)
            self.superseded.append((o, entry))
            self._event.set()

    def _split_markers(self, batch: Batch) -> tuple[Batch, Batch]:
        """``batch`` as (entries to add to the stream, superseded ones only kept replaced)."""
        marks = self._markers
        if not marks:
            return batch, []
        written: Batch = []
        markers: Batch = []
        for item in batch:
            key = id(item[1])
            if key in marks:
                marks.discard(key)
                markers.append(item)
            else:
                written.append(item)
        return written, markers

    def _take_superseded(self, batch: Batch) -> Batch:
        """The replacements whose entry is in Redis, or in ``batch`` (written before them)."""
        if not self.superseded:
            return []
        top: dict[int, int] = {}
        for o, entry in batch:
            top[id(o)] = entry.seq
        ready: Batch = []
        later: Batch = []
        for o, entry in self.superseded:
            if entry.seq <= max(o.written, top.get(id(o), 0)):
                ready.append((o, entry))
            else:
                later.append((o, entry))
        self.superseded = later
        return ready

    async def drain(self) -> None:
        """Backpressure: wait until the queue is down to half of :data:`MAX_PENDING`."""
        await self.wait_for(lambda: len(self.pending) <= MAX_PENDING // 2)

    async def wait_for(self, done: Callable[[], bool]) -> None:
        """Wait until ``done()`` holds, re-checked after every write round trip. The writer
        settles every batch within ``unavailable_after`` (+ one command), so this is bounded."""
        settings = self._settings
        limit = settings.unavailable_after + settings.command_timeout + 1.0
        deadline = time.monotonic() + limit
        while not done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RedisUnavailable(
                    f"Redis at {self._conns.where} unavailable: writes did not drain"
                    f" in {limit:.0f} s"
                )
            await self.progress.wait(remaining, self._wheel)

    async def run(self) -> None:
        """The writer task: send the queue, batch by batch, whenever it is not empty."""
        event = self._event
        size = self._settings.write_batch
        while True:
            await event.wait()
            event.clear()
            while self.pending or self.superseded:
                batch = self.pending[:size]
                del self.pending[:size]
                replaced = self._take_superseded(batch)
                written, markers = self._split_markers(batch)
                if not batch and not replaced:
                    # Nothing queued, and no entry left that these replace (their write
                    # failed): nothing will make them ready.
                    self.superseded.clear()
                    break
                self.in_flight = len(batch) + len(replaced)
                try:
                    await self._write(batch, written, [*markers, *replaced], replaced)
                except asyncio.CancelledError:
                    self.cut_in_flight += self.in_flight  # counted by the log's close
                    raise
                except Exception as exc:  # a bug or an unexpected server reply: fail the batch
                    self._log.error("redislog_write_failed", error=repr(exc))
                    err = (
                        exc
                        if isinstance(exc, StreamciteError)
                        else StreamLogConflict(f"write failed: {type(exc).__name__}")
                    )
                    self._settle(batch, err)
                finally:
                    self.in_flight = 0
                    self.progress.wake()

    async def _write(self, batch: Batch, written: Batch, kept: Batch, replaced: Batch) -> None:
        """Write ``batch``: its ``written`` entries to the stream, the replacements ``kept``
        (of ``batch``'s superseded entries, and ``replaced`` earlier ones) to the meta hash;
        retrying transient failures for ``unavailable_after`` seconds of outage; then the
        batch fails with :class:`RedisUnavailable`."""
        conns = self._conns
        packed = pack_append(
            written, self._maxlen_bulk, self._channel_bulk, kept, [*batch, *replaced]
        )
        delay = 0.02
        while True:
            try:
                if self._lease.needs_renew:
                    # Back from an outage: Redis may have restarted empty, so re-create leases and
                    # metadata before the entries (readers elsewhere look these up).
                    await self._lease.renew(raise_errors=True)
                self._counters["round_trips"] += 1
                try:
                    await conns.writer.call(packed, self._settings.command_timeout)
                except NoScriptError:  # Redis restarted: its script cache is empty
                    await conns.client.script_load(APPEND.source)
                    continue
                break
            except TRANSIENT as exc:
                now = time.monotonic()
                if conns.down_since is None:
                    conns.down_since = now
                    self._log.warning("redis_unreachable", error=f"{type(exc).__name__}: {exc}")
                self._lease.needs_renew = True
                if now - conns.down_since >= self._settings.unavailable_after:
                    self._settle(batch, conns.unavailable(exc, "append"))
                    return
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.5)
        if conns.down_since is not None:
            outage = round(time.monotonic() - conns.down_since, 3)
            self._log.warning("redis_reachable_again", outage_s=outage)
            conns.down_since = None
        self._counters["write_batches"] += 1
        self._counters["entries_written"] += len(batch)
        self._settle(batch, None)

    def _settle(self, batch: Batch, err: StreamciteError | None) -> None:
        """Deliver a written (or failed) batch to local readers, in seq order, and wake them."""
        maxlen = self._settings.maxlen
        touched: dict[int, OwnedStream] = {}
        for o, entry in batch:
            if entry.seq == o.last_seq + 1:  # not yet delivered (always, unless immediate)
                o.deliver(entry, maxlen)
                touched[id(o)] = o
            o.written = entry.seq
            if err is not None and o.error is None:
                o.error = err
        for o in touched.values():
            o.waiters.wake()

    def clear(self) -> None:
        """Drop the queue (at close, after the flush window) and wake whoever waits on it."""
        self.pending.clear()
        self.superseded.clear()
        self._markers.clear()
        self.progress.wake()
