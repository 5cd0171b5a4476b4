"""The StreamLog contract, run against every implementation: ``MemoryStreamLog`` and
``RedisStreamLog`` (a real redis-server on 127.0.0.1, started by the tests).

For Redis the owner (``A``) writes and reads from memory, and a second instance (``B``) reads
the same streams from Redis, as a relay process serving a client that reconnected elsewhere
would; a third one (``C``) joins late where a test asks for one. For memory all three are the
same log. The Redis half is marked ``redis`` (``make test-fast`` leaves it out).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from streamcite.core.errors import StreamciteError
from streamcite.relay.memlog import MemoryStreamLog
from streamcite.relay.producer import SUPERSEDED
from streamcite.relay.streamlog import LogEntry, StreamLog
from tests._redis_fixtures import (  # noqa: F401  (fixtures, requested by name)
    redis_prefix,
    redis_server,
    redis_server_factory,
)
from tests._streamlog_helpers import GUARD, collect_until, until_blocked
from tests._wait import wait_until


@dataclass
class Logs:
    """One deployment of an implementation: the owner and the instances that read."""

    kind: str
    owner: Any
    other: Any
    """Another instance (Redis) or the owner again (memory)."""
    spawn: Callable[[], Awaitable[Any]]
    """One more instance (Redis) or the owner again (memory)."""
    conflict: type[Exception]
    """What a contradicting call (open a taken id, append after finish) raises."""
    closed: type[Exception]
    """What opening a stream raises once the log is closed."""
    made: list[Any] = field(default_factory=list)

    @property
    def readers(self) -> list[Any]:
        return [self.owner] if self.other is self.owner else [self.owner, self.other]

    async def flush(self) -> None:
        """Until every append is readable everywhere (Redis writes behind ``append``)."""
        flush = getattr(self.owner, "flush", None)
        if flush is not None:
            await flush()


Make = Callable[..., Awaitable[Logs]]


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
async def make_logs(request: pytest.FixtureRequest) -> AsyncIterator[Make]:
    """``logs = await make_logs(retention=..., max_entries=...)``; closed after the test.
    ``max_entries`` is ``MemoryStreamLog(max_entries=)`` / ``RedisStreamLog(maxlen=)``."""
    made: list[Any] = []

    if request.param == "memory":

        async def make(**kw: Any) -> Logs:
            opts = {k: v for k, v in kw.items() if v is not None}
            log = MemoryStreamLog(**opts)
            made.append(log)

            async def same() -> Any:
                return log

            return Logs("memory", log, log, same, ValueError, RuntimeError)

    else:
        server = request.getfixturevalue("redis_server")
        prefix = request.getfixturevalue("redis_prefix")
        from streamcite.relay.redis import RedisLogSettings, RedisStreamLog, StreamLogConflict

        async def make(**kw: Any) -> Logs:
            opts: dict[str, Any] = {}
            if kw.get("retention") is not None:
                opts["retention"] = kw["retention"]
            if kw.get("max_entries") is not None:
                opts["maxlen"] = kw["max_entries"]
            # max_bytes: the memory log's byte bound; Redis bounds by count only.
            names = iter("ABCDEFGH")

            async def spawn() -> Any:
                settings = RedisLogSettings(
                    server.url, instance_id=next(names), prefix=prefix, **opts
                )
                log = RedisStreamLog(settings)
                made.append(log)
                await log.connect()
                return log

            owner = await spawn()
            other = await spawn()
            return Logs("redis", owner, other, spawn, StreamLogConflict, StreamciteError)

    yield make
    for log in made:
        await asyncio.wait_for(log.aclose(), GUARD)


def _implementations() -> list[Any]:
    impls: list[Any] = [MemoryStreamLog]
    try:
        from streamcite.relay.redis import RedisStreamLog
    except ImportError:  # the redis extra is not installed
        return impls
    return [*impls, RedisStreamLog]


@pytest.mark.parametrize("impl", _implementations(), ids=lambda c: c.__name__)
def test_implements_every_member_of_the_protocol(impl: type) -> None:
    """Each StreamLog method exists with the protocol's parameters (names, kinds), is a
    coroutine function exactly where the protocol's is, and adds only optional ones."""
    members = [n for n, v in vars(StreamLog).items() if inspect.isfunction(v) and n[0] != "_"]
    assert {"open_stream", "append", "read", "finish", "status", "request_cancel"} <= set(members)
    for name in [*members, "aclose"]:
        proto, mine = getattr(StreamLog, name), getattr(impl, name, None)
        assert callable(mine), f"{impl.__name__}.{name} is missing"
        assert inspect.iscoroutinefunction(mine) == inspect.iscoroutinefunction(proto), name
        want = inspect.signature(proto).parameters
        have = inspect.signature(mine).parameters
        for pname, p in want.items():
            assert pname in have and have[pname].kind == p.kind, f"{name}({pname})"
        for pname, p in have.items():
            assert pname in want or p.default is not p.empty, f"{name}: extra {pname} required"


