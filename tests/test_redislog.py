"""The StreamLog contract of RedisStreamLog against a real redis-server on 127.0.0.1.

Two (or three) RedisStreamLog instances on one Redis stand for relay processes: the owner
writes, another instance reads, resumes, cancels and watches the owner's lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

try:
    from _redis_fixtures import (
        RedisServer,
        free_port,
        redis_prefix,
        redis_server,
        redis_server_factory,
    )
except ImportError:  # tests/ imported as a package
    from tests._redis_fixtures import (  # noqa: F401  (fixtures, used by name)
        RedisServer,
        free_port,
        redis_prefix,
        redis_server,
        redis_server_factory,
    )

from streamcite.core.errors import StreamciteError
from streamcite.relay.streamlog import LogEntry, StreamLog

pytestmark = pytest.mark.redis

GUARD = 15.0
"""Hang guard for any single wait in these tests (not a timing assertion)."""

LogFactory = Callable[..., Awaitable[Any]]


@pytest.fixture
async def make_log(redis_server: RedisServer, redis_prefix: str) -> AsyncIterator[LogFactory]:
    """``log = await make_log("A", lease_ms=..., url=...)``: a connected RedisStreamLog,
    closed after the test."""
    from streamcite.relay.redislog import RedisStreamLog

    logs: list[RedisStreamLog] = []

    async def make(instance_id: str, *, url: str | None = None, **kw: Any) -> RedisStreamLog:
        log = RedisStreamLog(
            url or redis_server.url, instance_id=instance_id, prefix=redis_prefix, **kw
        )
        logs.append(log)
        await log.connect()
        return log

    yield make
    for log in logs:
        await asyncio.wait_for(log.aclose(), GUARD)


async def collect_until(
    log: StreamLog, sid: str, after: int, stop: Callable[[LogEntry], bool], *, block: float = 0.5
) -> list[LogEntry]:
    """Read from ``after`` (resuming from the last seq seen) until ``stop(entry)``."""
    out: list[LogEntry] = []
    async with asyncio.timeout(GUARD):
        while True:
            for entry in await log.read(sid, after, block=block):
                assert entry.seq == after + 1, f"gap or duplicate: {after} then {entry.seq}"
                after = entry.seq
                out.append(entry)
                if stop(entry):
                    return out


async def eventually(check: Callable[[], Awaitable[bool]], what: str) -> None:
    async with asyncio.timeout(GUARD):
        while not await check():  # noqa: ASYNC110 (state in Redis: nothing to wait on here)
            await asyncio.sleep(0.05)


def test_satisfies_the_protocol() -> None:
    from streamcite.relay.redislog import RedisStreamLog

    log: StreamLog = RedisStreamLog("redis://127.0.0.1:1/0")  # no I/O until first use
    assert isinstance(log, RedisStreamLog)


async def test_seq_numbers_start_at_one_and_follow_call_order(make_log: LogFactory) -> None:
    a = await make_log("A")
    b = await make_log("B")
    for sid in ("s1", "s2", "s3"):
        await a.open_stream(sid, owner="relay-a")
    # Appends from three streams issued together share write round trips; each stream still
    # gets 1, 2, 3, ... in the order of the calls.
    calls = [(sid, f"{sid}:{i}".encode()) for i in range(60) for sid in ("s1", "s2", "s3")]
    seqs = await asyncio.gather(*(a.append(sid, p) for sid, p in calls))
    await a.flush()  # append returns once queued; other instances read what Redis has
    for sid in ("s1", "s2", "s3"):
        got = [s for (csid, _), s in zip(calls, seqs, strict=True) if csid == sid]
        assert got == list(range(1, 61))
        for reader in (a, b):  # owner (memory) and another instance (Redis)
            entries = await reader.read(sid, 0)
            assert [e.seq for e in entries] == list(range(1, 61))
            assert [e.payload for e in entries] == [f"{sid}:{i}".encode() for i in range(60)]
    st = await b.status("s2")
    assert st is not None
    assert (st.last_seq, st.finished, st.owner, st.owner_alive) == (60, False, "relay-a", True)
    assert a.stats()["write_batches"] < a.stats()["entries_written"]  # they were batched


async def test_payload_bytes_round_trip_exactly(make_log: LogFactory) -> None:
    a = await make_log("A")
    b = await make_log("B")
    await a.open_stream("bin", owner="a")
    payloads = [
        b"",
        '{"type":"token","text":"שלום «ciao» 😀"}'.encode(),
        bytes(range(256)),
        b"\r\n-0 p $5",
        b"x" * 100_000,
    ]
    for p in payloads:
        await a.append("bin", p)
    await a.flush()
    assert [e.payload for e in await b.read("bin", 0)] == payloads


async def test_resume_from_every_cut_point_is_exactly_once(make_log: LogFactory) -> None:
    a = await make_log("A")
    b = await make_log("B")
    await a.open_stream("r", owner="a")
    n = 40
    for i in range(n):
        await a.append("r", b"e%d" % i)
    await a.flush()
    for log in (a, b):
        for cut in range(0, n + 1):
            entries = await log.read("r", cut)
            assert [e.seq for e in entries] == list(range(cut + 1, n + 1))
            assert [e.payload for e in entries] == [b"e%d" % i for i in range(cut, n)]


async def test_live_follow_on_another_instance_with_reconnects(make_log: LogFactory) -> None:
    """A reader on B follows a live stream written on A, 'disconnecting' (dropping its read)
    now and then and resuming from the last seq it saw, and a third instance C joins late:
    both see every entry exactly once, in order."""
    a = await make_log("A")
    b = await make_log("B")
    c = await make_log("C")
    await a.open_stream("live", owner="a")
    n = 150

    async def writer() -> None:
        for i in range(n):
            await a.append("live", b"t%d" % i)
            if i % 10 == 0:
                await asyncio.sleep(0.01)
        await a.append("live", b"done")
        await a.finish("live")

    async def choppy_reader() -> list[LogEntry]:
        out: list[LogEntry] = []
        after = 0
        async with asyncio.timeout(GUARD):
            while not out or out[-1].payload != b"done":
                # Each read is a fresh "connection" resuming after the last seq seen; every
                # third one is abandoned mid-wait, as a dropped socket would be.
                if len(out) % 3 == 1:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(0.005):
                            await b.read("live", after, block=1.0)
                for e in await b.read("live", after, block=0.5):
                    assert e.seq == after + 1
                    after = e.seq
                    out.append(e)
        return out

    async def late_reader() -> list[LogEntry]:
        await asyncio.sleep(0.05)
        return await collect_until(c, "live", 0, lambda e: e.payload == b"done")

    _, got_b, got_c = await asyncio.gather(writer(), choppy_reader(), late_reader())
    expected = [b"t%d" % i for i in range(n)] + [b"done"]
    assert [e.payload for e in got_b] == expected
    assert [e.payload for e in got_c] == expected
    assert [e.seq for e in got_b] == list(range(1, n + 2))
    assert c.stats()["entries_followed"] > 0  # C really followed the live tail through XREAD


async def test_several_readers_at_different_positions_on_one_instance(
    make_log: LogFactory,
) -> None:
    a = await make_log("A")
    b = await make_log("B")
    await a.open_stream("multi", owner="a")
    for i in range(20):
        await a.append("multi", b"%d" % i)

    async def reader(after: int) -> list[int]:
        entries = await collect_until(b, "multi", after, lambda e: e.payload == b"end")
        return [e.seq for e in entries]

    tasks = [asyncio.create_task(reader(k)) for k in (0, 5, 19, 20)]
    await asyncio.sleep(0.05)
    for i in range(20, 40):
        await a.append("multi", b"%d" % i)
    await a.append("multi", b"end")
    results = await asyncio.gather(*tasks)
    for k, seqs in zip((0, 5, 19, 20), results, strict=True):
        assert seqs == list(range(k + 1, 42))


async def test_blocking_read_times_out_with_empty_list(make_log: LogFactory) -> None:
    a = await make_log("A")
    b = await make_log("B")
    await a.open_stream("quiet", owner="a")
    await a.append("quiet", b"one")
    async with asyncio.timeout(GUARD):
        assert await a.read("quiet", 1, block=0.2) == []  # owner, memory
        assert await b.read("quiet", 1, block=0.2) == []  # other instance, Redis
        assert await b.read("quiet", 1) == []  # no block: at once
        assert await b.read("never-opened", 0, block=0.2) == []
    assert await b.status("never-opened") is None


async def test_blocked_reader_wakes_on_append(make_log: LogFactory) -> None:
    a = await make_log("A")
    b = await make_log("B")
    await a.open_stream("wake", owner="a")
    readers = [asyncio.create_task(log.read("wake", 0, block=GUARD)) for log in (a, b)]
    await asyncio.sleep(0.1)
    await a.append("wake", b"hello")
    async with asyncio.timeout(GUARD):
        results = await asyncio.gather(*readers)
    # Had the wait not been woken, both reads would have returned [] at GUARD.
    assert results == [[LogEntry(1, b"hello")], [LogEntry(1, b"hello")]]


async def test_finish_then_expiry_after_retention(make_log: LogFactory) -> None:
    a = await make_log("A", retention=0.5)
    b = await make_log("B", retention=0.5)
    await a.open_stream("fin", owner="a")
    await a.append("fin", b"x")
    await a.append("fin", b"done")
    await a.finish("fin")
    for log in (a, b):
        st = await log.status("fin")
        assert st is not None and st.finished and st.last_seq == 2 and st.owner_alive
        # Nothing follows a finished stream: a blocking read returns at once.
        assert await asyncio.wait_for(log.read("fin", 2, block=GUARD), 1.0) == []
    with pytest.raises(StreamciteError):
        await a.append("fin", b"more")

    async def expired() -> bool:
        return await b.status("fin") is None

    await eventually(expired, "stream expired")
    assert await b.read("fin", 0) == []


async def test_opening_a_taken_id_is_a_conflict(make_log: LogFactory) -> None:
    from streamcite.relay.redislog import StreamLogConflict

    a = await make_log("A")
    b = await make_log("B")
    await a.open_stream("dup", owner="a")
    with pytest.raises(StreamLogConflict):
        await b.open_stream("dup", owner="b")
    with pytest.raises(StreamLogConflict):
        await a.open_stream("dup", owner="a")
    with pytest.raises(StreamLogConflict) as info:
        await b.append("dup", b"not mine")
    assert info.value.code == "stream_log_conflict"


async def test_lease_is_renewed_while_the_owner_lives(make_log: LogFactory) -> None:
    a = await make_log("A", lease_ms=300)
    b = await make_log("B", lease_ms=300)
    await a.open_stream("alive", owner="a")
    for _ in range(6):  # 6 x 0.2 s = four lease times: only renewals keep it
        await asyncio.sleep(0.2)
        st = await b.status("alive")
        assert st is not None and st.owner_alive


async def test_lease_lapse_reports_owner_not_alive(make_log: LogFactory) -> None:
    a = await make_log("A", lease_ms=300)
    b = await make_log("B", lease_ms=300)
    await a.open_stream("crash", owner="a")
    await a.append("crash", b"partial")
    assert (await b.status("crash")).owner_alive  # type: ignore[union-attr]
    # As a crash would: no lease release, the heartbeat just stops.
    await a.aclose(release_leases=False)

    async def lapsed() -> bool:
        st = await b.status("crash")
        assert st is not None  # the entries stay readable for the partial answer
        return not st.owner_alive

    await eventually(lapsed, "lease lapsed")
    st = await b.status("crash")
    assert st is not None and not st.finished and st.last_seq == 1 and st.owner == "a"
    assert await b.read("crash", 0) == [LogEntry(1, b"partial")]


async def test_graceful_close_releases_leases_at_once(make_log: LogFactory) -> None:
    a = await make_log("A", lease_ms=60_000)
    b = await make_log("B", lease_ms=60_000)
    await a.open_stream("bye", owner="a")
    await a.aclose()
    st = await b.status("bye")
    assert st is not None and not st.owner_alive


async def test_cancel_is_routed_to_the_owner(make_log: LogFactory) -> None:
    a = await make_log("A")
    b = await make_log("B")
    c = await make_log("C")
    await a.open_stream("cx", owner="a")
    await c.open_stream("cy", owner="c")
    got: dict[str, list[str]] = {"A": [], "B": [], "C": []}
    arrived = asyncio.Event()

    async def on_a(sid: str) -> None:
        got["A"].append(sid)
        arrived.set()

    a.on_cancel(on_a)
    b.on_cancel(lambda sid: got["B"].append(sid))
    c.on_cancel(lambda sid: got["C"].append(sid))

    await b.request_cancel("cx")  # B → A through A's control stream
    await asyncio.wait_for(arrived.wait(), GUARD)
    await a.request_cancel("cy")  # A → C
    await c.request_cancel("cy")  # C → itself, directly

    async def c_got_two() -> bool:
        return len(got["C"]) == 2

    await eventually(c_got_two, "cancels reached C")
    await b.request_cancel("no-such-stream")  # unknown: a no-op
    await asyncio.sleep(0.2)
    assert got == {"A": ["cx"], "B": [], "C": ["cy", "cy"]}


async def test_maxlen_bounds_the_log_and_a_late_reader_sees_the_gap(
    make_log: LogFactory,
) -> None:
    a = await make_log("A", maxlen=100)
    b = await make_log("B", maxlen=100)
    await a.open_stream("big", owner="a")
    for i in range(0, 1000, 50):
        await asyncio.gather(*(a.append("big", b"%d" % j) for j in range(i, i + 50)))
    await a.flush()
    for log in (a, b):
        entries = await log.read("big", 0)
        seqs = [e.seq for e in entries]
        assert seqs[-1] == 1000 and seqs == list(range(seqs[0], 1001))
        assert 100 <= len(seqs) < 1000  # trimmed (approximately: MAXLEN ~), the gap is visible


async def test_unreachable_redis_is_a_clear_error_without_secrets() -> None:
    from streamcite.relay.redislog import RedisStreamLog, RedisUnavailable

    url = f"redis://:s3cret-pw@127.0.0.1:{free_port()}/0"
    log = RedisStreamLog(url, instance_id="lonely", unavailable_after=0.5)
    try:
        assert "s3cret" not in repr(log)
        with pytest.raises(RedisUnavailable) as info:
            await asyncio.wait_for(log.connect(), GUARD)
        err = info.value
        assert err.code == "redis_unavailable" and err.retryable
        assert isinstance(err, StreamciteError)
        assert "s3cret" not in str(err) and "s3cret" not in repr(err)
        assert "127.0.0.1" in str(err)
    finally:
        await log.aclose()


async def test_redis_down_mid_stream_is_a_clear_error_never_a_hang(
    redis_server_factory: Callable[[], RedisServer], make_log: LogFactory
) -> None:
    from streamcite.relay.redislog import RedisUnavailable

    server = redis_server_factory()
    a = await make_log("A", url=server.url, unavailable_after=0.5)
    b = await make_log("B", url=server.url, unavailable_after=0.5)
    await a.open_stream("down", owner="a")
    await a.append("down", b"before")
    await a.flush()
    assert await b.read("down", 0) == [LogEntry(1, b"before")]
    server.stop()
    assert await a.append("down", b"during") == 2  # queued: append does not wait for Redis
    async with asyncio.timeout(GUARD):
        with pytest.raises(RedisUnavailable) as info:
            while True:  # the write fails after unavailable_after; appends then raise
                await a.append("down", b"later")
                await asyncio.sleep(0.05)
        assert info.value.code == "redis_unavailable" and info.value.retryable
        # The owner's own readers still get the entries (to learn what happened) ...
        local = await a.read("down", 1)
        assert local[0] == LogEntry(2, b"during")
        assert [e.seq for e in local] == list(range(2, 2 + len(local)))
        assert {e.payload for e in local[1:]} == {b"later"}
        # ... other instances get the error.
        with pytest.raises(RedisUnavailable):
            await b.status("down")
        with pytest.raises(RedisUnavailable):
            await b.read("down", 1, block=0.2)
        with pytest.raises(RedisUnavailable):
            await a.finish("down")


@pytest.mark.parametrize("delivery", ["immediate", "after_write"])
async def test_redis_restart_mid_stream_recovers(
    redis_server_factory: Callable[[], RedisServer], make_log: LogFactory, delivery: str
) -> None:
    """A quick restart (no persistence: Redis comes back empty) within ``unavailable_after``:
    the owner's queued entries are written once Redis is back; the lease and metadata are
    re-created; a reader on another instance continues from where it was, without gap or
    duplicate."""
    server = redis_server_factory()
    a = await make_log(
        "A", url=server.url, unavailable_after=10.0, lease_ms=600, local_delivery=delivery
    )
    b = await make_log("B", url=server.url, unavailable_after=10.0, lease_ms=600)
    await a.open_stream("rs", owner="a")
    for i in range(5):
        await a.append("rs", b"%d" % i)
    await a.flush()
    assert len(await b.read("rs", 0)) == 5
    follower = asyncio.create_task(collect_until(b, "rs", 5, lambda e: e.payload == b"end"))
    await asyncio.sleep(0.1)
    server.stop()
    assert await a.append("rs", b"5") == 6  # queued
    await asyncio.sleep(0.3)
    if delivery == "after_write":
        # Readers, the owner's own included, see an entry only once Redis has it ...
        assert await a.read("rs", 5) == []
    else:
        # ... or the owner's readers see it at once, Redis is written behind.
        assert await a.read("rs", 5) == [LogEntry(6, b"5")]
    server.start()
    async with asyncio.timeout(GUARD):
        assert await a.read("rs", 5, block=GUARD) == [LogEntry(6, b"5")]
        for i in range(6, 10):
            await a.append("rs", b"%d" % i)
        await a.append("rs", b"end")
        got = await follower
    assert [e.seq for e in got] == list(range(6, 12))
    assert [e.payload for e in got] == [b"5", b"6", b"7", b"8", b"9", b"end"]

    async def owner_back() -> bool:
        st = await b.status("rs")
        return st is not None and st.owner_alive and st.owner == "a"

    await eventually(owner_back, "lease re-created")


async def test_close_leaves_no_task_behind(redis_server: RedisServer, redis_prefix: str) -> None:
    from streamcite.relay.redislog import RedisStreamLog

    before = asyncio.all_tasks()
    a = RedisStreamLog(redis_server.url, instance_id="A", prefix=redis_prefix)
    b = RedisStreamLog(redis_server.url, instance_id="B", prefix=redis_prefix)
    await a.open_stream("t", owner="a")
    await a.append("t", b"x")
    reader = asyncio.create_task(b.read("t", 1, block=0.3))
    await b.request_cancel("t")
    assert await reader == []
    t0 = time.monotonic()
    await asyncio.wait_for(asyncio.gather(a.aclose(), b.aclose()), GUARD)
    # Nothing was pending: close must not sit in the 2 s flush window nor in a block.
    assert time.monotonic() - t0 < 1.5
    await asyncio.sleep(0)
    assert asyncio.all_tasks() - before == set()
    with pytest.raises(StreamciteError):
        await a.read("t", 0)


async def test_a_reader_blocked_on_a_dead_owner_is_woken(make_log: LogFactory) -> None:
    """A reader waiting on a stream whose owner dies returns (empty) soon after the lease
    lapses, not when its long ``block`` ends, so the relay can report ``owner_lost``."""
    a = await make_log("A", lease_ms=300)
    b = await make_log("B", lease_ms=300)
    await a.open_stream("dead", owner="a")
    await a.append("dead", b"x")
    await a.flush()
    reader = asyncio.create_task(b.read("dead", 1, block=120))
    await asyncio.sleep(0.2)
    await a.aclose(release_leases=False)
    async with asyncio.timeout(GUARD):  # well under the 120 s block: only the lease watch
        assert await reader == []
    st = await b.status("dead")
    assert st is not None and not st.owner_alive
