"""Reading streams owned by another instance: the backlog from Redis, then the live tail
through the owner's fan-out channel.

A remote reader first reads the backlog in one round trip (:data:`~.scripts.FETCH`). Then it
waits on a :class:`FollowedStream`, fed by this instance's one fan-out loop: the owner's write
script publishes every batch, stored first, as one message on the owner's channel; the loop
subscribes to the channels of the owners it follows (one subscription per owner instance
serves all its readers here) and fetches from Redis whatever a follower may have missed (a
gap, a fresh subscription, a reconnect). Every entry arrives once, in ``seq`` order.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from streamcite.relay.redis.connections import RedisConnections
from streamcite.relay.redis.errors import TRANSIENT, RedisUnavailable
from streamcite.relay.redis.scripts import FETCH, FINISH_SEQ, unpack_entries, unpack_fanout
from streamcite.relay.redis.settings import RedisLogSettings
from streamcite.relay.redis.waiting import TimerWheel, Waiters
from streamcite.streamlog import LogEntry

__all__ = ["FanoutFollower", "FollowedStream"]

FOLLOW_IDLE: Final = 15.0
"""Seconds without a reader after which a followed stream is forgotten."""
FOLLOW_BUFFER: Final = 4096
"""Entries of a followed stream kept in memory for its readers here."""
READ_CHUNK: Final = 1000
"""Entries per backlog read round trip."""
FANOUT_POLL: Final = 0.05
"""Seconds the fan-out loop waits for a message before it looks at its subscriptions again."""
CATCH_UP_CHUNK: Final = 500
"""Followed streams per catch-up round trip."""


@dataclass(slots=True, eq=False)
class FollowedStream:
    """A stream owned elsewhere that readers on this instance follow through the fan-out."""

    key: str
    lease_key: str
    meta_key: str
    tail: int
    """Highest seq received (contiguously) for this stream."""
    channel: str = ""
    """The owner's fan-out channel."""
    resync: bool = False
    """Entries may have been missed: fetch from Redis before taking fan-out messages again."""
    buf: list[LogEntry] = field(default_factory=list)
    touched: float = 0.0
    finished: bool = False
    """The owner finished it (finish notice or owner watch): nothing will follow its tail."""
    waiters: Waiters = field(default_factory=Waiters)

    def add(self, entries: list[LogEntry], cap: int) -> None:
        if not entries:
            return
        if self.buf and entries[0].seq != self.buf[-1].seq + 1:
            # A gap (entries trimmed or lost in a Redis restart): restart the buffer so that
            # ``slice`` never serves across it; readers behind it go to XRANGE instead.
            self.buf = []
        self.buf.extend(entries)
        if len(self.buf) > cap + cap // 4 + 16:
            del self.buf[: len(self.buf) - cap]
        self.tail = max(self.tail, entries[-1].seq)
        self.waiters.wake()

    def replace(self, entry: LogEntry) -> None:
        """Put ``entry`` in place of the held entry of its seq (if held)."""
        if self.buf:
            i = entry.seq - self.buf[0].seq
            if 0 <= i < len(self.buf):
                self.buf[i] = entry

    def slice(self, after_seq: int) -> list[LogEntry] | None:
        """Entries after ``after_seq`` when the buffer covers ``after_seq + 1``, else None."""
        if not self.buf:
            return None
        first = self.buf[0].seq
        if after_seq + 1 < first:
            return None
        return self.buf[after_seq + 1 - first :]

    def idle(self, now: float) -> bool:
        """No reader waits and none came for :data:`FOLLOW_IDLE` seconds."""
        return not self.waiters and now - self.touched > FOLLOW_IDLE


