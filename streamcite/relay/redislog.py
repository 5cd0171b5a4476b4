"""Compatibility path: the Redis stream log now lives in :mod:`streamcite.relay.redis`."""

from __future__ import annotations

from streamcite.relay.redis import (
    RedisLogSettings,
    RedisStreamLog,
    RedisUnavailable,
    StreamLogConflict,
)

__all__ = ["RedisLogSettings", "RedisStreamLog", "RedisUnavailable", "StreamLogConflict"]