async def test_seq_starts_at_one_per_stream_and_follows_call_order(make_logs: Make) -> None:
    logs = await make_logs()
    a = logs.owner
    for sid in ("s1", "s2", "s3"):
        await a.open_stream(sid, owner="relay-a")
    # Appends from three streams issued together (for Redis: sharing write round trips); each
    # stream still gets 1, 2, 3, ... in the order of the calls.
    calls = [(sid, f"{sid}:{i}".encode()) for i in range(60) for sid in ("s1", "s2", "s3")]
    seqs = await asyncio.gather(*(a.append(sid, p) for sid, p in calls))
    await logs.flush()
    for sid in ("s1", "s2", "s3"):
        got = [s for (csid, _), s in zip(calls, seqs, strict=True) if csid == sid]
        assert got == list(range(1, 61))
        for reader in logs.readers:  # owner (memory) and another instance (Redis)
            entries = await reader.read(sid, 0)
            assert [e.seq for e in entries] == list(range(1, 61))
            assert [e.payload for e in entries] == [f"{sid}:{i}".encode() for i in range(60)]
            assert [e.seq for e in await reader.read(sid, 57)] == [58, 59, 60]
            assert await reader.read(sid, 60) == []
    for reader in logs.readers:
        st = await reader.status("s2")
        assert st is not None
        assert (st.last_seq, st.finished, st.owner, st.owner_alive) == (60, False, "relay-a", True)


async def test_payload_bytes_round_trip_exactly(make_logs: Make) -> None:
    logs = await make_logs()
    await logs.owner.open_stream("bin", owner="a")
    payloads = [
        b"",
        '{"type":"token","text":"שלום «ciao» 😀"}'.encode(),
        bytes(range(256)),
        b"\r\n-0 p $5",
        b"x" * 100_000,
    ]
    for p in payloads:
        await logs.owner.append("bin", p)
    await logs.flush()
    for reader in logs.readers:
        assert [e.payload for e in await reader.read("bin", 0)] == payloads


@pytest.mark.parametrize("count", [1, 7, 40])
async def test_read_after_any_seq_is_exactly_the_rest(make_logs: Make, count: int) -> None:
    """A resume from any cut point (and from past the end) gets every later entry once."""
    logs = await make_logs()
    await logs.owner.open_stream("r", owner="a")
    for i in range(count):
        await logs.owner.append("r", b"e%d" % i)
    await logs.flush()
    for log in logs.readers:
        for cut in range(0, count + 6):
            entries = await log.read("r", cut)
            assert [e.seq for e in entries] == list(range(cut + 1, count + 1))
            assert [e.payload for e in entries] == [b"e%d" % i for i in range(cut, count)]


async def test_live_follow_with_reconnects_and_a_late_reader(make_logs: Make) -> None:
    """A reader follows a live stream, 'disconnecting' (dropping its read) now and then and
    resuming from the last seq it saw, and another reader joins late: both see every entry
    exactly once, in order."""
    logs = await make_logs()
    a, b = logs.owner, logs.other
    c = await logs.spawn()
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
    if logs.kind == "redis":
        assert c.stats()["entries_followed"] > 0  # C really followed the live tail


async def test_several_readers_at_different_positions(make_logs: Make) -> None:
    logs = await make_logs()
    a, b = logs.owner, logs.other
    await a.open_stream("multi", owner="a")
    for i in range(20):
        await a.append("multi", b"%d" % i)

    async def reader(after: int) -> list[int]:
        entries = await collect_until(b, "multi", after, lambda e: e.payload == b"end")
        return [e.seq for e in entries]

    tasks = [asyncio.create_task(reader(k)) for k in (0, 5, 19, 20)]
    await until_blocked(b, 4)  # all caught up, waiting for more
    for i in range(20, 40):
        await a.append("multi", b"%d" % i)
    await a.append("multi", b"end")
    results = await asyncio.gather(*tasks)
    for k, seqs in zip((0, 5, 19, 20), results, strict=True):
        assert seqs == list(range(k + 1, 42))