class FanoutFollower:
    """The remote-reader side of one :class:`RedisStreamLog`: backlog reads and the fan-out."""

    def __init__(
        self,
        settings: RedisLogSettings,
        conns: RedisConnections,
        wheel: TimerWheel,
        log: Any,
    ) -> None:
        self._settings = settings
        self._keys = settings.keys
        self._conns = conns
        self._wheel = wheel
        self._log = log
        self._counters = conns.counters
        self.followers: dict[str, FollowedStream] = {}
        self._wake = Waiters()
        """Woken when a stream is followed: the idle loop subscribes at once."""
        self.down_since: float | None = None
        """When the fan-out loop lost Redis (None while it is connected)."""
        self._pubsub: Any = None
        self._subscribed: set[str] = set()

    # ------------------------------------------------------------------ reads

    async def read(self, stream_id: str, after_seq: int, block: float | None) -> list[LogEntry]:
        """Entries after ``after_seq`` of a stream this instance does not own (or no longer
        holds in memory); when none and ``block``, wait for the live tail."""
        f = self.followers.get(stream_id)
        now = time.monotonic()
        if f is not None and f.idle(now):
            # Idle: the fan-out may have been dropped for it, so its tail may be stale.
            del self.followers[stream_id]
            f = None
        if f is not None:
            f.touched = now
            got = f.slice(after_seq)
            if got:
                return got
            if block and after_seq >= f.tail and not f.finished:
                return await self._wait(f, after_seq, block)
            # A non-blocking read (or one past the end of a finished stream) asks Redis, not
            # the fan-out (which may lag a little): a reader that saw the owner's lease lapse
            # gets every entry the owner stored.
        entries, state, instance = await self.fetch(
            self._keys.stream(stream_id), self._keys.meta(stream_id), after_seq, state=True
        )
        if entries or not block or state != b"running" or not instance:
            # Nothing will follow a finished (or unknown / expired) stream: no need to wait.
            return entries
        f = self.followers.get(stream_id)
        if f is None:
            # Nothing after after_seq existed a moment ago; the fan-out loop subscribes to the
            # owner's channel if needed, then fetches what came in between.
            f = FollowedStream(
                key=self._keys.stream(stream_id),
                lease_key=self._keys.lease(stream_id),
                meta_key=self._keys.meta(stream_id),
                tail=after_seq,
                touched=time.monotonic(),
                channel=self._keys.fanout(instance.decode()),
                resync=True,
            )
            self.followers[stream_id] = f
            self._wake.wake()
        return await self._wait(f, after_seq, block)

    async def _wait(self, f: FollowedStream, after_seq: int, block: float) -> list[LogEntry]:
        since = self.down_since
        if since is not None and time.monotonic() - since >= self._settings.unavailable_after:
            raise RedisUnavailable(
                f"Redis at {self._conns.where} unavailable (follow): the fan-out cannot reach it"
            )
        try:
            await f.waiters.wait(block, self._wheel)
        finally:
            f.touched = time.monotonic()
        got = f.slice(after_seq)
        if (got is None and f.tail > after_seq) or (not got and f.finished):
            # The buffer restarted past after_seq, or the stream is over while the fan-out may
            # have missed its last entries (a resync): Redis has them all.
            entries, _, _ = await self.fetch(f.key, f.meta_key, after_seq)
            return entries
        return got or []

    async def fetch(
        self, key: str, meta_key: str, after_seq: int, *, state: bool = False
    ) -> tuple[list[LogEntry], bytes | None, bytes | None]:
        """Every entry after ``after_seq`` (in chunks, packed by ``FETCH``; superseded ones
        as their replacement, from ``meta_key``), and — with ``state`` — the stream's
        ``state`` and owning ``instance``, read in the same round trip as the first chunk."""
        out: list[LogEntry] = []
        found: bytes | None = None
        instance: bytes | None = None
        after = after_seq
        client = self._conns.client
        keys = [key, meta_key]
        while True:
            args = [after, READ_CHUNK, "1" if state else "0"]
            self._counters["backlog_reads"] += 1
            replies = await self._conns.call(
                lambda args=args: FETCH(client, keys, args),  # type: ignore[misc]
                what="read",
            )
            if state:
                found = replies[1] or None
                instance = replies[2] or None
                state = False
            chunk = unpack_entries(replies[0])
            out += chunk
            if len(chunk) < READ_CHUNK:
                return out, found, instance
            after = chunk[-1].seq

    # ------------------------------------------------------------------ the fan-out loop

    async def run(self, closed: Callable[[], bool]) -> None:
        """Deliver the live tail of followed streams until ``closed()`` (or cancelled)."""
        delay = 0.05
        try:
            while not closed():
                if not self.followers and not self._subscribed:
                    await self._wake.wait(1.0, self._wheel)
                    continue
                try:
                    message = await self._turn()
                except asyncio.CancelledError:
                    raise
                except TRANSIENT as exc:
                    await self._lost(exc)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 0.5)
                    continue
                if self.down_since is not None:
                    self.down_since = None
                    delay = 0.05
                if message is not None and message.get("type") == "message":
                    self.on_message(message["data"])
        finally:
            await self._drop_subscription()

    async def _turn(self) -> Any:
        """Subscribe to the channels wanted, catch up what may have been missed, then wait
        :data:`FANOUT_POLL` seconds for one message."""
        wanted = {f.channel for f in self.followers.values()}
        if self._pubsub is None:
            self._pubsub = self._conns.pubsub()
            self._subscribed = set()
            for f in self.followers.values():
                f.resync = True  # anything may have been missed while away
        pubsub = self._pubsub
        if wanted - self._subscribed:
            await pubsub.subscribe(*(wanted - self._subscribed))
            self._subscribed |= wanted
        if self._subscribed - wanted:
            await pubsub.unsubscribe(*(self._subscribed - wanted))
            self._subscribed &= wanted
        resync = [f for f in self.followers.values() if f.resync]
        if resync:
            # After the subscription is in force: anything written before it is fetched
            # here, anything after arrives as a message.
            await self._catch_up(resync)
        return await pubsub.get_message(ignore_subscribe_messages=True, timeout=FANOUT_POLL)

    async def _lost(self, exc: BaseException) -> None:
        if self.down_since is None:
            self.down_since = time.monotonic()
            self._log.warning("redislog_fanout_unreachable", error=type(exc).__name__)
        await self._drop_subscription()

    async def _drop_subscription(self) -> None:
        if self._pubsub is not None:
            pubsub, self._pubsub = self._pubsub, None
            self._subscribed = set()
            with contextlib.suppress(Exception):
                await pubsub.aclose()

    def on_message(self, data: bytes) -> None:
        """Hand a fan-out message's entries to their followers, in order; a gap sends the
        follower back to Redis (``resync``). A finish notice wakes the stream's readers."""
        followers = self.followers
        if not followers:
            return
        got: dict[str, list[LogEntry]] = {}
        for sid, entry in unpack_fanout(data):
            f = followers.get(sid)
            if f is None:
                continue
            if entry.seq == FINISH_SEQ:  # a finish notice, after the stream's last batch
                f.finished = True
                f.waiters.wake()
                continue
            if f.resync:
                continue
            last = got[sid][-1].seq if sid in got else f.tail
            if entry.seq <= last:
                # Already held: a replacement of a superseded entry (or a duplicate of what
                # a fetch brought, the same bytes): put it in place.
                pending = got.get(sid)
                if pending and entry.seq >= pending[0].seq:
                    pending[entry.seq - pending[0].seq] = entry
                else:
                    f.replace(entry)
                continue
            if entry.seq != last + 1:
                f.resync = True  # a gap: fetch from Redis on the next loop turn
                got.pop(sid, None)
                continue
            got.setdefault(sid, []).append(entry)
        for sid, entries in got.items():
            f = followers[sid]
            if not f.resync:
                self._counters["entries_followed"] += len(entries)
                f.add(entries, FOLLOW_BUFFER)

    async def _catch_up(self, followers: list[FollowedStream]) -> None:
        """Fetch (packed) what the followed streams hold past each follower's tail."""
        for i in range(0, len(followers), CATCH_UP_CHUNK):
            chunk = followers[i : i + CATCH_UP_CHUNK]
            keys = [k for f in chunk for k in (f.key, f.meta_key)]
            args: list[Any] = [f.tail for f in chunk]
            args += [READ_CHUNK, "0"]
            self._counters["round_trips"] += 1
            replies = await FETCH(self._conns.client, keys, args)
            for f, packed in zip(chunk, replies, strict=False):
                entries = [e for e in unpack_entries(packed) if e.seq > f.tail]
                self._counters["entries_followed"] += len(entries)
                f.add(entries, FOLLOW_BUFFER)
                # A full chunk means more may be there: stay in resync for the next turn.
                f.resync = len(entries) >= READ_CHUNK

    def sweep(self, now: float) -> None:
        """Forget followed streams nobody reads any more."""
        for sid in [sid for sid, f in self.followers.items() if f.idle(now)]:
            del self.followers[sid]

    def wake_all(self) -> None:
        for f in self.followers.values():
            f.waiters.wake()
        self._wake.wake()
