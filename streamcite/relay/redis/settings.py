"""The settings of a :class:`~streamcite.relay.redis.RedisStreamLog`: one frozen, validated
value instead of a dozen constructor arguments, and the key layout they imply."""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import KW_ONLY, dataclass, field
from typing import Literal, get_args
from urllib.parse import urlsplit

__all__ = ["KeyLayout", "LocalDelivery", "RedisLogSettings", "describe_url"]

LocalDelivery = Literal["after_write", "immediate"]


def _default_instance_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


def describe_url(url: str) -> str:
    """``host:port/db`` of a Redis URL, never its credentials (for messages and logs)."""
    try:
        parts = urlsplit(url)
        if parts.scheme == "unix":
            return f"unix:{parts.path}"
        host = parts.hostname or "localhost"
        port = parts.port or 6379
        db = parts.path.lstrip("/") or "0"
        return f"{host}:{port}/{db}"
    except ValueError:
        return "<invalid redis url>"


@dataclass(frozen=True, slots=True)
class RedisLogSettings:
    """How one relay instance uses Redis for its stream logs.

    Every relay instance of a deployment uses the same ``url`` and ``prefix`` and its own
    ``instance_id``. Invalid values raise ``ValueError`` at construction.

    ``RedisLogSettings("redis://127.0.0.1:6379/0", local_delivery="immediate")``
    """

    url: str = field(repr=False)
    """``redis://[:password@]host:port/db`` (or ``rediss://``, ``unix://``). Never shown in a
    repr, a log or an error with its credentials (see :attr:`where`)."""
    _: KW_ONLY
    instance_id: str = field(default_factory=_default_instance_id)
    """This relay instance's name in leases and cancel routing (default: unique per process)."""
    maxlen: int = 10_000
    """Entries kept per stream (``XADD MAXLEN ~``; also the in-memory copy for local readers)."""
    retention: float = 300.0
    """Seconds a finished stream stays readable."""
    lease_ms: int = 5000
    """The owner's lease, renewed every ``lease_ms / 3``: when the owner dies, other instances
    see ``owner_alive=False`` at most ``lease_ms`` after its last renewal."""
    unavailable_after: float = 5.0
    """Seconds of failing Redis calls before :class:`RedisUnavailable`."""
    prefix: str = "streamcite:relay:"
    """Key prefix, to share one Redis database between deployments."""
    write_batch: int = 2000
    """Most entries per write round trip."""
    max_connections: int = 32
    """Size of the (blocking) connection pool for commands."""
    connect_timeout: float = 2.0
    """Seconds to open a connection."""
    command_timeout: float = 5.0
    """Seconds for one command's reply (a blocking read adds its block time)."""
    close_flush: float = 2.0
    """Seconds :meth:`~streamcite.relay.redis.RedisStreamLog.aclose` waits for queued writes
    to reach Redis before it stops (what is still queued then is lost with the process)."""
    local_delivery: LocalDelivery = "after_write"
    """When this instance's own readers see an entry. ``"after_write"`` (the default): once
    Redis has stored it — no client ever holds an event the shared log lacks, so a resume
    anywhere is exact and, if the owner crashes, the partial answer other instances report is
    exactly what its clients saw; it costs two or three event-loop turns per event, which is
    what dominates the added latency under load. ``"immediate"``: at ``append``, as with the
    in-memory log, Redis written behind (within one round trip): for deployments that keep
    clients on their owner; after an owner crash its clients may be a few events ahead."""

    def __post_init__(self) -> None:
        if self.local_delivery not in get_args(LocalDelivery):
            raise ValueError("local_delivery is 'after_write' or 'immediate'")
        if self.maxlen < 1 or self.retention <= 0 or self.lease_ms < 100:
            raise ValueError("maxlen >= 1, retention > 0, lease_ms >= 100")
        if self.unavailable_after < 0:
            raise ValueError("unavailable_after >= 0")
        if self.write_batch < 1 or self.max_connections < 1:
            raise ValueError("write_batch >= 1, max_connections >= 1")
        if self.connect_timeout <= 0 or self.command_timeout <= 0:
            raise ValueError("connect_timeout > 0, command_timeout > 0")
        if self.close_flush < 0:
            raise ValueError("close_flush >= 0")
        if not self.instance_id or not self.prefix:
            raise ValueError("instance_id and prefix must not be empty")

    @property
    def where(self) -> str:
        """Redis as ``host:port/db``, for messages and logs (no credentials)."""
        return describe_url(self.url)

    @property
    def running_ttl_ms(self) -> int:
        """TTL of a running stream's keys, pushed out by every lease renewal."""
        return int(self.retention * 1000) + self.lease_ms

    @property
    def retention_ms(self) -> int:
        return max(int(self.retention * 1000), 1)

    @property
    def local_retention(self) -> float:
        """Seconds a finished stream stays in memory for local readers (Redis keeps it for
        the full retention and serves later reads)."""
        return min(self.retention, 30.0)

    @property
    def keys(self) -> KeyLayout:
        return KeyLayout(self.prefix)


@dataclass(frozen=True, slots=True)
class KeyLayout:
    """Where things live in Redis (one plain server, not Cluster):

    =====================  ===================================================================
    ``{p}s:{stream_id}``   Redis Stream of the events; entry id ``{seq}-0``, field ``p``
    ``{p}m:{stream_id}``   hash: ``owner`` (label given to ``open_stream``), ``instance``,
                           ``state`` (``running`` / ``done``), ``last_seq`` once done
    ``{p}l:{stream_id}``   the owner's lease: value = owning instance id, ``PX lease_ms``
    ``{p}c:{instance}``    the instance's control stream: cancels routed to it
    ``{p}f:{instance}``    (pub/sub channel) the instance's write batches, for live followers
    ``{p}r:{stream_id}``   hash: instance id → when its reader heartbeat lapses (Redis time, ms)
    =====================  ===================================================================
    """

    prefix: str

    def stream(self, stream_id: str) -> str:
        return f"{self.prefix}s:{stream_id}"

    def meta(self, stream_id: str) -> str:
        return f"{self.prefix}m:{stream_id}"

    def lease(self, stream_id: str) -> str:
        return f"{self.prefix}l:{stream_id}"

    def control(self, instance: str) -> str:
        return f"{self.prefix}c:{instance}"

    def fanout(self, instance: str) -> str:
        return f"{self.prefix}f:{instance}"

    def readers(self, stream_id: str) -> str:
        return f"{self.prefix}r:{stream_id}"