async def test_blocking_read_times_out_with_an_empty_list(make_logs: Make) -> None:
    logs = await make_logs()
    a, b = logs.owner, logs.other
    await a.open_stream("quiet", owner="a")
    await a.append("quiet", b"one")
    await logs.flush()
    async with asyncio.timeout(GUARD):
        assert await a.read("quiet", 1, block=0.2) == []  # owner, memory
        assert await b.read("quiet", 1, block=0.2) == []  # other instance, Redis
        assert await b.read("quiet", 1) == []  # no block: at once
        assert await b.read("never-opened", 0, block=0.2) == []
        assert await b.read("never-opened", 0) == []
    assert await b.status("never-opened") is None
    if logs.kind == "memory":
        assert a.stats()["waiters"] == 0  # timed-out reads leave nothing behind


async def test_a_blocked_reader_wakes_on_append(make_logs: Make) -> None:
    logs = await make_logs()
    await logs.owner.open_stream("wake", owner="a")
    readers = [asyncio.create_task(log.read("wake", 0, block=GUARD)) for log in logs.readers]
    for log in logs.readers:
        await until_blocked(log, 1)
    assert not any(r.done() for r in readers)
    await logs.owner.append("wake", b"hello")
    async with asyncio.timeout(GUARD):
        results = await asyncio.gather(*readers)
    # Had the wait not been woken, every read would have returned [] at GUARD.
    assert results == [[LogEntry(1, b"hello")]] * len(readers)


async def test_finish_wakes_a_blocked_reader_and_nothing_follows(make_logs: Make) -> None:
    logs = await make_logs(retention=0.5)
    a = logs.owner
    await a.open_stream("fin", owner="a")
    await a.append("fin", b"x")
    await logs.flush()
    # A reader that got "x" waits for more, then "done" comes: it is woken by the append ...
    got = [asyncio.create_task(log.read("fin", 1, block=GUARD)) for log in logs.readers]
    for log in logs.readers:
        await until_blocked(log, 1)
    await a.append("fin", b"done")
    async with asyncio.timeout(GUARD):
        assert [await r for r in got] == [[LogEntry(2, b"done")]] * len(got)
    # ... and one already past the end is woken by finish alone, with nothing new.
    blocked = [asyncio.create_task(log.read("fin", 2, block=GUARD)) for log in logs.readers]
    for log in logs.readers:
        await until_blocked(log, 1)
    assert not any(r.done() for r in blocked)
    await a.finish("fin")
    # Within 1 s, under the Redis log's heartbeat interval (1.7 s): finish itself woke them.
    async with asyncio.timeout(1.0):
        assert [await r for r in blocked] == [[]] * len(blocked)
    for log in logs.readers:
        st = await log.status("fin")
        assert st is not None and st.finished and st.last_seq == 2 and st.owner_alive
        # Nothing follows a finished stream: a blocking read returns at once.
        assert await asyncio.wait_for(log.read("fin", 2, block=GUARD), 1.0) == []
    with pytest.raises(logs.conflict):
        await a.append("fin", b"more")
    await a.finish("fin")  # idempotent


async def test_a_finished_stream_expires_after_its_retention(make_logs: Make) -> None:
    logs = await make_logs(retention=0.5)
    a, b = logs.owner, logs.other
    await a.open_stream("fin", owner="a")
    await a.append("fin", b"x")
    await a.finish("fin")

    async def expired() -> bool:
        return await b.status("fin") is None

    await wait_until(expired, timeout=GUARD, interval=0.05, what="stream expired")
    assert await b.read("fin", 0) == []
    # A live stream does not expire, however long it is quiet.
    await a.open_stream("live", owner="a")
    await a.append("live", b"y")

    async def other_expired() -> bool:
        return await b.status("fin") is None and await a.status("fin") is None

    await wait_until(other_expired, timeout=GUARD, interval=0.05, what="expired on every instance")
    assert (await b.status("live")) is not None


async def test_opening_a_taken_id_is_a_conflict(make_logs: Make) -> None:
    logs = await make_logs()
    a = logs.owner
    await a.open_stream("dup", owner="a")
    with pytest.raises(logs.conflict):
        await a.open_stream("dup", owner="a")
    await a.finish("dup")
    with pytest.raises(logs.conflict):  # retained: still taken
        await a.open_stream("dup", owner="a")
    with pytest.raises((KeyError, logs.conflict)):  # appending needs an open stream
        await a.append("never-opened", b"x")


