"""Per-client stream quotas: how many upstream streams one client may run at once.

A *client* is an :class:`~streamcite.relay.guard.Identity`'s ``quota_key``: one
principal (token) at one remote address, or the address alone without tokens. The
count covers every stream the client started that still runs upstream — also after
its connection closed, while the stream waits out ``resume_grace`` — on all
transports (``/ws``, ``/sse``, ``POST /api/chat``). Counts are per relay instance.
"""

from __future__ import annotations

__all__ = ["QUOTA_CODE", "StreamQuotas"]

QUOTA_CODE = "quota_exceeded"


class StreamQuotas:
    """Counters of running streams per client key, each capped at ``limit``."""

    __slots__ = ("_counts", "limit")

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("limit must be >= 1")
        self.limit = limit
        self._counts: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"<StreamQuotas limit={self.limit} clients={len(self._counts)}>"

    def acquire(self, key: str) -> bool:
        """Count one more stream for ``key``; False (nothing counted) when at the limit."""
        n = self._counts.get(key, 0)
        if n >= self.limit:
            return False
        self._counts[key] = n + 1
        return True

    def release(self, key: str) -> None:
        """One stream of ``key`` ended (releasing more than acquired is ignored)."""
        n = self._counts.get(key, 0) - 1
        if n > 0:
            self._counts[key] = n
        else:
            self._counts.pop(key, None)

    def running(self, key: str) -> int:
        return self._counts.get(key, 0)

    def message(self) -> str:
        return f"at most {self.limit} streams at once per client; wait for one to finish"
