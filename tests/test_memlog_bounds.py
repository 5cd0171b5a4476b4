"""MemoryStreamLog's own limits: they bound the memory it really holds (measured with
tracemalloc), and how many streams it keeps. The contract it shares with the Redis log is in
``test_streamlog_contract.py``.

``orjson.dumps`` results hold about 4 KiB however short they are: a log that keeps the
caller's ``bytes`` and counts ``len(payload)`` holds tens of times what it accounts.
"""

from __future__ import annotations

import gc
import tracemalloc

import orjson

from streamcite.core.events import TokenEvent
from streamcite.relay.memlog import MemoryStreamLog
from streamcite.relay.streamlog import LogEntry
from tests._wait import wait_until


def _token(i: int) -> bytes:
    return orjson.dumps(TokenEvent(index=0, text=f" w{i}", display=f" w{i}"))


def _held(fill: object) -> tuple[int, object]:
    """Bytes still allocated after ``fill()`` (its garbage collected), and its result."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        result = fill()  # type: ignore[operator]
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before, result
    finally:
        tracemalloc.stop()


async def test_ten_thousand_tokens_hold_about_what_is_accounted() -> None:
    log = MemoryStreamLog()
    await log.open_stream("s", owner="r")

    def fill() -> None:
        for i in range(10_000):
            log.append_nowait("s", _token(i))

    held, _ = _held(fill)
    accounted = log.stats()["bytes"]
    assert accounted >= sum(len(_token(i)) for i in range(10_000))
    assert held <= 1.5 * accounted, f"holds {held} bytes for {accounted} accounted"
    # Reads give the payloads back byte for byte.
    entries = await log.read("s", 9_997)
    assert entries == [LogEntry(i + 1, _token(i)) for i in range(9_997, 10_000)]
    await log.aclose()


async def test_async_append_copies_too() -> None:
    log = MemoryStreamLog()
    await log.open_stream("s", owner="r")
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(10_000):
            assert await log.append("s", _token(i)) == i + 1
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held <= 1.5 * log.stats()["bytes"], held
    await log.aclose()


async def test_total_limit_bounds_measured_memory_across_streams() -> None:
    limit = 2 * 1024 * 1024
    log = MemoryStreamLog(max_total_bytes=limit, max_bytes=32 * 1024 * 1024)
    for k in range(40):
        await log.open_stream(f"s{k}", owner="r")

    def fill() -> None:
        for i in range(120_000):  # about 8 MB of payloads over 40 streams
            log.append_nowait(f"s{i % 40}", _token(i))

    held, _ = _held(fill)
    assert log.stats()["bytes"] <= limit
    # The buffers may hold up to an eighth more than their content (bytearray growth).
    assert held <= 1.5 * limit, f"holds {held} bytes for a {limit}-byte limit"
    # Every stream still reads contiguously up to its newest entry, after a visible gap.
    for k in range(40):
        entries = await log.read(f"s{k}", 0)
        assert entries and entries[-1].seq == 3_000
        seqs = [e.seq for e in entries]
        assert seqs == list(range(seqs[0], 3_001))
    await log.aclose()


async def test_total_limit_drops_finished_streams_first() -> None:
    log = MemoryStreamLog(max_total_bytes=200_000)
    await log.open_stream("old", owner="r")
    for i in range(1_000):
        log.append_nowait("old", _token(i))
    await log.finish("old")
    await log.open_stream("live", owner="r")
    for i in range(3_000):
        log.append_nowait("live", _token(i))
    assert await log.status("old") is None  # dropped to make room
    entries = await log.read("live", 0)
    assert entries[-1].seq == 3_000
    assert log.stats()["bytes"] <= 200_000
    await log.aclose()


async def test_per_stream_limit_counts_held_bytes() -> None:
    log = MemoryStreamLog(max_bytes=50_000)
    await log.open_stream("s", owner="r")
    for i in range(5_000):
        log.append_nowait("s", _token(i))
    stats = log.stats()
    assert stats["bytes"] <= 50_000
    entries = await log.read("s", 0)
    assert stats["bytes"] == sum(len(e.payload) + 8 for e in entries)
    assert entries[-1].seq == 5_000
    await log.aclose()


async def test_max_streams_evicts_finished_streams_first_and_retention_drops_them() -> None:
    log = MemoryStreamLog(retention=0.05, max_streams=2)
    for sid in ("a", "b"):
        await log.open_stream(sid, owner="me")
        await log.append(sid, b"{}")
    await log.finish("a")
    await log.open_stream("c", owner="me")  # over max_streams: the finished "a" goes
    assert await log.status("a") is None and await log.status("b") is not None
    await log.finish("b")

    async def b_dropped() -> bool:
        return await log.status("b") is None

    await wait_until(b_dropped, timeout=5, what="retention over")
    assert len(log) == 1  # "c", live, is never dropped
    await log.aclose()