async def test_bounds_keep_the_newest_entries_and_a_late_reader_sees_the_gap(
    make_logs: Make,
) -> None:
    logs = await make_logs(max_entries=100)
    a = logs.owner
    await a.open_stream("big", owner="a")
    for i in range(0, 1000, 50):
        await asyncio.gather(*(a.append("big", b"%d" % j) for j in range(i, i + 50)))
    await logs.flush()
    for log in logs.readers:
        entries = await log.read("big", 0)
        seqs = [e.seq for e in entries]
        assert seqs[-1] == 1000 and seqs == list(range(seqs[0], 1001))
        assert seqs[0] > 1  # the reader can tell it missed events
        assert [e.payload for e in entries] == [b"%d" % (s - 1) for s in seqs]
        if logs.kind == "redis":
            assert 100 <= len(seqs) < 1000  # trimmed approximately (MAXLEN ~)
        else:
            assert len(seqs) <= 100  # an upper bound


def _citations(round_: int, size: int = 20_000) -> bytes:
    return b'{"type":"citations","round":%d,"pad":"%s"}' % (round_, b"x" * size)


async def _supersede_rounds(
    a: Any,
    sid: str,
    rounds: int,
    base: int = 0,
    settle: Callable[[], Awaitable[None]] | None = None,
) -> list[bytes]:
    """``rounds`` of (token, changed citations set), each set superseding the previous one
    as the relay's producer does; the payloads every reader must then see, in seq order
    (``base``: entries the stream held before). ``settle``, when given, is awaited before
    every other replacement (Redis: the set is then written, and followed, before it is
    replaced; otherwise it is replaced while still queued)."""
    expected: list[bytes] = []
    prev = 0
    for r in range(rounds):
        await a.append(sid, b'{"type":"token","text":"t%d"}' % r)
        expected.append(b'{"type":"token","text":"t%d"}' % r)
        seq = await a.append(sid, _citations(r))
        expected.append(_citations(r))
        if prev:
            if settle is not None and r % 2:
                await settle()
            a.supersede_nowait(sid, prev, SUPERSEDED % seq)
            expected[prev - 1 - base] = SUPERSEDED % seq
        prev = seq
    return expected


async def test_a_superseded_entry_reads_as_its_replacement_everywhere(make_logs: Make) -> None:
    """``supersede_nowait(sid, seq, payload)`` (what the relay does to a citations set a newer
    one replaced): every reader, on every instance and from any cut, sees ``payload`` in place
    of the entry, seqs contiguous — a reader that already followed the stream included."""
    logs = await make_logs()
    a = logs.owner
    await a.open_stream("sup", owner="a")
    await a.append("sup", b"first")
    await logs.flush()
    for reader in logs.readers:
        assert [e.seq for e in await reader.read("sup", 0)] == [1]
        # A blocked read past the end: on Redis, B now follows the live tail (fan-out), so
        # it holds the sets as first sent and must take the replacements from the channel.
        assert await reader.read("sup", 1, block=0.1) == []
    expected = [b"first", *await _supersede_rounds(a, "sup", 30, base=1, settle=logs.flush)]
    await logs.flush()

    async def followed() -> bool:
        return [e.payload for e in await logs.other.read("sup", 1)] == expected[1:]

    await wait_until(followed, timeout=GUARD, what="the replacements on the live tail")
    late = await logs.spawn()
    for reader in [*logs.readers, late]:
        for cut in (0, 1, 2, 3, 30, 59, 60):
            entries = await reader.read("sup", cut)
            assert [e.seq for e in entries] == list(range(cut + 1, 62)), (reader, cut)
            assert [e.payload for e in entries] == expected[cut:], (reader, cut)
    # Unknown streams, unknown and future seqs: nothing happens.
    a.supersede_nowait("nope", 1, b"x")
    a.supersede_nowait("sup", 0, b"x")
    a.supersede_nowait("sup", 10_000, b"x")
    await logs.flush()
    for reader in logs.readers:
        assert [e.payload for e in await reader.read("sup", 0)] == expected


