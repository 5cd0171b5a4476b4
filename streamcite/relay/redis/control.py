"""Control: cancels sent to any instance reach the owner of the stream.

Each instance follows its own control stream (``{p}c:{instance}``, durable unlike pub/sub)
with a blocking ``XREAD`` on a dedicated connection. A cancel for a stream owned here calls
the registered handlers directly; for a stream owned elsewhere it is appended to the lease
holder's control stream.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Final

from streamcite.relay.redis.connections import RedisConnections
from streamcite.relay.redis.errors import TRANSIENT, valid_stream_id
from streamcite.relay.redis.owned import OwnedStream
from streamcite.relay.redis.scripts import bulk
from streamcite.relay.redis.settings import RedisLogSettings

__all__ = ["CancelCallback", "CancelRouter"]

CancelCallback = Callable[[str], Awaitable[None] | None]

BLOCK_MS: Final = 1000
"""How long one ``XREAD`` of the control stream blocks."""
CONTROL_MAXLEN: Final = 1000
"""Cancels kept per control stream (``MAXLEN ~``)."""


class CancelRouter:
    """Routes cancels to the owner and calls the owner-side handlers."""

    def __init__(
        self,
        settings: RedisLogSettings,
        conns: RedisConnections,
        owned: dict[str, OwnedStream],
        log: Any,
    ) -> None:
        self._settings = settings
        self._keys = settings.keys
        self._conns = conns
        self._owned = owned
        self._log = log
        self._key = self._keys.control(settings.instance_id)
        self._last: bytes = b"0-0"
        """Id of the last control entry handled."""
        self._callbacks: list[CancelCallback] = []
        self.tasks: set[asyncio.Future[None]] = set()
        """Running coroutine handlers (stopped at close)."""

    def on_cancel(self, callback: CancelCallback) -> None:
        self._callbacks.append(callback)

    async def request_cancel(self, stream_id: str) -> None:
        """Call the handlers when this instance owns the stream, otherwise append the cancel
        to the owner's control stream. A no-op for unknown streams and for streams whose
        owner is gone (readers will see ``owner_alive=False``)."""
        if stream_id in self._owned:
            self.dispatch(stream_id)
            return
        if not valid_stream_id(stream_id):
            return
        client = self._conns.client
        lease_key = self._keys.lease(stream_id)
        holder = await self._conns.call(lambda: client.get(lease_key), what="cancel")
        if not holder:
            return
        target = self._keys.control(holder.decode())
        # The control stream of a dead instance must not live forever.
        ttl_ms = max(self._settings.running_ttl_ms, 60_000)

        async def send() -> None:
            async with client.pipeline(transaction=False) as pipe:
                pipe.xadd(
                    target, {"c": stream_id.encode()}, maxlen=CONTROL_MAXLEN, approximate=True
                )
                pipe.pexpire(target, ttl_ms)
                await pipe.execute()

        await self._conns.call(send, what="cancel")

    async def run(self, closed: Callable[[], bool]) -> None:
        """Follow this instance's control stream until ``closed()`` (or cancelled)."""
        delay = 0.05
        known = False
        while not closed():
            try:
                if not known:
                    await self._find_last()
                    known = True
                reply = await self._read()
            except asyncio.CancelledError:
                raise
            except TRANSIENT:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.5)
                continue
            except Exception as exc:  # never let the loop die; back off instead
                self._log.error("redislog_control_error", error=repr(exc))
                await asyncio.sleep(0.5)
                continue
            delay = 0.05
            for _key, raw_entries in reply or ():
                self._handle(raw_entries)

    async def _find_last(self) -> None:
        """Start after the newest entry: cancels sent before this instance started are old."""
        raw: Any = await self._conns.control.call(
            b"*6\r\n$9\r\nXREVRANGE\r\n"
            + bulk(self._key.encode())
            + b"$1\r\n+\r\n$1\r\n-\r\n$5\r\nCOUNT\r\n$1\r\n1\r\n",
            self._settings.command_timeout,
        )
        self._last = raw[0][0] if raw else b"0-0"

    async def _read(self) -> Any:
        packed = b"".join(
            [
                b"*8\r\n$5\r\nXREAD\r\n$5\r\nCOUNT\r\n$3\r\n100\r\n$5\r\nBLOCK\r\n",
                bulk(str(BLOCK_MS).encode()),
                b"$7\r\nSTREAMS\r\n",
                bulk(self._key.encode()),
                bulk(self._last),
            ]
        )
        self._conns.counters["round_trips"] += 1
        return await self._conns.control.call(
            packed, BLOCK_MS / 1000 + self._settings.command_timeout
        )

    def _handle(self, raw_entries: Any) -> None:
        for entry_id, fields in raw_entries:
            self._last = entry_id
            for i in range(0, len(fields) - 1, 2):
                if fields[i] == b"c":
                    self.dispatch(fields[i + 1].decode(errors="replace"))

    def dispatch(self, stream_id: str) -> None:
        """Call every handler for a live stream owned here (others are ignored)."""
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
                self.tasks.add(task)
                task.add_done_callback(self._done)

    def _done(self, task: asyncio.Future[None]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._log.error("redislog_cancel_callback_failed", error=repr(task.exception()))
