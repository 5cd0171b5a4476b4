"""RedisStreamLog: the relay's :class:`~streamcite.streamlog.StreamLog` in Redis Streams,
shared by every relay instance of a deployment.

This module is the lifecycle and the per-call paths; the parts are, one concept each:
:mod:`~.settings` (what to configure, the key layout), :mod:`~.scripts` (Lua and packed wire
forms), :mod:`~.connections` (pools, retries, the outage error), :mod:`~.writer` (batched
writes), :mod:`~.lease` (ownership heartbeat, owner watch), :mod:`~.follow` (remote reads and
the fan-out) and :mod:`~.control` (cancel routing).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Collection
from typing import Any

from streamcite.logs import get_logger
from streamcite.relay.redis.connections import RedisConnections
from streamcite.relay.redis.control import CancelCallback, CancelRouter
from streamcite.relay.redis.errors import (
    MAX_STREAM_ID,
    StreamLogConflict,
    log_closed,
    valid_stream_id,
)
from streamcite.relay.redis.follow import FanoutFollower
from streamcite.relay.redis.lease import LeaseKeeper
from streamcite.relay.redis.owned import OwnedStream
from streamcite.relay.redis.scripts import (
    FINISH,
    NOTE_READERS,
    OPEN,
    READERS_ELSEWHERE,
    STATUS,
    finish_notice,
)
from streamcite.relay.redis.settings import RedisLogSettings
from streamcite.relay.redis.waiting import TimerWheel
from streamcite.relay.redis.writer import BatchedWriter
from streamcite.streamlog import LogEntry, StreamLog, StreamStatus

__all__ = ["RedisStreamLog"]

_log = get_logger("streamcite.relay.redislog")


class RedisStreamLog:
    """:class:`~streamcite.streamlog.StreamLog` stored in Redis Streams.

    Each relay process creates one from a :class:`RedisLogSettings` with the same ``url`` and
    ``prefix`` and a unique ``instance_id``::

        log = RedisStreamLog(RedisLogSettings(url, local_delivery="immediate"))

    ``RedisStreamLog(url, **fields)`` is the same as ``RedisStreamLog(RedisLogSettings(url,
    **fields))``, and ``RedisStreamLog(settings, **fields)`` overrides fields of
    ``settings``; invalid values raise ``ValueError``. Background tasks (writer, lease
    heartbeat, control stream, fan-out) start on first use; :meth:`aclose` stops them and
    releases this instance's leases. Call :meth:`connect` at start-up to fail fast when
    Redis is not there.

    Failures: lost connections are retried with backoff; once Redis has been unreachable for
    ``unavailable_after`` seconds, calls raise :class:`RedisUnavailable`
    (``redis_unavailable``, retryable). An entry whose write failed is still delivered to
    this instance's own readers (so they can be told what happened) — see :meth:`append`.
    """

    def __init__(self, settings: RedisLogSettings | str, /, **fields: Any) -> None:
        if isinstance(settings, str):
            settings = RedisLogSettings(settings, **fields)
        elif fields:
            settings = dataclasses.replace(settings, **fields)
        self.settings = settings
        self.instance_id = settings.instance_id
        self._immediate = settings.local_delivery == "immediate"
        self._maxlen = settings.maxlen
        self.counters: dict[str, int] = {
            "round_trips": 0,
            "entries_written": 0,
            "write_batches": 0,
            "entries_followed": 0,
            "backlog_reads": 0,
        }
        """Counters: Redis round trips made, entries written, etc. (benchmarks read them)."""
        self._log = _log.bind(instance=self.instance_id, redis=settings.where)
        self._conns = RedisConnections(settings, self.counters)
        self._wheel = TimerWheel()
        self._owned: dict[str, OwnedStream] = {}
        self._follow = FanoutFollower(settings, self._conns, self._wheel, self._log)
        self._lease = LeaseKeeper(
            settings, self._conns, self._owned, self._follow.followers, self._log
        )
        self._writer = BatchedWriter(settings, self._conns, self._lease, self._wheel, self._log)
        self._control = CancelRouter(settings, self._conns, self._owned, self._log)
        self._tasks: list[asyncio.Task[None]] = []
        self._started = False
        self._closed = False

    def stats(self) -> dict[str, int]:
        """For metrics and benchmarks: streams owned and followed here, entries queued, blocked
        reads (``waiters``, as the memory log reports them), and the counters (Redis round
        trips, entries written, write batches, entries followed, reads)."""
        owned = self._owned.values()
        followed = self._follow.followers.values()
        return {
            "streams": len(self._owned),
            "live": sum(1 for o in owned if not o.finished),
            "followed": len(self._follow.followers),
            "queued": len(self._writer.pending),
            "entries": sum(len(o.entries) for o in owned),
            "bytes": sum(len(e.payload) for o in owned for e in o.entries),
            "waiters": sum(len(o.waiters) for o in owned) + sum(len(f.waiters) for f in followed),
            **self.counters,
        }

    def __repr__(self) -> str:
        return f"RedisStreamLog(redis={self.settings.where!r}, instance_id={self.instance_id!r})"

    # ------------------------------------------------------------------ lifecycle

    async def connect(self) -> None:
        """Start the background tasks and check that Redis answers; raise
        :class:`RedisUnavailable` (after ``unavailable_after`` seconds of retries) if not."""
        self._ensure_started()
        client = self._conns.client
        await self._conns.call(lambda: client.ping(), what="PING")

    def _ensure_started(self) -> None:
        if self._closed:
            raise log_closed()
        if self._started:
            return
        self._started = True

        def closed() -> bool:
            return self._closed

        self._tasks = [
            asyncio.create_task(self._writer.run(), name="redislog-writer"),
            asyncio.create_task(self._lease.run(closed, self._sweep), name="redislog-heartbeat"),
            asyncio.create_task(self._control.run(closed), name="redislog-control"),
            asyncio.create_task(self._follow.run(closed), name="redislog-fanout"),
        ]

    async def aclose(self, *, release_leases: bool = True) -> None:
        """Flush queued writes (up to ``settings.close_flush``, 2 s), release this instance's leases (so readers elsewhere
        see ``owner_alive=False`` at once instead of after the lease time), stop the tasks and
        close the connections. ``release_leases=False`` leaves the leases to lapse, as a crash
        would (tests use it)."""
        if self._closed:
            return
        self._closed = True
        if self._started:
            deadline = time.monotonic() + self.settings.close_flush
            while self._writer.busy and time.monotonic() < deadline:
                await self._writer.progress.wait(deadline - time.monotonic(), self._wheel)
            if release_leases:
                await self._lease.release_all()
            await self._stop_tasks()
        self._writer.clear()
        for o in self._owned.values():
            o.waiters.wake()
        self._follow.wake_all()
        self._wheel.fire_all()
        await self._conns.aclose()

    async def _stop_tasks(self) -> None:
        """Cancel the background tasks and wait for them, at most about 5 s.

        One ``cancel()`` is not always enough: on Python 3.11 a cancel that lands while an
        ``asyncio.timeout`` expires (redis-py's ``get_message(timeout=…)`` and reads use one)
        can be turned into a ``TimeoutError`` that the loops take for a Redis hiccup, and an
        unbounded ``gather`` then waits forever. So the loops also stop on ``closed()``, and
        the wait here is bounded and cancels again until the tasks are done."""
        everything = [*self._tasks, *self._control.tasks]
        pending: set[asyncio.Future[None]] = set(everything)
        deadline = time.monotonic() + 5.0
        while pending and time.monotonic() < deadline:
            for task in pending:
                task.cancel()
            _, pending = await asyncio.wait(pending, timeout=0.5)
        for task in everything:
            if task.done() and not task.cancelled() and task.exception() is not None:
                self._log.error("redislog_task_failed", error=repr(task.exception()))
        if pending:
            self._log.error("redislog_tasks_not_stopped", tasks=len(pending))

    def _sweep(self) -> None:
        """Forget finished streams after the local retention, and idle followed streams."""
        now = time.monotonic()
        keep = self.settings.local_retention
        for sid in [
            sid for sid, o in self._owned.items() if o.finished and now - o.finished_at > keep
        ]:
            del self._owned[sid]
        self._follow.sweep(now)

    # ------------------------------------------------------------------ writer side

    async def open_stream(self, stream_id: str, *, owner: str) -> None:
        """Create the stream and take its lease for this instance (``owner`` is the relay's
        label for it, reported by :meth:`status`). Raises :class:`StreamLogConflict` when the
        id exists (running or retained), :class:`RedisUnavailable` when Redis is unreachable."""
        self._ensure_started()
        if not valid_stream_id(stream_id):
            raise StreamLogConflict(f"stream id must be 1..{MAX_STREAM_ID} characters")
        if stream_id in self._owned:
            raise StreamLogConflict("stream id already open on this instance")
        o = OwnedStream.create(stream_id, owner, self.settings.keys)
        s = self.settings
        client = self._conns.client
        created = await self._conns.call(
            lambda: OPEN(
                client,
                [o.lease_key, o.meta_key, o.key],
                [s.instance_id, s.lease_ms, s.running_ttl_ms, owner],
            ),
            what="open",
        )
        if not created:
            raise StreamLogConflict("stream id already exists")
        self._owned[stream_id] = o

    async def append(self, stream_id: str, payload: bytes) -> int:
        """Append one event and return its seq (allocated here: the owner is the only writer).

        The entry is queued for the writer task, which sends everything queued since its last
        round trip in one ``EVALSHA``; readers on other instances see it once Redis has stored
        it, readers on this one then too (or at once, see ``local_delivery``). ``append`` itself
        does not wait for Redis (the producer is never slowed by it) unless more than
        100,000 entries are queued (backpressure).

        Raises :class:`StreamLogConflict` if this instance does not own the stream (or it is
        finished). Once a write of this stream has failed for good (Redis unreachable for
        ``unavailable_after`` seconds), raises :class:`RedisUnavailable` — the entry is then
        still delivered to this instance's readers (so a relay can append an ``error`` and
        ``done`` its own clients will see), not to Redis."""
        o = self._owned.get(stream_id)
        if o is None:
            self._ensure_started()
            raise StreamLogConflict("stream is not owned by this instance")
        if o.finished:
            raise StreamLogConflict("stream is finished")
        if o.lost:
            raise StreamLogConflict("lease taken by another instance")
        if self._closed:
            raise log_closed()
        seq = o.next_seq
        o.next_seq = seq + 1
        entry = LogEntry(seq, payload)
        if o.error is not None:
            o.deliver(entry, self._maxlen)
            o.written = seq
            o.waiters.wake()
            raise o.error
        if self._immediate:
            o.deliver(entry, self._maxlen)
            o.waiters.wake()
        if self._writer.enqueue(o, entry):
            await self._writer.drain()
        return seq

    def supersede_nowait(self, stream_id: str, seq: int, payload: bytes) -> None:
        """Replace entry ``seq`` of a stream owned here by the smaller ``payload``: a frame a
        newer one made obsolete (a citations set the next one replaces, see
        ``relay.producer``). Local readers see ``payload`` at once; in Redis the entry is
        deleted from the stream (it stops counting against ``maxlen`` and holding its bytes)
        and ``payload`` read in its place by every instance (see :data:`~.scripts.APPEND`).
        Unknown, finished or trimmed entries: nothing."""
        o = self._owned.get(stream_id)
        if o is None or o.finished or o.lost or seq < 1 or seq >= o.next_seq:
            return  # (an entry gone from the memory copy may still be in Redis: replaced there)
        o.supersede(seq, payload)
        if o.error is None:
            self._writer.supersede(o, LogEntry(seq, payload))

    async def flush(self) -> None:
        """Wait until every entry appended so far is in Redis (or has failed for good); then
        other instances can read it. Raises :class:`RedisUnavailable` if writes do not drain
        (not needed by the relay — readers see entries as soon as they are written)."""
        targets = [(o, o.next_seq - 1) for o in self._owned.values()]
        writer = self._writer
        await writer.wait_for(
            lambda: (
                all(o.written >= last for o, last in targets)
                and not (writer.superseded or writer.in_flight)
            )
        )

    async def finish(self, stream_id: str) -> None:
        """Mark the stream done: after its queued appends, Redis keeps it ``retention`` seconds
        and the lease is released. Local readers are woken at once."""
        o = self._owned.get(stream_id)
        if o is None:
            self._ensure_started()
            raise StreamLogConflict("stream is not owned by this instance")
        if o.finished:
            return
        # After the stream's queued entries: they are settled (written or failed) in order.
        last = o.next_seq - 1
        try:
            await self._writer.wait_for(lambda: o.written >= last)
        finally:
            o.finished = True
            o.finished_at = time.monotonic()
            o.waiters.wake()
        if o.error is not None:
            raise o.error
        s = self.settings
        client = self._conns.client
        await self._conns.call(
            lambda: FINISH(
                client,
                [o.lease_key, o.meta_key, o.key],
                [
                    s.instance_id,
                    s.retention_ms,
                    o.next_seq - 1,
                    o.owner,
                    s.keys.fanout(s.instance_id),
                    finish_notice(o.stream_id),
                ],
            ),
            what="finish",
            deadline=self._conns.outage_deadline(),
        )

    # ------------------------------------------------------------------ reader side

    async def read(
        self, stream_id: str, after_seq: int, *, block: float | None = None
    ) -> list[LogEntry]:
        """Entries with ``seq > after_seq`` in order (all of them still retained); when none and
        ``block`` is set, wait up to ``block`` seconds for the next ones (``[]`` on timeout).

        Streams owned here are read from memory; others from Redis, then followed live through
        the owner's fan-out channel. Raises :class:`RedisUnavailable` when a stream owned
        elsewhere cannot be read because Redis is unreachable."""
        self._ensure_started()
        after_seq = max(after_seq, 0)
        o = self._owned.get(stream_id)
        if o is not None and o.first_seq <= after_seq + 1:
            got = o.slice(after_seq)
            if got or not block or o.finished:
                return got
            await o.waiters.wait(block, self._wheel)
            if o.first_seq <= after_seq + 1:
                return o.slice(after_seq)
            # The memory copy was trimmed past after_seq while waiting (a batch of more than
            # about maxlen / 4 entries): Redis still has them.
            block = None
        if not valid_stream_id(stream_id):
            return []
        return await self._follow.read(stream_id, after_seq, block)

    async def status(self, stream_id: str) -> StreamStatus | None:
        """The stream's state; None when unknown or expired.

        ``owner_alive`` is False only for an unfinished stream whose owner's lease has lapsed
        (the owner died or lost Redis for ``lease_ms``): then no entry will come and readers
        should end the stream with ``owner_lost``. A finished stream reports True."""
        self._ensure_started()
        o = self._owned.get(stream_id)
        if o is not None:
            return StreamStatus(
                last_seq=o.last_seq,
                finished=o.finished,
                owner=o.owner,
                owner_alive=o.finished or not o.lost,
            )
        if not valid_stream_id(stream_id):
            return None
        keys = self.settings.keys
        client = self._conns.client
        raw = await self._conns.call(
            lambda: STATUS(
                client,
                [keys.lease(stream_id), keys.meta(stream_id), keys.stream(stream_id)],
                [],
            ),
            what="status",
        )
        lease, owner, instance, state, last_seq_field, last_id = (v.decode() for v in raw)
        if not (lease or owner or last_id):
            return None
        last_seq = int(last_id.split("-", 1)[0]) if last_id else 0
        if last_seq_field:
            last_seq = max(last_seq, int(last_seq_field))
        finished = state == "done"
        return StreamStatus(
            last_seq=last_seq,
            finished=finished,
            owner=owner or lease or None,
            owner_alive=finished or (bool(lease) and (not instance or lease == instance)),
        )

    # ------------------------------------------------------------------ readers

    async def note_readers(self, stream_ids: Collection[str], *, ttl: float) -> None:
        """This instance has clients reading these streams (owned elsewhere): tell their
        owners, for ``ttl`` seconds. One round trip for any number of streams."""
        self._ensure_started()
        keys = [self.settings.keys.readers(sid) for sid in stream_ids if valid_stream_id(sid)]
        if not keys:
            return
        client = self._conns.client
        ttl_ms = max(1, int(ttl * 1000))
        await self._conns.call(
            lambda: NOTE_READERS(client, keys, [self.instance_id, ttl_ms]), what="note_readers"
        )

    async def readers_elsewhere(self, stream_id: str) -> bool:
        """Whether another instance noted a reader of the stream whose ttl has not lapsed."""
        self._ensure_started()
        if not valid_stream_id(stream_id):
            return False
        client = self._conns.client
        key = self.settings.keys.readers(stream_id)
        found = await self._conns.call(
            lambda: READERS_ELSEWHERE(client, [key], [self.instance_id]), what="readers_elsewhere"
        )
        return bool(found)

    # ------------------------------------------------------------------ cancel

    def on_cancel(self, callback: CancelCallback) -> None:
        """Register the owner-side handler, called with the id of a stream this instance owns
        when a cancel for it arrives from any instance."""
        self._control.on_cancel(callback)

    async def request_cancel(self, stream_id: str) -> None:
        """Route a cancel to the stream's owner: called directly when it is this instance,
        otherwise appended to the owner's control stream. A no-op for unknown or finished
        streams and for streams whose owner is gone (readers will see ``owner_alive=False``)."""
        self._ensure_started()
        await self._control.request_cancel(stream_id)


def _check_protocol(log: RedisStreamLog) -> StreamLog:
    return log  # mypy: RedisStreamLog satisfies the StreamLog protocol