async def test_superseded_entries_do_not_push_newer_ones_out(make_logs: Make) -> None:
    """200 rounds of a token and a changed 20 KB citations set (400 entries, 4 MB) under the
    log's own bound — 1 MiB for memory, 250 entries for Redis (``MAXLEN``): with the old sets
    superseded, a reader from the start still gets every entry (before: the sets filled the
    log and the oldest tokens went)."""
    logs = await make_logs(max_entries=1000, max_bytes=1024 * 1024)
    if logs.kind == "redis":
        logs = await make_logs(max_entries=250)
    a = logs.owner
    await a.open_stream("keep", owner="a")
    expected = await _supersede_rounds(a, "keep", 200)
    await a.finish("keep")
    late = await logs.spawn()
    for reader in [*logs.readers, late]:
        entries = await reader.read("keep", 0)
        assert [e.seq for e in entries] == list(range(1, 401)), (reader, entries[0].seq)
        assert [e.payload for e in entries] == expected
        held = sum(len(e.payload) for e in entries)
        assert held < 200_000, held  # one 20 KB set, not 200 of them


async def test_a_cancel_request_reaches_the_owners_handlers(make_logs: Make) -> None:
    logs = await make_logs()
    a = logs.owner
    seen: list[str] = []
    arrived = asyncio.Condition()

    async def note(item: str) -> None:
        async with arrived:
            seen.append(item)
            arrived.notify_all()

    async def handler(sid: str) -> None:
        await note(sid)

    def sync_handler(sid: str) -> None:
        seen.append("sync:" + sid)

    async def until(n: int) -> None:
        async with asyncio.timeout(GUARD), arrived:
            await arrived.wait_for(lambda: len(seen) >= n)

    a.on_cancel(handler)
    a.on_cancel(sync_handler)
    await a.open_stream("s", owner="me")
    await logs.other.request_cancel("s")  # for Redis: B → A through A's control stream
    await until(2)
    if logs.kind == "memory":
        assert seen == ["s", "sync:s"]  # in registration order, each awaited
    assert sorted(seen) == ["s", "sync:s"]
    await logs.other.request_cancel("unknown")  # unknown: a no-op
    await a.request_cancel("unknown")
    # A cancel routed after them arrives after anything they could have caused (the control
    # stream is ordered): then nothing else has come.
    await a.open_stream("s2", owner="me")
    await logs.other.request_cancel("s2")
    await until(4)
    assert sorted(seen) == ["s", "s2", "sync:s", "sync:s2"]


async def test_readers_noted_elsewhere_keep_a_stream_alive_for_their_ttl(make_logs: Make) -> None:
    """An instance with clients reading a stream owned elsewhere says so (a heartbeat); the
    owner asks before it abandons the stream. Its own notes do not count (it knows its own
    readers); a memory log is one instance, so there is never anyone elsewhere."""
    logs = await make_logs()
    a, b = logs.owner, logs.other
    await a.open_stream("s", owner="me")
    await a.open_stream("t", owner="me")
    assert await a.readers_elsewhere("s") is False
    await b.note_readers(["s", "t", "not a valid id\n"], ttl=0.3)
    await a.note_readers(["s"], ttl=30)  # the owner's own note: never "elsewhere"
    if logs.kind == "memory":
        assert await a.readers_elsewhere("s") is False
        return
    assert await a.readers_elsewhere("s") is True and await a.readers_elsewhere("t") is True
    assert await b.readers_elsewhere("t") is False  # only B noted t: its own note
    assert await b.readers_elsewhere("s") is True  # A noted s too: elsewhere, seen from B
    assert await a.readers_elsewhere("unknown") is False

    async def lapsed() -> bool:
        return not await a.readers_elsewhere("s")

    await wait_until(lapsed, timeout=GUARD, what="B's note lapsing after its ttl")
    await b.note_readers(["s"], ttl=30)  # a heartbeat renews it
    assert await a.readers_elsewhere("s") is True


async def test_close_wakes_blocked_readers_and_refuses_new_streams(make_logs: Make) -> None:
    logs = await make_logs()
    a = logs.owner
    await a.open_stream("t", owner="a")
    await a.append("t", b"x")
    await logs.flush()
    blocked = [asyncio.create_task(log.read("t", 1, block=120)) for log in logs.readers]
    for log in logs.readers:
        await until_blocked(log, 1)
    async with asyncio.timeout(GUARD):  # far below the 120 s block: close woke them
        await asyncio.gather(*(log.aclose() for log in logs.readers))
        for r in blocked:
            with contextlib.suppress(StreamciteError):
                assert await r == []
        await a.aclose()  # idempotent
    with pytest.raises(logs.closed):
        await a.open_stream("after", owner="a")
