"""Ownership in Redis: the leases of the streams this instance owns, renewed by one heartbeat,
and the watch on the owners of the streams it follows.

The instance running a stream's upstream request holds its lease (``SET NX PX lease_ms``).
One heartbeat task renews every lease of the instance in one script call per 300 streams
every ``lease_ms / 3``, re-creating leases and metadata a restarted Redis lost. When an
owner dies its leases lapse, and the heartbeat of every instance following its streams wakes
their readers, who then see ``owner_alive=False`` and end the stream with ``owner_lost``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, Final

from streamcite.relay.redis.connections import RedisConnections
from streamcite.relay.redis.errors import TRANSIENT
from streamcite.relay.redis.follow import FollowedStream
from streamcite.relay.redis.owned import OwnedStream
from streamcite.relay.redis.scripts import RELEASE, RENEW, WATCH
from streamcite.relay.redis.settings import RedisLogSettings

__all__ = ["LeaseKeeper"]

RENEW_CHUNK: Final = 300
"""Streams per renewal script call (3 keys each)."""
WATCH_CHUNK: Final = 500
"""Followed streams per watch script call (2 keys each)."""


class LeaseKeeper:
    """Renews this instance's leases and watches the owners of the streams it follows."""

    def __init__(
        self,
        settings: RedisLogSettings,
        conns: RedisConnections,
        owned: dict[str, OwnedStream],
        followers: dict[str, FollowedStream],
        log: Any,
    ) -> None:
        self._settings = settings
        self._conns = conns
        self._owned = owned
        self._followers = followers
        self._log = log
        self.needs_renew = False
        """A renewal failed (or a write hit an outage): Redis may have restarted empty, so
        leases and metadata are re-created before the next write and sooner by the heartbeat."""

    async def run(self, closed: Callable[[], bool], housekeeping: Callable[[], None]) -> None:
        """The heartbeat: renew, watch, then ``housekeeping()``, every ``lease_ms / 3``
        (every 0.2 s at most while a renewal is due)."""
        interval = self._settings.lease_ms / 3000
        while not closed():
            await asyncio.sleep(interval if not self.needs_renew else min(interval, 0.2))
            try:
                await self.renew(raise_errors=False)
                await self.watch_followed()
            except Exception as exc:  # never let the heartbeat die
                self._log.error("redislog_heartbeat_error", error=repr(exc))
            housekeeping()

    async def renew(self, *, raise_errors: bool) -> None:
        """Renew (or re-take) the lease of every live owned stream; a stream whose lease
        another instance holds is marked ``lost``. Transient errors set :attr:`needs_renew`
        and are raised only with ``raise_errors``."""
        live = [o for o in self._owned.values() if o.renewable]
        settings = self._settings
        try:
            for i in range(0, len(live), RENEW_CHUNK):
                chunk = live[i : i + RENEW_CHUNK]
                keys: list[str] = []
                for o in chunk:
                    keys += (o.lease_key, o.meta_key, o.key)
                args = [settings.instance_id, settings.lease_ms, settings.running_ttl_ms]
                self._conns.counters["round_trips"] += 1
                result = await RENEW(self._conns.client, keys, [*args, *(o.owner for o in chunk)])
                flags = result.decode() if isinstance(result, bytes) else str(result)
                for o, flag in zip(chunk, flags, strict=False):
                    if flag == "2":
                        self._log.warning("redislog_lease_reacquired", stream_id=o.stream_id)
                    elif flag == "0":
                        o.lost = True
                        self._log.error("redislog_lease_lost", stream_id=o.stream_id)
            self.needs_renew = False
        except TRANSIENT as exc:
            self.needs_renew = True
            if raise_errors:
                raise
            self._log.debug("redislog_heartbeat_failed", error=f"{type(exc).__name__}")

    async def watch_followed(self) -> None:
        """Wake the readers of followed streams whose owner's lease lapsed, so that they look
        at ``status`` now rather than when their ``block`` ends: a dead owner is noticed
        within ``lease_ms`` plus one heartbeat interval. Finished streams whose finish notice
        was missed (say, during a resubscription) are marked and their readers woken."""
        waited = [f for f in self._followers.values() if f.waiters]
        for i in range(0, len(waited), WATCH_CHUNK):
            chunk = waited[i : i + WATCH_CHUNK]
            keys: list[str] = []
            for f in chunk:
                keys += (f.lease_key, f.meta_key)
            try:
                self._conns.counters["round_trips"] += 1
                result = await WATCH(self._conns.client, keys, [])
            except TRANSIENT:
                return  # the fan-out loop and the readers report the outage
            flags = result.decode() if isinstance(result, bytes) else str(result)
            for f, flag in zip(chunk, flags, strict=False):
                if flag == "2":
                    f.finished = True
                if flag != "1":
                    f.waiters.wake()

    async def release_all(self, limit: float = 1.0) -> None:
        """Give up the leases of the live owned streams at once (a clean shutdown), so readers
        elsewhere see ``owner_alive=False`` now instead of after the lease time. Best effort
        within ``limit`` seconds: the leases lapse anyway."""
        keys = [o.lease_key for o in self._owned.values() if not o.finished]
        if keys:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(limit):
                    await RELEASE(self._conns.client, keys, [self._settings.instance_id])
