"""Helpers shared by the StreamLog tests (the contract suite and the Redis-only tests)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from streamcite.relay.streamlog import LogEntry, StreamLog
from tests._wait import wait_until

__all__ = ["GUARD", "collect_until", "until_blocked"]

GUARD = 15.0
"""Hang guard for any single wait in these tests (not a timing assertion)."""


async def collect_until(
    log: StreamLog, sid: str, after: int, stop: Callable[[LogEntry], bool], *, block: float = 0.5
) -> list[LogEntry]:
    """Read from ``after`` (resuming from the last seq seen) until ``stop(entry)``; every
    entry must follow the previous one (no gap, no duplicate)."""
    out: list[LogEntry] = []
    async with asyncio.timeout(GUARD):
        while True:
            for entry in await log.read(sid, after, block=block):
                assert entry.seq == after + 1, f"gap or duplicate: {after} then {entry.seq}"
                after = entry.seq
                out.append(entry)
                if stop(entry):
                    return out


async def until_blocked(log: StreamLog, count: int) -> None:
    """Until ``count`` reads are blocked in ``log`` (its ``stats()["waiters"]``, which both
    implementations report), so that a test wakes readers that really wait."""

    def blocked() -> bool:
        return int(log.stats()["waiters"]) >= count  # type: ignore[attr-defined]

    await wait_until(blocked, timeout=GUARD, what=f"{count} blocked reads")
