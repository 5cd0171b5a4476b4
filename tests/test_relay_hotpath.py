"""The relay's per-read path: ``ChatStream.batches()`` (one list per upstream read) gives
exactly the events of iterating the stream, over real loopback HTTP with both transports;
the aiohttp transport's ``read_chunk``; the relay process's collector settings."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from streamcite import Event, Timeouts, stream_chat
from streamcite.events import DoneEvent, ErrorEvent, TokenEvent
from streamcite.relay.clients import _LiveFrames
from streamcite.relay.eventloop import GC_THRESHOLDS
from streamcite.relay.live import LiveTap, Taps
from tests._relay_fixtures import fake_upstream, relay
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


async def test_live_frames_go_out_per_read_and_when_a_tap_lets_go() -> None:
    """Frames a tap took wait for the producer's flush after the read's events, not for
    the loop; a tap that lets go (here: a gap) writes them first, so the pump's frames
    come after them."""
    t = _Transport()
    client = SimpleNamespace(
        ws=SimpleNamespace(closed=False), closing=False, gate=SimpleNamespace(cap=1 << 16)
    )
    frames = _LiveFrames(client, t)  # type: ignore[arg-type]
    taps = Taps("s1")
    tap = LiveTap("s1", 0, frames, asyncio.get_running_loop().create_future(), None)
    taps.park(tap)
    taps.logged(1, b'{"type":"token","n":1}')
    taps.logged(2, b'{"type":"token","n":2}')
    await asyncio.sleep(0)
    assert t.writes == []
    taps.flush()  # the producer, after one upstream read's events
    assert len(t.writes) == 1 and t.writes[0].count(b'"stream_id":"s1"') == 2
    taps.logged(3, b'{"type":"token","n":3}')
    taps.logged(5, b'{"type":"token","n":5}')  # a gap: the tap lets go, 3 written first
    assert tap.waiter.done() and tap.delivered == 3
    assert len(t.writes) == 2 and b'"seq":3,' in t.writes[1]
