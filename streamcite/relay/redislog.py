"""The relay's stream log in Redis Streams: resumable streams across several relay instances.

Layout (``prefix`` defaults to ``streamcite:relay:``; one plain Redis server, not Cluster):

=====================  ==========================================================================
``{p}s:{stream_id}``   Redis Stream of the events; entry id ``{seq}-0``, one field ``p`` (payload)
``{p}m:{stream_id}``   hash: ``owner`` (label given to :meth:`open_stream`), ``instance``, ``state``
                       (``running`` / ``done``), ``last_seq`` once done
``{p}l:{stream_id}``   the owner's lease: value = owning instance id, ``PX lease_ms``
``{p}c:{instance}``    the instance's control stream: cancels routed to it
``{p}f:{instance}``    (pub/sub channel) the instance's write batches, for live followers
=====================  ==========================================================================

How it keeps the per-token cost low:

* **Writes** — :meth:`RedisStreamLog.append` allocates the ``seq`` locally (the owner is the
  only writer) and queues the entry; one writer task sends everything queued since its last
  round trip as a *single* ``EVALSHA`` that runs one ``XADD … MAXLEN ~ maxlen {seq}-0 p …``
  per entry. Appends issued in the same loop iteration (or while a batch is in flight) share
  one round trip and one reply. Explicit ids make a retried batch idempotent (an id at or below
  the stream's top is an entry an earlier attempt already stored).
* **Local readers** (clients connected to the owner) are served from memory, once Redis has
  stored the entry (``local_delivery="after_write"``, the default) or at once
  (``"immediate"``); they never wait on a Redis read.
* **Remote readers** (a client that reconnected to another instance) read the backlog in one
  round trip (a Lua script packs the entries into one string per stream: redis-py's pure-Python
  reply parser costs microseconds per element) and then follow the live tail through the
  owner's fan-out channel: the write script publishes every batch, stored first, as one
  message; each instance subscribes to the owners it follows and fetches from Redis whatever
  it may have missed (a gap, a fresh subscription, a reconnect).
* **Control**: cancels go to the owner's control stream (durable, unlike pub/sub), which it
  follows with a blocking ``XREAD``.

Failures: lost connections are retried with backoff; once Redis has been unreachable for
``unavailable_after`` seconds, calls raise :class:`RedisUnavailable` (``redis_unavailable``,
retryable). An entry whose write failed is still delivered to this instance's own readers
(so they can be told what happened) — see :meth:`RedisStreamLog.append`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import math
import os
import secrets
import socket
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError
from redis.exceptions import TimeoutError as RedisTimeoutError

from streamcite.core.errors import StreamciteError
from streamcite.logs import get_logger
from streamcite.relay.log import LogEntry, StreamStatus

__all__ = ["RedisStreamLog", "RedisUnavailable", "StreamLogConflict"]

_log = get_logger("streamcite.relay.redislog")

# Errors after which the same command may succeed later (Redis restarting, loading, network).
# BusyLoadingError is a ConnectionError subclass in redis-py.
_TRANSIENT: Final = (RedisConnectionError, RedisTimeoutError, ConnectionError, OSError)

_MAX_STREAM_ID = 200
"""Longer ids are treated as unknown: a client-supplied id never becomes a huge key."""

CallbackT = Callable[[str], Awaitable[None] | None]


class RedisUnavailable(StreamciteError):
    """Redis could not be reached (or kept failing) for longer than the configured window."""

    code = "redis_unavailable"
    retryable = True


class StreamLogConflict(StreamciteError):
    """A log operation that contradicts the stream's state: the id is taken, the stream is
    not owned by this instance (or no longer is), or it is already finished."""

    code = "stream_log_conflict"


# --------------------------------------------------------------------------------------------
# Lua scripts: each runs atomically and costs one round trip whatever the batch size.
# --------------------------------------------------------------------------------------------

# ARGV: maxlen, fan-out channel, fan-out message (the batch, packed), then seq and payload
# per entry. The message is published after the entries are stored, atomically with them.
_APPEND_LUA = """
local maxlen = ARGV[1]
local dup = 0
for i = 1, #KEYS do
  local r = redis.pcall('XADD', KEYS[i], 'MAXLEN', '~', maxlen, ARGV[2 * i + 2] .. '-0', 'p', ARGV[2 * i + 3])
  if type(r) == 'table' and r.err then
    if string.find(r.err, 'equal or smaller', 1, true) then
      dup = dup + 1
    else
      return redis.error_reply(r.err)
    end
  end
