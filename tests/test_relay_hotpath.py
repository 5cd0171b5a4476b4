"""The relay's per-read path: ``ChatStream.batches()`` (one list per upstream read) gives
exactly the events of iterating the stream, over real loopback HTTP with both transports;
the aiohttp transport's ``read_chunk``; the relay process's collector settings."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from streamcite import Event, Timeouts, stream_chat
from streamcite.core.models import Citation, CitedAnswer
from streamcite.events import DoneEvent, ErrorEvent, TokenEvent
from streamcite.relay import bounds
from streamcite.relay.clients import LiveFlush, _LiveFrames
from streamcite.relay.eventloop import GC_THRESHOLDS
from streamcite.relay.live import LiveTap, Taps
from tests._relay_fixtures import fake_upstream, relay, ws_client_over
from tests._upstream import WORDS, Upstream, full_stream
from tests.conftest import ServeFn

REQ = {"model": "streamcite-local", "messages": [{"role": "user", "content": "q"}], "stream": True}
FAST = Timeouts(connect=2, first_token=2, idle=0.5, total=10)


def _plain(events: list[Event]) -> list[Any]:
    out = []
    for e in events:
        d = e.to_dict()
        if isinstance(e, DoneEvent):
            d["answer"].pop("timings", None)
        out.append(d)
    return out


async def _events(url: str, transport: str, *, by_batch: bool, **kw: Any) -> list[Any]:
    kw.setdefault("timeouts", FAST)
    async with stream_chat(REQ, base_url=url + "/v1", transport=transport, **kw) as s:
        if not by_batch:
            return [ev async for ev in s]
        batches = [b async for b in s.batches()]
    assert batches and all(batches), "never an empty batch"
    return [ev for b in batches for ev in b]


@pytest.mark.parametrize("transport", ["httpx", "aiohttp"])
async def test_batches_give_the_events_of_iteration(serve: ServeFn, transport: str) -> None:
    parts = full_stream()
    parts.insert(0, b"\xef\xbb\xbf: comment\r\n\r\nevent: ping\ndata\n\n")
    url = await serve(Upstream(parts=parts, delay_between=0.002).app())  # a read per part
    one = await _events(url, transport, by_batch=False)
    two = await _events(url, transport, by_batch=True)
    assert [e.text for e in two if isinstance(e, TokenEvent)] == WORDS
    assert _plain(two) == _plain(one)
    assert isinstance(two[-1], DoneEvent) and two[-1].answer.complete


async def test_whole_stream_in_one_read_is_one_batch(serve: ServeFn) -> None:
    """Everything the upstream sent in one write comes as one list (the relay's one step)."""
    url = await serve(Upstream(parts=[b"".join(full_stream())]).app())
    async with stream_chat(REQ, base_url=url + "/v1", transport="aiohttp", timeouts=FAST) as s:
        batches = [b async for b in s.batches()]
    tokens = [len([e for e in b if isinstance(e, TokenEvent)]) for b in batches]
    assert max(tokens) == len(WORDS)  # one read: all the tokens in one list
    assert isinstance(batches[-1][-1], DoneEvent)


async def test_batches_keep_the_read_deadlines(serve: ServeFn) -> None:
    """An upstream that stops mid-answer: the idle deadline ends the batches with a typed
    ``idle_timeout`` error and ``done``, as it ends the event iteration."""
    url = await serve(Upstream(stall_after=4).app())
    tight = Timeouts(connect=2, first_token=2, idle=0.3, total=10)
    events = await _events(url, "aiohttp", by_batch=True, timeouts=tight)
    errors = [e.code for e in events if isinstance(e, ErrorEvent)]
    assert errors[0] == "idle_timeout"
    assert isinstance(events[-1], DoneEvent) and not events[-1].answer.complete
    same = await _events(url, "aiohttp", by_batch=False, timeouts=tight)
    assert _plain(events) == _plain(same)


async def test_one_iteration_per_stream(serve: ServeFn) -> None:
    url = await serve(Upstream().app())
    async with stream_chat(REQ, base_url=url + "/v1", timeouts=FAST) as s:
        s.batches()
        with pytest.raises(RuntimeError, match="batches"):
            s.__aiter__()
    async with stream_chat(REQ, base_url=url + "/v1", timeouts=FAST) as s:
        s.__aiter__()
        with pytest.raises(RuntimeError, match="event by event"):
            s.batches()


@pytest.fixture
def restored_gc() -> Iterator[None]:
    before = gc.get_threshold()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


@pytest.mark.usefixtures("restored_gc")
async def test_relay_tunes_the_collector_only_when_asked() -> None:
    default = gc.get_threshold()
    async with fake_upstream() as up, relay(up.url + "/v1"):
        assert gc.get_threshold() == default  # embedded: the application's settings
    async with fake_upstream() as up, relay(up.url + "/v1", tune_gc=True):
        assert gc.get_threshold() == GC_THRESHOLDS
        assert gc.get_freeze_count() > 0


class _Transport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def get_write_buffer_size(self) -> int:
        return 0

    def is_closing(self) -> bool:
        return False


async def test_live_frames_of_all_clients_go_out_at_the_end_of_the_turn() -> None:
    """One callback a loop turn writes every client's live frames (one write per client);
    a frame is made once for all the taps of its stream."""
    later = LiveFlush()
    clients, transports = [], []
    taps = Taps("s1")
    loop = asyncio.get_running_loop()
    for _ in range(3):
        t = _Transport()
        client = ws_client_over(t, 1 << 16)
        frames = _LiveFrames(client, t, later)  # type: ignore[arg-type]
        taps.park(LiveTap("s1", 0, frames, loop.create_future(), None))
        clients.append(client)
        transports.append(t)
    scheduled = []
    real_call_soon = loop.call_soon

    def call_soon(cb: Any, *args: Any, **kw: Any) -> Any:
        scheduled.append(cb)
        return real_call_soon(cb, *args, **kw)

    loop.call_soon = call_soon  # type: ignore[method-assign]
    try:
        taps.logged(1, b'{"type":"token","n":1}')
        taps.logged(2, b'{"type":"token","n":2}')
    finally:
        loop.call_soon = real_call_soon  # type: ignore[method-assign]
    assert len(scheduled) == 1  # one callback for the three clients
    assert all(t.writes == [] for t in transports)
    await asyncio.sleep(0)
    for t in transports:
        assert len(t.writes) == 1 and t.writes[0].count(b'"stream_id":"s1"') == 2
    assert transports[0].writes == transports[1].writes == transports[2].writes


@pytest.mark.parametrize("over", [-40, -1, 0, 1, 40])
def test_done_in_one_dump_only_when_nothing_is_dropped(over: int, monkeypatch: Any) -> None:
    """``done`` is dumped whole when it fits (the common case), and built field by field
    when its dump passes the bound although each field's floor does not."""
    answer = CitedAnswer(
        text="t" * 500,
        citations=[Citation(cited_text="c" * 40, document_index=i) for i in range(9)],
    )
    done = DoneEvent(answer=answer)
    plain = orjson.dumps(done)
    by_fields: list[int] = []
    slow = bounds._done_by_fields

    def counting(*args: Any) -> bytes:
        by_fields.append(1)
        return slow(*args)

    monkeypatch.setattr(bounds, "_done_by_fields", counting)
    limit = len(plain) + over
    out = bounds.bounded_done(done, max_errors=10, max_bytes=limit)
    assert len(out) <= limit
    if over >= 0:
        assert out == plain and by_fields == []
    else:
        assert by_fields == [1] and orjson.loads(out)["answer"]["truncated"] is True
