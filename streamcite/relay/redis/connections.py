"""Connections to Redis and what a failing Redis means: bounded retries, then a typed error.

Retries are ours, bounded by ``unavailable_after``; redis-py's default (3 retries with up to
10 s backoff, per connection) would make outage handling slow and unpredictable. Messages name
Redis as ``host:port/db`` (:attr:`RedisLogSettings.where`), never with its password.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.client import PubSub
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import NoScriptError
from redis.exceptions import TimeoutError as RedisTimeoutError

from streamcite.relay.redis.errors import TRANSIENT, RedisUnavailable
from streamcite.relay.redis.settings import RedisLogSettings

__all__ = ["HotConnection", "RedisConnections"]


def _identity(response: Any, **_options: Any) -> Any:
    return response


class HotConnection:
    """One dedicated connection for a hot path (the writer, the control stream): commands are
    packed by the caller (redis-py's generic packing costs several µs per argument) and sent
    as one write; replies are read with redis-py's parser. Any failure or cancellation
    mid-command drops the connection, so a half-read reply can never be mistaken for the next
    one; the next call reconnects."""

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


class RedisConnections:
    """The pools of one :class:`RedisStreamLog`, and its outage state.

    ``client`` serves ordinary commands from a blocking pool; ``writer`` and ``control`` are
    dedicated :class:`HotConnection` s from a small second pool without a socket timeout (their
    timeouts are per command: the control stream's ``XREAD`` blocks by design), which also
    serves the fan-out subscription (:meth:`pubsub`).
    """

    def __init__(self, settings: RedisLogSettings, counters: dict[str, int]) -> None:
        self.settings = settings
        self.where = settings.where
        self.counters = counters
        self.down_since: float | None = None
        """monotonic time of the first failure of the current outage (writer, heartbeat)."""
        no_retry = Retry(NoBackoff(), 0)
        name = settings.instance_id
        self._pool = aioredis.BlockingConnectionPool.from_url(
            settings.url,
            max_connections=settings.max_connections,
            # Waiting for a free connection is local queueing (say, a burst of resumes), not an
            # outage: allow it longer than one command.
            timeout=max(settings.command_timeout * 6, 30.0),
            socket_connect_timeout=settings.connect_timeout,
            socket_timeout=settings.command_timeout,
            protocol=2,
            retry=no_retry,
            client_name=f"streamcite-relay:{name}"[:120].replace(" ", "_"),
        )
        self.client = aioredis.Redis(connection_pool=self._pool, retry=no_retry)
        # Raw replies for the stream reads: we parse [id, [field, value]] ourselves.
        for command in ("XRANGE", "XREAD", "XREVRANGE"):
            self.client.set_response_callback(command, _identity)
        self._hot_pool = aioredis.ConnectionPool.from_url(
            settings.url,
            max_connections=6,  # writer, control stream, fan-out subscription (+ slack)
            socket_connect_timeout=settings.connect_timeout,
            socket_timeout=None,
            protocol=2,
            retry=no_retry,
            client_name=f"streamcite-relay-hot:{name}"[:120].replace(" ", "_"),
        )
        self.writer = HotConnection(self._hot_pool)
        self.control = HotConnection(self._hot_pool)

    def pubsub(self) -> PubSub:
        """A fresh subscription on the hot pool (the fan-out loop's)."""
        return aioredis.Redis(connection_pool=self._hot_pool).pubsub()

    def unavailable(self, exc: BaseException, what: str) -> RedisUnavailable:
        # The exception's text names host:port at most; the URL (maybe with a password) is not used.
        return RedisUnavailable(
            f"Redis at {self.where} unavailable ({what}): {type(exc).__name__}: {exc}"
        )

    def outage_deadline(self) -> float | None:
        """During an outage already past ``unavailable_after``: one attempt, no retry window."""
        since = self.down_since
        if since is not None and time.monotonic() - since >= self.settings.unavailable_after:
            return time.monotonic()
        return None

    async def call(
        self, fn: Callable[[], Awaitable[Any]], *, what: str, deadline: float | None = None
    ) -> Any:
        """Run one Redis call, retrying transient failures with backoff until ``deadline``
        (default: ``unavailable_after`` from now), then raise :class:`RedisUnavailable`."""
        if deadline is None:
            deadline = time.monotonic() + self.settings.unavailable_after
        delay = 0.05
        while True:
            try:
                self.counters["round_trips"] += 1
                return await fn()
            except TRANSIENT as exc:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self.unavailable(exc, what) from None
                await asyncio.sleep(min(delay, remaining))
                delay = min(delay * 2, 0.5)

    async def aclose(self) -> None:
        await self.writer.release()
        await self.control.release()
        await self.client.aclose()
        await self._pool.aclose()
        await self._hot_pool.aclose()
