"""The Redis stream log's typed errors, and which Redis failures are worth a retry."""

from __future__ import annotations

from typing import Final

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from streamcite.core.errors import StreamciteError

__all__ = [
    "MAX_STREAM_ID",
    "TRANSIENT",
    "RedisUnavailable",
    "StreamLogConflict",
    "log_closed",
    "valid_stream_id",
]

TRANSIENT: Final = (RedisConnectionError, RedisTimeoutError, ConnectionError, OSError)
"""Errors after which the same command may succeed later (Redis restarting, loading, network).
``BusyLoadingError`` is a ``ConnectionError`` subclass in redis-py."""

MAX_STREAM_ID: Final = 200
"""Longer ids are treated as unknown: a client-supplied id never becomes a huge key."""


class RedisUnavailable(StreamciteError):
    """Redis could not be reached (or kept failing) for longer than the configured window."""

    code = "redis_unavailable"
    retryable = True


class StreamLogConflict(StreamciteError):
    """A log operation that contradicts the stream's state: the id is taken, the stream is
    not owned by this instance (or no longer is), or it is already finished."""

    code = "stream_log_conflict"


def valid_stream_id(stream_id: str) -> bool:
    """Whether ``stream_id`` may name a key (1 to :data:`MAX_STREAM_ID` characters)."""
    return 0 < len(stream_id) <= MAX_STREAM_ID


def log_closed() -> StreamciteError:
    """The error of any call after :meth:`RedisStreamLog.aclose`."""
    return StreamciteError("the Redis stream log is closed", code="log_closed")
