"""The stream log's protocol, importable from here as before; it lives in
:mod:`streamcite.streamlog` (below both the relay and the web adapters)."""

from __future__ import annotations

from streamcite.streamlog.protocol import LogEntry, StreamLog, StreamStatus

__all__ = ["LogEntry", "StreamLog", "StreamStatus"]
