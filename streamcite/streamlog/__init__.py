"""The stream log: one stream's events in order, numbered, readable again after a
reconnect (:class:`StreamLog`, the protocol; the relay's in-memory and Redis logs
implement it). Below both the relay and the web adapters, which use it.

>>> from streamcite.streamlog import LogEntry, StreamLog, StreamStatus
"""

from __future__ import annotations

from streamcite.streamlog.protocol import LogEntry, StreamLog, StreamStatus

__all__ = ["LogEntry", "StreamLog", "StreamStatus"]