end
redis.call('PUBLISH', ARGV[2], ARGV[3])
return dup
"""

_OPEN_LUA = """
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('HSET', KEYS[2], 'owner', ARGV[4], 'instance', ARGV[1], 'state', 'running')
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('DEL', KEYS[3])
return 1
"""

# One char per stream: '1' renewed, '2' re-acquired (it had lapsed: a stall or Redis lost its
# data), '0' another instance holds it. Meta and stream TTLs are pushed out with the lease so
# a crashed owner's keys still expire (``ttl_ms`` after its last heartbeat).
_RENEW_LUA = """
local out = {}
for i = 1, #KEYS, 3 do
  local v = redis.call('GET', KEYS[i])
  local r = '0'
  if v == ARGV[1] then
    redis.call('PEXPIRE', KEYS[i], ARGV[2])
    r = '1'
  elseif not v then
    redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
    r = '2'
  end
  if r ~= '0' then
    if redis.call('EXISTS', KEYS[i + 1]) == 0 then
      redis.call('HSET', KEYS[i + 1], 'owner', ARGV[4 + (i - 1) / 3], 'instance', ARGV[1], 'state', 'running')
    end
    redis.call('PEXPIRE', KEYS[i + 1], ARGV[3])
    redis.call('PEXPIRE', KEYS[i + 2], ARGV[3])
  end
  out[#out + 1] = r
end
return table.concat(out)
"""

_FINISH_LUA = """
redis.call('HSET', KEYS[2], 'owner', ARGV[4], 'instance', ARGV[1], 'state', 'done', 'last_seq', ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[3], ARGV[2])
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
end
return 1
"""

_RELEASE_LUA = """
local n = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    n = n + 1
  end
end
return n
"""

# One char per followed stream: '0' when it is unfinished and its lease has lapsed (the owner
# is gone), else '1'.
_WATCH_LUA = """
local out = {}
for i = 1, #KEYS, 2 do
  local r = '1'
  if redis.call('EXISTS', KEYS[i]) == 0 and redis.call('HGET', KEYS[i + 1], 'state') ~= 'done' then
    r = '0'
  end
  out[#out + 1] = r
end
return table.concat(out)
"""

# Entries after a seq, packed into one string per stream: "{seq} {len} {payload}" repeated.
# redis-py's pure-Python reply parser costs microseconds per element, and an XRANGE entry is
# five elements; packed, a whole backlog is one. KEYS: streams; ARGV: after-seq per stream,
# then the count per stream; with a meta key as one more KEY, its state and owning instance
# are appended to the reply.
_FETCH_LUA = """
local n = #ARGV - 1
local count = ARGV[#ARGV]
local out = {}
for i = 1, n do
  local entries = redis.call('XRANGE', KEYS[i], '(' .. ARGV[i] .. '-0', '+', 'COUNT', count)
  local parts = {}
  for j = 1, #entries do
    local id = entries[j][1]
    local fields = entries[j][2]
    local payload = ''
    for k = 1, #fields, 2 do
      if fields[k] == 'p' then payload = fields[k + 1] end
    end
    parts[#parts + 1] = string.sub(id, 1, string.find(id, '-', 1, true) - 1) .. ' ' .. #payload .. ' ' .. payload
  end
  out[i] = table.concat(parts)
end
if #KEYS > n then
  local m = redis.call('HMGET', KEYS[n + 1], 'state', 'instance')
  out[n + 1] = m[1] or ''
  out[n + 2] = m[2] or ''
end
return out
"""

_STATUS_LUA = """
local lease = redis.call('GET', KEYS[1]) or ''
local m = redis.call('HMGET', KEYS[2], 'owner', 'instance', 'state', 'last_seq')
local last = redis.call('XREVRANGE', KEYS[3], '+', '-', 'COUNT', 1)
local last_id = ''
if #last > 0 then last_id = last[1][1] end
return {lease, m[1] or '', m[2] or '', m[3] or '', m[4] or '', last_id}
"""


class _Script:
    """EVALSHA with a one-time ``SCRIPT LOAD`` fallback (the cache is empty after a restart)."""

    __slots__ = ("sha", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()

    async def __call__(
        self, client: aioredis.Redis, keys: Sequence[Any], args: Sequence[Any]
    ) -> Any:
        try:
            return await client.evalsha(self.sha, len(keys), *keys, *args)
        except NoScriptError:
            await client.script_load(self.source)
            return await client.evalsha(self.sha, len(keys), *keys, *args)


def _bulk(value: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(value), value)


class _HotConnection:
    """One dedicated connection for a hot path (the writer, the tail reader): commands are
    packed here (redis-py's generic packing costs several µs per argument) and sent as one
    write; replies are read with redis-py's parser. Any failure or cancellation mid-command
    drops the connection, so a half-read reply can never be mistaken for the next one; the
    next call reconnects."""

    __slots__ = ("_conn", "_pool")

    def __init__(self, pool: aioredis.ConnectionPool) -> None:
        self._pool = pool
        self._conn: Any = None

    async def call(self, packed: bytes, limit: float) -> Any:
        """Send one packed command, return its reply; ``limit`` seconds for the whole exchange."""
        if self._conn is None:
            self._conn = await self._pool.get_connection()  # type: ignore[no-untyped-call]
        conn = self._conn
        try:
            async with asyncio.timeout(limit):
                await conn.send_packed_command(packed, check_health=False)
                return await conn.read_response()
        except BaseException as exc:
            if not isinstance(exc, NoScriptError):  # a complete error reply: still in sync
                await conn.disconnect(nowait=True)
            if isinstance(exc, TimeoutError):
                raise RedisTimeoutError("Redis did not answer in time") from None
            raise

    async def release(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await conn.disconnect(nowait=True)
            await self._pool.release(conn)


# --------------------------------------------------------------------------------------------
# Local state
# --------------------------------------------------------------------------------------------


class _TimerWheel:
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


class _Waiters:
    """Readers blocked on one stream: a list of futures resolved together."""

    __slots__ = ("futures",)

    def __init__(self) -> None:
        self.futures: list[asyncio.Future[None]] = []

    async def wait(self, limit: float, wheel: _TimerWheel) -> None:
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


@dataclass(slots=True, eq=False)
class _Owned:
    """A stream this instance owns: the writer side plus an in-memory copy for local readers."""

    stream_id: str
    owner: str
    key: str
    meta_key: str
    lease_key: str
    key_bulk: bytes = b""
    """``key`` as a RESP bulk string, packed once for every write of this stream."""
    sid_prefix: bytes = b""
    """``{len} {stream_id}`` for the fan-out message."""
    next_seq: int = 1
    written: int = 0
    """Highest seq the writer has settled (stored in Redis, or failed for good)."""
    entries: list[LogEntry] = field(default_factory=list)
    """Entries local readers can see, contiguous seqs (see ``local_delivery``)."""
    first_seq: int = 1
    finished: bool = False
    finished_at: float = 0.0
    lost: bool = False
    """Another instance holds the lease: appends are refused."""
    error: StreamciteError | None = None
    """Set when a write of this stream failed for good (Redis unavailable): later entries are
    delivered to local readers only, and ``append`` raises it."""
    waiters: _Waiters = field(default_factory=_Waiters)

    def deliver(self, entry: LogEntry, cap: int) -> None:
        self.entries.append(entry)
        # Trim in chunks so the list copy is amortised over many appends.
        if len(self.entries) > cap + cap // 4 + 16:
            drop = len(self.entries) - cap
            del self.entries[:drop]
            self.first_seq += drop

    def slice(self, after_seq: int) -> list[LogEntry]:
        start = max(after_seq + 1 - self.first_seq, 0)
        return self.entries[start:]

    @property
    def last_seq(self) -> int:
        return self.first_seq + len(self.entries) - 1


@dataclass(slots=True, eq=False)
class _Follower:
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
    waiters: _Waiters = field(default_factory=_Waiters)

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

    def slice(self, after_seq: int) -> list[LogEntry] | None:
        """Entries after ``after_seq`` when the buffer covers ``after_seq + 1``, else None."""
        if not self.buf:
            return None
        first = self.buf[0].seq
        if after_seq + 1 < first:
            return None
        return self.buf[after_seq + 1 - first :]


def _unpack(packed: bytes) -> list[LogEntry]:
    """Entries of one stream from ``_FETCH_LUA``'s packed form."""
    out: list[LogEntry] = []
    i, n = 0, len(packed)
    find = packed.index
    while i < n:
        j = find(b" ", i)
        k = find(b" ", j + 1)
        end = k + 1 + int(packed[j + 1 : k])
        out.append(LogEntry(int(packed[i:j]), packed[k + 1 : end]))
        i = end
    return out


def _unpack_fanout(packed: bytes) -> list[tuple[str, LogEntry]]:
    """``(stream_id, entry)`` pairs of a fan-out message: ``{n} {sid}{seq} {len} {payload}``."""
    out: list[tuple[str, LogEntry]] = []
    i, n = 0, len(packed)
    find = packed.index
    while i < n:
        j = find(b" ", i)
        sid_end = j + 1 + int(packed[i:j])
        k = find(b" ", sid_end + 1)
        m = find(b" ", k + 1)
        end = m + 1 + int(packed[k + 1 : m])
        out.append(
            (
                packed[j + 1 : sid_end].decode(),
                LogEntry(int(packed[sid_end + 1 : k]), packed[m + 1 : end]),
            )
        )
        i = end
    return out


def _identity(response: Any, **_options: Any) -> Any:
    return response


def _describe_url(url: str) -> str:
    """``host:port/db`` of a Redis URL, never its credentials (for messages and logs)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or "localhost"
        port = parts.port or 6379
        db = parts.path.lstrip("/") or "0"
        if parts.scheme == "unix":
            return f"unix:{parts.path}"
        return f"{host}:{port}/{db}"
    except ValueError:
        return "<invalid redis url>"


# --------------------------------------------------------------------------------------------
# The log
# --------------------------------------------------------------------------------------------


class RedisStreamLog:
    """:class:`streamcite.relay.log.StreamLog` stored in Redis Streams, shared by relay instances.

    Each relay process creates one, with the same ``url`` and ``prefix`` and a unique
    ``instance_id`` (the default is unique per process). Background tasks (writer, lease
    heartbeat, tail reader) start on first use; :meth:`aclose` stops them and releases this
    instance's leases. Call :meth:`connect` at start-up to fail fast when Redis is not there.

    Args:
        url: ``redis://[:password@]host:port/db`` (or ``rediss://``, ``unix://``). Never
            logged or repeated in errors with its credentials.
        instance_id: this relay instance's name in leases and cancel routing.
        maxlen: entries kept per stream (``XADD MAXLEN ~``; also the in-memory copy).
        retention: seconds a finished stream stays readable.
        lease_ms: ownership lease; renewed every ``lease_ms / 3``. When the owner dies, other
            instances see ``owner_alive=False`` at most ``lease_ms`` after its last renewal.
        unavailable_after: seconds of failing Redis calls before :class:`RedisUnavailable`.
        prefix: key prefix, to share one Redis database between deployments.
        write_batch: most entries per write round trip.
        max_connections: size of the (blocking) connection pool for commands.
        local_delivery: when this instance's own readers see an entry. ``"after_write"`` (the
            default): once Redis has stored it — no client ever holds an event the shared log
            lacks, so a resume anywhere is exact and, if the owner crashes, the partial answer
            other instances report is exactly what its clients saw; it costs two or three
            event-loop turns per event, which is what dominates the added latency under load.
            ``"immediate"``: at ``append``, as with the in-memory log, Redis written behind
            (within one round trip): for deployments that keep clients on their owner; after
            an owner crash its clients may be a few events ahead of Redis.
    """

    def __init__(
        self,
        url: str,
        *,
        instance_id: str | None = None,
        maxlen: int = 10_000,
        retention: float = 300.0,
        lease_ms: int = 5000,
        unavailable_after: float = 5.0,
        prefix: str = "streamcite:relay:",
        write_batch: int = 2000,
        max_connections: int = 32,
        connect_timeout: float = 2.0,
        command_timeout: float = 5.0,
        local_delivery: str = "after_write",
    ) -> None:
        if local_delivery not in ("after_write", "immediate"):
            raise ValueError("local_delivery is 'after_write' or 'immediate'")
        self.local_delivery = local_delivery
        self._immediate = local_delivery == "immediate"
        if maxlen < 1 or retention <= 0 or lease_ms < 100 or unavailable_after < 0:
            raise ValueError("maxlen >= 1, retention > 0, lease_ms >= 100, unavailable_after >= 0")
        self.instance_id = (
            instance_id or f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
        )
        self.maxlen = maxlen
        self.retention = retention
        self.lease_ms = lease_ms
        self.unavailable_after = unavailable_after
        self.prefix = prefix
        self.write_batch = write_batch
        self._where = _describe_url(url)
        self._running_ttl_ms = int(retention * 1000) + lease_ms
        self._retention_ms = max(int(retention * 1000), 1)
        # Finished streams stay in memory (for local readers) at most this long; Redis keeps them
        # for the full retention and serves later reads.
        self._local_retention = min(retention, 30.0)
        self._control_block_ms = 1000
        self._fanout_poll = 0.05
        self._follow_idle = 15.0
        self._follow_buffer = 4096
        self._read_chunk = 1000

        # Retries are ours, bounded by ``unavailable_after``; redis-py's default (3 retries with
        # up to 10 s backoff, per connection) would make outage handling slow and unpredictable.
        no_retry = Retry(NoBackoff(), 0)
        pool = aioredis.BlockingConnectionPool.from_url(
            url,
            max_connections=max_connections,
            # Waiting for a free connection is local queueing (say, a burst of resumes), not an
            # outage: allow it longer than one command.
            timeout=max(command_timeout * 6, 30.0),
            socket_connect_timeout=connect_timeout,
            socket_timeout=command_timeout,
            protocol=2,
            retry=no_retry,
            client_name=f"streamcite-relay:{self.instance_id}"[:120].replace(" ", "_"),
        )
        self._pool = pool
        self._client = aioredis.Redis(connection_pool=pool, retry=no_retry)
        # The tail reader blocks in XREAD: its own connection, with a socket timeout above the
        # block time so a quiet stream is not mistaken for a dead server.
        # Raw replies for the stream reads: we parse [id, [field, value]] ourselves.
        for command in ("XRANGE", "XREAD", "XREVRANGE"):
            self._client.set_response_callback(command, _identity)
        # The writer and the tail reader each keep one connection of their own; their timeouts
        # are applied per command (the tail reader's XREAD blocks by design).
        self._hot_pool = aioredis.ConnectionPool.from_url(
            url,
            max_connections=6,  # writer, control stream, fan-out subscription (+ slack)
            socket_connect_timeout=connect_timeout,
            socket_timeout=None,
            protocol=2,
            retry=no_retry,
            client_name=f"streamcite-relay-hot:{self.instance_id}"[:120].replace(" ", "_"),
        )
        self._writer_conn = _HotConnection(self._hot_pool)
        self._control_conn = _HotConnection(self._hot_pool)
        self._command_timeout = command_timeout
        self._maxlen_bulk = _bulk(str(maxlen).encode())
        self._fanout_bulk = _bulk(self._fanout_channel(self.instance_id).encode())
        self._fanout_wake = _Waiters()
        self._fanout_down_since: float | None = None

        self._append = _Script(_APPEND_LUA)
        self._open = _Script(_OPEN_LUA)
        self._renew = _Script(_RENEW_LUA)
        self._finish = _Script(_FINISH_LUA)
        self._release = _Script(_RELEASE_LUA)
        self._status = _Script(_STATUS_LUA)
        self._watch = _Script(_WATCH_LUA)
        self._fetch = _Script(_FETCH_LUA)

        self._owned: dict[str, _Owned] = {}
        self._followers: dict[str, _Follower] = {}
        self._callbacks: list[CallbackT] = []
        self._callback_tasks: set[asyncio.Future[None]] = set()

        self._pending: list[tuple[_Owned, LogEntry]] = []
        """Entries queued for the writer (in append order)."""
        self._pending_event: asyncio.Event | None = None
        self._in_flight = 0
        self._progress = _Waiters()
        self._wheel = _TimerWheel()
        """Woken after every write round trip (backpressure, finish, close wait on it)."""
        self._max_pending = 100_000
        self._tasks: list[asyncio.Task[None]] = []
        self._started = False
        self._closed = False
        self._down_since: float | None = None
        """monotonic time of the first failure of the current outage (writer, heartbeat)."""
        self._needs_renew = False
        self._ctl_key = f"{prefix}c:{self.instance_id}"
        self._ctl_last: bytes = b"0-0"
        self._log = _log.bind(instance=self.instance_id, redis=self._where)
        self.counters: dict[str, int] = {
            "round_trips": 0,
            "entries_written": 0,
            "write_batches": 0,
            "entries_followed": 0,
            "backlog_reads": 0,
        }
        """Counters: Redis round trips made, entries written, etc. (benchmarks read them)."""

    def stats(self) -> dict[str, int]:
        """For metrics and benchmarks: streams owned and followed here, entries queued, and the
        counters (Redis round trips, entries written, write batches, entries followed, reads)."""
        return {
            "streams": len(self._owned),
            "live": sum(1 for o in self._owned.values() if not o.finished),
            "followed": len(self._followers),
            "queued": len(self._pending),
            "entries": sum(len(o.entries) for o in self._owned.values()),
            "bytes": sum(len(e.payload) for o in self._owned.values() for e in o.entries),
            **self.counters,
        }

    def __repr__(self) -> str:
        return f"RedisStreamLog(redis={self._where!r}, instance_id={self.instance_id!r})"

    # ------------------------------------------------------------------ keys

    def _stream_key(self, stream_id: str) -> str:
        return f"{self.prefix}s:{stream_id}"

    def _meta_key(self, stream_id: str) -> str:
        return f"{self.prefix}m:{stream_id}"

    def _lease_key(self, stream_id: str) -> str:
        return f"{self.prefix}l:{stream_id}"

    # ------------------------------------------------------------------ lifecycle

    async def connect(self) -> None:
        """Start the background tasks and check that Redis answers; raise
        :class:`RedisUnavailable` (after ``unavailable_after`` seconds of retries) if not."""
        self._ensure_started()
        await self._call(lambda: self._client.ping(), what="PING")

    def _ensure_started(self) -> None:
        if self._closed:
            raise StreamciteError("the Redis stream log is closed", code="log_closed")
        if self._started:
            return
        self._started = True
        self._pending_event = asyncio.Event()
        self._tasks = [
            asyncio.create_task(self._write_loop(), name="redislog-writer"),
            asyncio.create_task(self._heartbeat_loop(), name="redislog-heartbeat"),
            asyncio.create_task(self._control_loop(), name="redislog-control"),
            asyncio.create_task(self._fanout_loop(), name="redislog-fanout"),
        ]

    async def aclose(self, *, release_leases: bool = True) -> None:
        """Flush queued writes (up to 2 s), release this instance's leases (so readers elsewhere
        see ``owner_alive=False`` at once instead of after the lease time), stop the tasks and
        close the connections. ``release_leases=False`` leaves the leases to lapse, as a crash
        would (tests use it)."""
        if self._closed:
            return
        self._closed = True
        if self._started:
            deadline = time.monotonic() + 2.0
            while (self._pending or self._in_flight) and time.monotonic() < deadline:
                await self._progress.wait(deadline - time.monotonic(), self._wheel)
            if release_leases:
                keys = [o.lease_key for o in self._owned.values() if not o.finished]
                if keys:
                    with contextlib.suppress(Exception):
                        async with asyncio.timeout(1.0):
                            await self._release(self._client, keys, [self.instance_id])
            await self._stop_tasks()
        self._pending.clear()
        for o in self._owned.values():
            o.waiters.wake()
        for f in self._followers.values():
            f.waiters.wake()
        self._progress.wake()
        self._wheel.fire_all()
        await self._writer_conn.release()
        await self._control_conn.release()
        await self._client.aclose()
        await self._pool.aclose()
        await self._hot_pool.aclose()

    async def _stop_tasks(self) -> None:
        """Cancel the background tasks and wait for them, at most about 5 s.

        One ``cancel()`` is not always enough: on Python 3.11 a cancel that lands while an
        ``asyncio.timeout`` expires (redis-py's ``get_message(timeout=…)`` and reads use one)
        can be turned into a ``TimeoutError`` that the loops take for a Redis hiccup, and an
        unbounded ``gather`` then waits forever. So the loops also stop on ``_closed``, and
        the wait here is bounded and cancels again until the tasks are done."""
        pending: set[asyncio.Future[None]] = {*self._tasks, *self._callback_tasks}
        deadline = time.monotonic() + 5.0
        while pending and time.monotonic() < deadline:
            for task in pending:
                task.cancel()
            _, pending = await asyncio.wait(pending, timeout=0.5)
        for task in [*self._tasks, *self._callback_tasks]:
            if task.done() and not task.cancelled() and task.exception() is not None:
                self._log.error("redislog_task_failed", error=repr(task.exception()))
        if pending:
            self._log.error("redislog_tasks_not_stopped", tasks=len(pending))

    # ------------------------------------------------------------------ error handling

    def _unavailable(self, exc: BaseException, what: str) -> RedisUnavailable:
        # The exception's text names host:port at most; the URL (maybe with a password) is not used.
        return RedisUnavailable(
            f"Redis at {self._where} unavailable ({what}): {type(exc).__name__}: {exc}"
        )

    def _outage_deadline(self) -> float | None:
        """During an outage already past ``unavailable_after``: one attempt, no retry window."""
        since = self._down_since
        if since is not None and time.monotonic() - since >= self.unavailable_after:
            return time.monotonic()
        return None

    async def _call(
        self, fn: Callable[[], Awaitable[Any]], *, what: str, deadline: float | None = None
    ) -> Any:
        """Run one Redis call, retrying transient failures with backoff until ``deadline``
        (default: ``unavailable_after`` from now), then raise :class:`RedisUnavailable`."""
        if deadline is None:
            deadline = time.monotonic() + self.unavailable_after
        delay = 0.05
        while True:
            try:
                self.counters["round_trips"] += 1
                return await fn()
            except _TRANSIENT as exc:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self._unavailable(exc, what) from None
                await asyncio.sleep(min(delay, remaining))
                delay = min(delay * 2, 0.5)

    # ------------------------------------------------------------------ StreamLog: writer side

    async def open_stream(self, stream_id: str, *, owner: str) -> None:
        """Create the stream and take its lease for this instance (``owner`` is the relay's
        label for it, reported by :meth:`status`). Raises :class:`StreamLogConflict` when the
        id exists (running or retained), :class:`RedisUnavailable` when Redis is unreachable."""
        self._ensure_started()
        if not 0 < len(stream_id) <= _MAX_STREAM_ID:
            raise StreamLogConflict(f"stream id must be 1..{_MAX_STREAM_ID} characters")
        if stream_id in self._owned:
            raise StreamLogConflict("stream id already open on this instance")
        o = _Owned(
            stream_id=stream_id,
            owner=owner,
            key=self._stream_key(stream_id),
            meta_key=self._meta_key(stream_id),
            lease_key=self._lease_key(stream_id),
            key_bulk=_bulk(self._stream_key(stream_id).encode()),
            sid_prefix=b"%d %s" % (len(stream_id.encode()), stream_id.encode()),
        )
        created = await self._call(
            lambda: self._open(
                self._client,
                [o.lease_key, o.meta_key, o.key],
                [self.instance_id, self.lease_ms, self._running_ttl_ms, owner],
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
            raise StreamciteError("the Redis stream log is closed", code="log_closed")
        seq = o.next_seq
        o.next_seq = seq + 1
        entry = LogEntry(seq, payload)
        if o.error is not None:
            o.deliver(entry, self.maxlen)
            o.written = seq
            o.waiters.wake()
            raise o.error
        if self._immediate:
            o.deliver(entry, self.maxlen)
            o.waiters.wake()
        self._pending.append((o, entry))
        assert self._pending_event is not None
        self._pending_event.set()
        if len(self._pending) > self._max_pending:
            await self._wait_for_writer(lambda: len(self._pending) <= self._max_pending // 2)
        return seq

    async def flush(self) -> None:
        """Wait until every entry appended so far is in Redis (or has failed for good); then
        other instances can read it. Raises :class:`RedisUnavailable` if writes do not drain
        (not needed by the relay — readers see entries as soon as they are written)."""
        targets = [(o, o.next_seq - 1) for o in self._owned.values()]
        await self._wait_for_writer(lambda: all(o.written >= last for o, last in targets))

    async def _wait_for_writer(self, done: Callable[[], bool]) -> None:
        """Wait until ``done()`` holds, re-checked after every write round trip. The writer
        settles every batch within ``unavailable_after`` (+ one command), so this is bounded."""
        limit = self.unavailable_after + self._command_timeout + 1.0
        deadline = time.monotonic() + limit
        while not done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RedisUnavailable(
                    f"Redis at {self._where} unavailable: writes did not drain in {limit:.0f} s"
                )
            await self._progress.wait(remaining, self._wheel)

    async def _write_loop(self) -> None:
        assert self._pending_event is not None
        event = self._pending_event
        while True:
            await event.wait()
            event.clear()
            while self._pending:
                batch = self._pending[: self.write_batch]
                del self._pending[: self.write_batch]
                self._in_flight = len(batch)
                try:
                    await self._write_batch(batch)
                except asyncio.CancelledError:
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
                    self._in_flight = 0
                    self._progress.wake()

    async def _write_batch(self, batch: list[tuple[_Owned, LogEntry]]) -> None:
        # EVALSHA sha n key_1..key_n maxlen seq_1 payload_1 .. seq_n payload_n, packed by hand.
        n = len(batch)
        fanout: list[bytes] = []
        for o, entry in batch:
            fanout.append(b"%s %d %d " % (o.sid_prefix, entry.seq, len(entry.payload)))
            fanout.append(entry.payload)
        parts: list[bytes] = [
            b"*%d\r\n$7\r\nEVALSHA\r\n" % (3 + 3 * n + 3),
            _bulk(self._append.sha.encode()),
            _bulk(str(n).encode()),
        ]
        parts += [o.key_bulk for o, _ in batch]
        parts.append(self._maxlen_bulk)
        parts.append(self._fanout_bulk)
        parts.append(_bulk(b"".join(fanout)))
        for _, entry in batch:
            seq = str(entry.seq).encode()
            payload = entry.payload
            parts.append(b"$%d\r\n%s\r\n$%d\r\n" % (len(seq), seq, len(payload)))
            parts.append(payload)
            parts.append(b"\r\n")
        packed = b"".join(parts)
        delay = 0.02
        while True:
            try:
                if self._needs_renew:
                    # Back from an outage: Redis may have restarted empty, so re-create leases and
                    # metadata before the entries (readers elsewhere look these up).
                    await self._renew_owned(raise_errors=True)
                self.counters["round_trips"] += 1
                try:
                    await self._writer_conn.call(packed, self._command_timeout)
                except NoScriptError:  # Redis restarted: its script cache is empty
                    await self._client.script_load(self._append.source)
                    continue
                break
            except _TRANSIENT as exc:
                now = time.monotonic()
                if self._down_since is None:
                    self._down_since = now
                    self._log.warning("redis_unreachable", error=f"{type(exc).__name__}: {exc}")
                self._needs_renew = True
                if now - self._down_since >= self.unavailable_after:
                    self._settle(batch, self._unavailable(exc, "append"))
                    return
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.5)
        if self._down_since is not None:
            self._log.warning(
                "redis_reachable_again", outage_s=round(time.monotonic() - self._down_since, 3)
            )
            self._down_since = None
        self.counters["write_batches"] += 1
        self.counters["entries_written"] += len(batch)
        self._settle(batch, None)

    def _settle(self, batch: list[tuple[_Owned, LogEntry]], err: StreamciteError | None) -> None:
        """Deliver a written (or failed) batch to local readers, in seq order, and wake them."""
        touched: dict[int, _Owned] = {}
        for o, entry in batch:
            if entry.seq == o.last_seq + 1:  # not yet delivered (always, unless immediate)
                o.deliver(entry, self.maxlen)
                touched[id(o)] = o
            o.written = entry.seq
            if err is not None and o.error is None:
                o.error = err
        for o in touched.values():
            o.waiters.wake()

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
            await self._wait_for_writer(lambda: o.written >= last)
        finally:
            o.finished = True
            o.finished_at = time.monotonic()
            o.waiters.wake()
        if o.error is not None:
            raise o.error
        await self._call(
            lambda: self._finish(
                self._client,
                [o.lease_key, o.meta_key, o.key],
                [self.instance_id, self._retention_ms, o.next_seq - 1, o.owner],
            ),
            what="finish",
            deadline=self._outage_deadline(),
        )

    # ------------------------------------------------------------------ heartbeat

    async def _heartbeat_loop(self) -> None:
        interval = self.lease_ms / 3000
        while not self._closed:
            await asyncio.sleep(interval if not self._needs_renew else min(interval, 0.2))
            try:
                await self._renew_owned(raise_errors=False)
                await self._watch_followed()
            except Exception as exc:  # never let the heartbeat die
                self._log.error("redislog_heartbeat_error", error=repr(exc))
            self._sweep()

    async def _watch_followed(self) -> None:
        """Wake the readers of followed streams whose owner's lease lapsed, so that they look
        at :meth:`status` now rather than when their ``block`` ends: a dead owner is noticed
        within ``lease_ms`` plus one heartbeat interval."""
        waited = [f for f in self._followers.values() if f.waiters]
        for i in range(0, len(waited), 500):
            chunk = waited[i : i + 500]
            keys: list[str] = []
            for f in chunk:
                keys += (f.lease_key, f.meta_key)
            try:
                self.counters["round_trips"] += 1
                result = await self._watch(self._client, keys, [])
            except _TRANSIENT:
                return  # the fan-out loop and the readers report the outage
            flags = result.decode() if isinstance(result, bytes) else str(result)
            for f, flag in zip(chunk, flags, strict=False):
                if flag == "0":
                    f.waiters.wake()

    async def _renew_owned(self, *, raise_errors: bool) -> None:
        live = [o for o in self._owned.values() if not o.finished and not o.lost]
        try:
            for i in range(0, len(live), 300):
                chunk = live[i : i + 300]
                keys: list[str] = []
                for o in chunk:
                    keys += (o.lease_key, o.meta_key, o.key)
                self.counters["round_trips"] += 1
                result = await self._renew(
                    self._client,
                    keys,
                    [
                        self.instance_id,
                        self.lease_ms,
                        self._running_ttl_ms,
                        *(o.owner for o in chunk),
                    ],
                )
                flags = result.decode() if isinstance(result, bytes) else str(result)
                for o, flag in zip(chunk, flags, strict=False):
                    if flag == "2":
                        self._log.warning("redislog_lease_reacquired", stream_id=o.stream_id)
                    elif flag == "0":
                        o.lost = True
                        self._log.error("redislog_lease_lost", stream_id=o.stream_id)
            self._needs_renew = False
        except _TRANSIENT as exc:
            self._needs_renew = True
            if raise_errors:
                raise
            self._log.debug("redislog_heartbeat_failed", error=f"{type(exc).__name__}")

    def _sweep(self) -> None:
        now = time.monotonic()
        for sid in [
            sid
            for sid, o in self._owned.items()
            if o.finished and now - o.finished_at > self._local_retention
        ]:
            del self._owned[sid]
        for sid in [
            sid
            for sid, f in self._followers.items()
            if not f.waiters and now - f.touched > self._follow_idle
        ]:
            del self._followers[sid]

    # ------------------------------------------------------------------ StreamLog: reader side

    async def read(
        self, stream_id: str, after_seq: int, *, block: float | None = None
    ) -> list[LogEntry]:
        """Entries with ``seq > after_seq`` in order (all of them still retained); when none and
        ``block`` is set, wait up to ``block`` seconds for the next ones (``[]`` on timeout).

        Streams owned here are read from memory; others from Redis (``XRANGE``), then followed
        live through this instance's shared ``XREAD``. Raises :class:`RedisUnavailable` when a
        stream owned elsewhere cannot be read because Redis is unreachable."""
        self._ensure_started()
        after_seq = max(after_seq, 0)
        o = self._owned.get(stream_id)
        if o is not None and o.first_seq <= after_seq + 1:
            got = o.slice(after_seq)
            if got or not block or o.finished:
                return got
            await o.waiters.wait(block, self._wheel)
            return o.slice(after_seq)
        if not 0 < len(stream_id) <= _MAX_STREAM_ID:
            return []
        return await self._read_remote(stream_id, after_seq, block)

    async def _read_remote(
        self, stream_id: str, after_seq: int, block: float | None
    ) -> list[LogEntry]:
        f = self._followers.get(stream_id)
        if f is not None and not f.waiters and time.monotonic() - f.touched > self._follow_idle:
            # Idle: the fan-out may have been dropped for it, so its tail may be stale.
            del self._followers[stream_id]
            f = None
        if f is not None:
            f.touched = time.monotonic()
            got = f.slice(after_seq)
            if got:
                return got
            if block and after_seq >= f.tail:
                return await self._wait_follower(f, after_seq, block)
            # A non-blocking read asks Redis, not the fan-out (which may lag a little): a reader
            # that saw the owner's lease lapse gets every entry the owner stored.
        entries, state, instance = await self._xrange(
            self._stream_key(stream_id), after_seq, meta_key=self._meta_key(stream_id)
        )
        if entries or not block or state != b"running" or not instance:
            # Nothing will follow a finished (or unknown / expired) stream: no need to wait.
            return entries
        f = self._followers.get(stream_id)
        if f is None:
            # Nothing after after_seq existed a moment ago; the fan-out loop subscribes to the
            # owner's channel if needed, then fetches what came in between.
            f = _Follower(
                key=self._stream_key(stream_id),
                lease_key=self._lease_key(stream_id),
                meta_key=self._meta_key(stream_id),
                tail=after_seq,
                touched=time.monotonic(),
                channel=self._fanout_channel(instance.decode()),
                resync=True,
            )
            self._followers[stream_id] = f
            self._fanout_wake.wake()
        return await self._wait_follower(f, after_seq, block)

    async def _wait_follower(
        self, f: _Follower, after_seq: int, block: float | None
    ) -> list[LogEntry]:
        if not block:
            return []
        if (
            self._fanout_down_since is not None
            and time.monotonic() - self._fanout_down_since >= self.unavailable_after
        ):
            raise RedisUnavailable(
                f"Redis at {self._where} unavailable (follow): the fan-out cannot reach it"
            )
        try:
            await f.waiters.wait(block, self._wheel)
        finally:
            f.touched = time.monotonic()
        got = f.slice(after_seq)
        if got is None and f.tail > after_seq:
            entries, _, _ = await self._xrange(f.key, after_seq)  # the buffer restarted past it
            return entries
        return got or []

    async def _xrange(
        self, key: str, after_seq: int, *, meta_key: str | None = None
    ) -> tuple[list[LogEntry], bytes | None, bytes | None]:
        """Every entry after ``after_seq`` (in chunks, packed by ``_FETCH_LUA``), and — with
        ``meta_key`` — the stream's ``state`` and owning ``instance``, read in the same round
        trip as the first chunk."""
        out: list[LogEntry] = []
        state: bytes | None = None
        instance: bytes | None = None
        after = after_seq
        while True:
            keys = [key] if meta_key is None else [key, meta_key]
            args = [after, self._read_chunk]
            self.counters["backlog_reads"] += 1
            replies = await self._call(
                lambda keys=keys, args=args: self._fetch(self._client, keys, args),  # type: ignore[misc]
                what="read",
            )
            if meta_key is not None:
                state = replies[1] or None
                instance = replies[2] or None
                meta_key = None
            chunk = _unpack(replies[0])
            out += chunk
            if len(chunk) < self._read_chunk:
                return out, state, instance
            after = chunk[-1].seq

    # ------------------------------------------------------------------ control stream

    async def _control_loop(self) -> None:
        """Follow this instance's control stream (cancels routed to it) with a blocking XREAD."""
        delay = 0.05
        ctl_known = False
        while not self._closed:
            try:
                if not ctl_known:
                    raw: Any = await self._control_conn.call(
                        b"*6\r\n$9\r\nXREVRANGE\r\n"
                        + _bulk(self._ctl_key.encode())
                        + b"$1\r\n+\r\n$1\r\n-\r\n$5\r\nCOUNT\r\n$1\r\n1\r\n",
                        self._command_timeout,
                    )
                    self._ctl_last = raw[0][0] if raw else b"0-0"
                    ctl_known = True
                packed = b"".join(
                    [
                        b"*8\r\n$5\r\nXREAD\r\n$5\r\nCOUNT\r\n$3\r\n100\r\n$5\r\nBLOCK\r\n",
                        _bulk(str(self._control_block_ms).encode()),
                        b"$7\r\nSTREAMS\r\n",
                        _bulk(self._ctl_key.encode()),
                        _bulk(self._ctl_last),
                    ]
                )
                self.counters["round_trips"] += 1
                reply: Any = await self._control_conn.call(
                    packed, self._control_block_ms / 1000 + self._command_timeout
                )
            except asyncio.CancelledError:
                raise
            except _TRANSIENT:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.5)
                continue
            except Exception as exc:  # never let the loop die; back off instead
                self._log.error("redislog_control_error", error=repr(exc))
                await asyncio.sleep(0.5)
                continue
            delay = 0.05
            for _key, raw_entries in reply or ():
                self._on_control(raw_entries)

    # ------------------------------------------------------------------ fan-out (live tail)

    def _fanout_channel(self, instance: str) -> str:
        return f"{self.prefix}f:{instance}"

    async def _fanout_loop(self) -> None:
        """Deliver the live tail of followed streams: each owner publishes every write batch on
        its channel (one message per round trip, whatever the number of entries); this loop
        subscribes to the channels of the owners it follows, hands the entries to the
        followers, and fetches from Redis whatever a follower may have missed (a gap, a fresh
        subscription, a reconnect)."""
        pubsub: Any = None
        subscribed: set[str] = set()
        delay = 0.05
        try:
            while not self._closed:
                wanted = {f.channel for f in self._followers.values()}
                if not wanted and not subscribed:
                    await self._fanout_wake.wait(1.0, self._wheel)
                    continue
                try:
                    if pubsub is None:
                        pubsub = aioredis.Redis(connection_pool=self._hot_pool).pubsub()
                        subscribed = set()
                        for f in self._followers.values():
                            f.resync = True  # anything may have been missed while away
                    if wanted - subscribed:
                        await pubsub.subscribe(*(wanted - subscribed))
                        subscribed |= wanted
                    if subscribed - wanted:
                        await pubsub.unsubscribe(*(subscribed - wanted))
                        subscribed &= wanted
                    resync = [f for f in self._followers.values() if f.resync]
                    if resync:
                        # After the subscription is in force: anything written before it is
                        # fetched here, anything after arrives as a message.
                        await self._catch_up(resync)
                    message = await pubsub.get_message(
                        ignore_subscribe_messages=True, timeout=self._fanout_poll
                    )
                except asyncio.CancelledError:
                    raise
                except _TRANSIENT as exc:
                    if self._fanout_down_since is None:
                        self._fanout_down_since = time.monotonic()
                        self._log.warning("redislog_fanout_unreachable", error=type(exc).__name__)
                    if pubsub is not None:
                        with contextlib.suppress(Exception):
                            await pubsub.aclose()
                        pubsub = None
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 0.5)
                    continue
                if self._fanout_down_since is not None:
                    self._fanout_down_since = None
                    delay = 0.05
                if message is not None and message.get("type") == "message":
                    self._on_fanout(message["data"])
        finally:
            if pubsub is not None:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()

    def _on_fanout(self, data: bytes) -> None:
        followers = self._followers
        if not followers:
            return
        got: dict[str, list[LogEntry]] = {}
        for sid, entry in _unpack_fanout(data):
            f = followers.get(sid)
            if f is None or f.resync:
                continue
            last = got[sid][-1].seq if sid in got else f.tail
            if entry.seq <= last:
                continue  # already fetched
            if entry.seq != last + 1:
                f.resync = True  # a gap: fetch from Redis on the next loop turn
                got.pop(sid, None)
                continue
            got.setdefault(sid, []).append(entry)
        for sid, entries in got.items():
            f = followers[sid]
            if not f.resync:
                self.counters["entries_followed"] += len(entries)
                f.add(entries, self._follow_buffer)

    async def _catch_up(self, followers: list[_Follower]) -> None:
        """Fetch (packed) what the followed streams hold past each follower's tail."""
        for i in range(0, len(followers), 500):
            chunk = followers[i : i + 500]
            keys = [f.key for f in chunk]
            args: list[Any] = [f.tail for f in chunk]
            args.append(self._read_chunk)
            self.counters["round_trips"] += 1
            replies = await self._fetch(self._client, keys, args)
            for f, packed in zip(chunk, replies, strict=False):
                entries = [e for e in _unpack(packed) if e.seq > f.tail]
                self.counters["entries_followed"] += len(entries)
                f.add(entries, self._follow_buffer)
                # A full chunk means more may be there: stay in resync for the next turn.
                f.resync = len(entries) >= self._read_chunk

    # ------------------------------------------------------------------ status

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
        if not 0 < len(stream_id) <= _MAX_STREAM_ID:
            return None
        raw = await self._call(
            lambda: self._status(
                self._client,
                [
                    self._lease_key(stream_id),
                    self._meta_key(stream_id),
                    self._stream_key(stream_id),
                ],
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

    # ------------------------------------------------------------------ cancel

    def on_cancel(self, callback: Callable[[str], Awaitable[None] | None]) -> None:
        """Register the owner-side handler, called with the id of a stream this instance owns
        when a cancel for it arrives from any instance."""
        self._callbacks.append(callback)

    async def request_cancel(self, stream_id: str) -> None:
        """Route a cancel to the stream's owner: called directly when it is this instance,
        otherwise appended to the owner's control stream. A no-op for unknown or finished
        streams and for streams whose owner is gone (readers will see ``owner_alive=False``)."""
        self._ensure_started()
        o = self._owned.get(stream_id)
        if o is not None:
            self._dispatch_cancel(stream_id)
            return
        if not 0 < len(stream_id) <= _MAX_STREAM_ID:
            return
        lease_key = self._lease_key(stream_id)
        holder = await self._call(lambda: self._client.get(lease_key), what="cancel")
        if not holder:
            return
        target = f"{self.prefix}c:{holder.decode()}"

        async def send() -> None:
            async with self._client.pipeline(transaction=False) as pipe:
                pipe.xadd(target, {"c": stream_id.encode()}, maxlen=1000, approximate=True)
                # The control stream of a dead instance must not live forever.
                pipe.pexpire(target, max(self._running_ttl_ms, 60_000))
                await pipe.execute()

        await self._call(send, what="cancel")

    def _on_control(self, raw_entries: Any) -> None:
        for entry_id, fields in raw_entries:
            self._ctl_last = entry_id
            for i in range(0, len(fields) - 1, 2):
                if fields[i] == b"c":
                    self._dispatch_cancel(fields[i + 1].decode(errors="replace"))

    def _dispatch_cancel(self, stream_id: str) -> None:
        o = self._owned.get(stream_id)
        if o is None or o.finished:
            return
        for callback in self._callbacks:
            try:
                result = callback(stream_id)
            except Exception as exc:
                self._log.error(
                    "redislog_cancel_callback_failed", stream_id=stream_id, error=repr(exc)
                )
                continue
            if result is not None:
                task = asyncio.ensure_future(result)
                self._callback_tasks.add(task)
                task.add_done_callback(self._callback_done)

    def _callback_done(self, task: asyncio.Future[None]) -> None:
        self._callback_tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._log.error("redislog_cancel_callback_failed", error=repr(task.exception()))
