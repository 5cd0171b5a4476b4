"""What RedisStreamLog does beyond the StreamLog contract, against a real redis-server on
127.0.0.1: several instances (relay processes) on one Redis — ownership leases, cancel routing
between three instances, batched writes, Redis down or restarting, close.

The contract both logs keep (seq, reads, follow, bounds, finish, cancel, close) is in
``test_streamlog_contract.py``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from streamcite.core.errors import StreamciteError
from streamcite.relay.streamlog import LogEntry
from tests._streamlog_helpers import GUARD, collect_until, until_blocked
from tests._wait import wait_until

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

pytestmark = pytest.mark.redis

LogFactory = Callable[..., Awaitable[Any]]


@pytest.fixture
async def make_log(redis_server: RedisServer, redis_prefix: str) -> AsyncIterator[LogFactory]:
    """``log = await make_log("A", lease_ms=..., url=...)``: a connected RedisStreamLog,
    closed after the test. It uses the keyword constructor (``RedisStreamLog(url, **fields)``)
    through the old import path, both kept for existing callers."""
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


async def test_appends_from_several_streams_share_write_round_trips(
    make_log: LogFactory,
) -> None:
    a = await make_log("A")
    b = await make_log("B")
    for sid in ("s1", "s2", "s3"):
        await a.open_stream(sid, owner="relay-a")
    calls = [(sid, f"{sid}:{i}".encode()) for i in range(60) for sid in ("s1", "s2", "s3")]
    await asyncio.gather(*(a.append(sid, p) for sid, p in calls))
    await a.flush()
    assert a.stats()["entries_written"] == 180
    assert a.stats()["write_batches"] < a.stats()["entries_written"]  # they were batched
    assert [e.seq for e in await b.read("s3", 0)] == list(range(1, 61))


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
    # A 1.5 s lease, renewed every 0.5 s: a loaded machine's loop may lag a few hundred
    # ms (a 0.3 s lease then lapsed between two renewals: no renewal bug, only load).
    a = await make_log("A", lease_ms=1500)
    b = await make_log("B", lease_ms=1500)
    await a.open_stream("alive", owner="a")
    for _ in range(6):  # 6 x 0.5 s = two lease times: only renewals keep it
        await asyncio.sleep(0.5)
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

    await wait_until(lapsed, timeout=GUARD, interval=0.05, what="lease lapsed")
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

    await wait_until(c_got_two, timeout=GUARD, interval=0.05, what="cancels reached C")
    await b.request_cancel("no-such-stream")  # unknown: a no-op
    await asyncio.sleep(0.2)
    assert got == {"A": ["cx"], "B": [], "C": ["cy", "cy"]}


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
    await until_blocked(b, 1)
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

    await wait_until(owner_back, timeout=GUARD, interval=0.05, what="lease re-created")


async def test_close_leaves_no_task_behind(redis_server: RedisServer, redis_prefix: str) -> None:
    """Close with every background part busy: a remote reader blocked in a long read (so a
    fan-out subscription), a cancel routed through the control stream whose handler hangs.
    Close wakes the reader at once, cancels the handler, stops every task: well within the
    flush window (set to 60 s here) and the reader's block (120 s)."""
    from streamcite.relay.redis import RedisLogSettings, RedisStreamLog

    before = asyncio.all_tasks()

    def settings(name: str) -> RedisLogSettings:
        return RedisLogSettings(
            redis_server.url, instance_id=name, prefix=redis_prefix, close_flush=60.0
        )

    a, b = RedisStreamLog(settings("A")), RedisStreamLog(settings("B"))
    handler_started = asyncio.Event()

    async def hanging_handler(sid: str) -> None:
        handler_started.set()
        await asyncio.Event().wait()  # never returns: close must cancel it

    a.on_cancel(hanging_handler)
    await a.open_stream("t", owner="a")
    await a.append("t", b"x")
    await a.flush()
    reader = asyncio.create_task(b.read("t", 1, block=120))

    await until_blocked(b, 1)  # B follows the stream, its reader waits
    await b.request_cancel("t")  # B → A's control stream → A's handler, which hangs
    await asyncio.wait_for(handler_started.wait(), GUARD)
    assert not reader.done()  # still blocked: nothing was appended
    t0 = time.monotonic()
    await asyncio.wait_for(asyncio.gather(a.aclose(), b.aclose()), GUARD)
    # Nothing was pending: close must not sit in the 60 s flush window nor in a block
    # (a bound far from both, and far above what a loaded machine takes: about 0.1 s).
    assert time.monotonic() - t0 < 10.0
    # The reader was woken by close, not by its 120 s block ending.
    assert await asyncio.wait_for(reader, 1.0) == []
    await asyncio.sleep(0)
    assert asyncio.all_tasks() - before == set()  # the handler's task included
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
    await until_blocked(b, 1)
    await a.aclose(release_leases=False)
    async with asyncio.timeout(GUARD):  # well under the 120 s block: only the lease watch
        assert await reader == []
    st = await b.status("dead")
    assert st is not None and not st.owner_alive
