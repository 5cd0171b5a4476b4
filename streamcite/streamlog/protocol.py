"""The per-stream event log (the *stream log*; logging is ``streamcite.logs``): what
makes ``resume`` exactly-once, for the relay and for the web adapters' resumable streams.

Every pipeline event of a stream is appended as its wire JSON and gets the next
sequence number (1, 2, 3, ... per stream). A client that reconnects reads every
entry after the last ``seq`` it saw, then follows the live rest. The in-memory log
(``streamcite.relay.memlog``) serves one relay process; ``streamcite.relay.redis``
keeps the same contract in Redis Streams so any relay instance can serve any client.

Ownership: the instance running the upstream request *owns* the stream. A cancel
sent to any instance reaches the owner through :meth:`StreamLog.request_cancel`;
when the owner dies, :meth:`StreamLog.status` reports ``owner_alive=False`` so
readers can end the stream with an ``owner_lost`` error instead of hanging.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["LogEntry", "StreamLog", "StreamStatus", "SupersedeLog", "SyncAppendLog"]


@dataclass(slots=True, frozen=True)
class LogEntry:
    seq: int
    payload: bytes
    """The event's wire JSON, without ``stream_id`` / ``seq`` (the relay adds them)."""


@dataclass(slots=True, frozen=True)
class StreamStatus:
    last_seq: int
    finished: bool
    """``done`` was appended: no entry will follow."""
    owner: str | None
    owner_alive: bool


class StreamLog(Protocol):
    async def open_stream(self, stream_id: str, *, owner: str) -> None:
        """Create the stream's log, owned (leased) by relay instance ``owner``."""
        ...

    async def append(self, stream_id: str, payload: bytes) -> int:
        """Append one event; return its sequence number (previous + 1, starting at 1)."""
        ...

    async def finish(self, stream_id: str) -> None:
        """The stream is over (``done`` appended): keep it for the retention time, then drop it."""
        ...

    async def read(
        self, stream_id: str, after_seq: int, *, block: float | None = None
    ) -> list[LogEntry]:
        """Entries with ``seq > after_seq``, in order. If there are none yet and ``block``
        is set, wait up to ``block`` seconds for the next ones; ``[]`` on timeout."""
        ...

    async def status(self, stream_id: str) -> StreamStatus | None:
        """None when the stream is unknown or expired."""
        ...

    async def request_cancel(self, stream_id: str) -> None:
        """Ask the owner (whichever instance) to cancel the upstream request."""
        ...

    def on_cancel(self, callback: Callable[[str], Awaitable[None] | None]) -> None:
        """Register the owner-side handler called with a stream id to cancel."""
        ...

    async def note_readers(self, stream_ids: Collection[str], *, ttl: float) -> None:
        """This instance has clients reading these streams: a heartbeat, valid ``ttl``
        seconds, that keeps their owners (on any instance) from abandoning them."""
        ...

    async def readers_elsewhere(self, stream_id: str) -> bool:
        """Whether an instance other than this one noted a reader of the stream within its
        ttl (a single-process log has no elsewhere: always False)."""
        ...

    async def aclose(self) -> None: ...


@runtime_checkable
class SyncAppendLog(Protocol):
    """A log that can append without awaiting (the in-memory one): no coroutine per event
    on the hot path. A log without it is appended to with ``await log.append``."""

    def append_nowait(self, stream_id: str, payload: bytes) -> int: ...


@runtime_checkable
class SupersedeLog(Protocol):
    """A log that can replace an entry a newer one made obsolete (the in-memory one and the
    Redis one).

    A stream that re-sends a changed citations list on every chunk would otherwise fill
    the log with sets nobody needs any more and push live tokens out of it."""

    def supersede_nowait(self, stream_id: str, seq: int, payload: bytes) -> None: ...
