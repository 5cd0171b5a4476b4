"""Live taps: a caught-up WebSocket client is handed each event as the producer logs it.

No log read and no task switch per event per client; the frames one loop turn produced
go out in one write; any write by a pump or a control frame goes after them; a frame that
would take the buffer past its cap is refused (the pump then waits for room).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st

from streamcite.core.events import TokenEvent
from streamcite.relay.clients import _LiveFrames, ws_text_frame
from streamcite.relay.live import LiveTap, Taps
from streamcite.relay.memlog import MemoryStreamLog
from streamcite.relay.protocol import envelope, token_json
from tests._relay_fixtures import (
    chunk_frame,
    eventually,
    fake_upstream,
    relay,
    running,
    seqs_of,
    text_of,
    ws_client,
    ws_client_over,
)


def _contiguous(events: list[dict[str, Any]]) -> None:
    assert seqs_of(events) == list(range(1, len(events) + 1))
    assert [e["type"] for e in events].count("done") == 1 and events[-1]["type"] == "done"


async def test_a_caught_up_client_is_not_served_by_a_log_read_per_event(
    monkeypatch: Any,
) -> None:
    reads: list[int] = []
    read = MemoryStreamLog.read

    async def counting(self: MemoryStreamLog, *args: Any, **kw: Any) -> Any:
        reads.append(1)
        return await read(self, *args, **kw)

    monkeypatch.setattr(MemoryStreamLog, "read", counting)
    tokens = [f" t{i}" for i in range(120)]
    async with (
        fake_upstream(tokens=tokens, delay=0.003) as up,
        relay(up.url + "/v1") as server,
        ws_client(server) as one,
        ws_client(server) as two,
    ):
        a, b = await one.ask("first"), await two.ask("second")
        await one.until_done(a)
        await two.until_done(b)
        for client, sid in ((one, a), (two, b)):
            events = client.events(sid)
            _contiguous(events)
            assert text_of(events) == up.answer
        sent = len(one.events(a)) + len(two.events(b))
        assert server.relay.metrics.events_sent == sent
    # before live taps: a blocking log read per event per client (> 240 here)
    assert len(reads) < 20, len(reads)


async def _burst_upstream(tokens: list[str]) -> web.Application:
    """An upstream that sends the whole answer in one write (one loop turn's worth)."""

    async def handle(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        body = b"".join(chunk_frame(t) for t in ["", *tokens])
        await resp.write(body + chunk_frame(None, "stop") + b"data: [DONE]\n\n")
        return resp

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handle)
    return app


def _count_writes(transport: Any) -> list[int]:
    sizes: list[int] = []
    write: Callable[[bytes], None] = transport.write

    def counting(data: bytes) -> None:
        sizes.append(len(data))
        write(data)

    transport.write = counting
    return sizes


async def test_events_logged_in_one_turn_go_out_in_one_write_each_its_own_frame() -> None:
    tokens = [f"w{i} " for i in range(200)]
    async with (
        running(await _burst_upstream(tokens)) as url,
        relay(url + "/v1") as server,
        ws_client(server) as client,
    ):
        await eventually(lambda: server.relay.client_count == 1)
        (conn,) = server.relay._clients
        sizes = _count_writes(conn.transport)
        sid = await client.ask("q")
        await client.until_done(sid)
        events = client.events(sid)
    _contiguous(events)
    assert text_of(events) == "".join(tokens)
    # accepted, then the answer: a few reads' worth of writes, not one per event (> 200)
    assert len(sizes) <= 12, sizes


class _Transport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.buffered = 0

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def get_write_buffer_size(self) -> int:
        return self.buffered

    def is_closing(self) -> bool:
        return False


def _frames(data: bytes) -> list[bytes]:
    """The payloads of the unmasked text frames in ``data`` (short frames only)."""
    out, i = [], 0
    while i < len(data):
        n = data[i + 1] & 0x7F
        assert n < 126
        out.append(data[i + 2 : i + 2 + n])
        i += 2 + n
    return out


async def test_live_frames_keep_order_and_the_cap() -> None:
    t = _Transport()
    live = _LiveFrames(ws_client_over(t, 40), t)  # type: ignore[arg-type]
    one, two = orjson.dumps({"n": 1}), orjson.dumps({"n": 2})
    w1, w2 = ws_text_frame(one), ws_text_frame(two)  # a tap hands the encoded frame
    assert live.take(w1) and live.take(w2)
    assert t.writes == []  # held until the end of this loop turn
    await asyncio.sleep(0)
    assert t.writes == [ws_text_frame(one) + ws_text_frame(two)]
    # another write (a pump's, a control frame) flushes the held frames first
    assert live.take(w1)
    live.flush()
    t.writes.append(b"pump")
    assert _frames(t.writes[1]) == [one] and t.writes[2] == b"pump"
    # past the cap: refused, and what was held goes out first
    big = orjson.dumps({"x": "y" * 30})
    assert live.take(w1)
    assert not live.take(ws_text_frame(big))
    assert _frames(t.writes[-1]) == [one]
    # a socket with bytes queued: refused (the pump waits for room)
    t.buffered = 1
    assert not live.take(w1)
    await asyncio.sleep(0)
    assert len(t.writes) == 4


@given(st.integers(0, 2**31), st.text(), st.text() | st.just(None))
def test_token_json_is_orjsons_bytes_for_the_event(index: int, text: str, display: Any) -> None:
    display = text if display is None else display
    event = TokenEvent(index=index, text=text, display=display)
    assert token_json(index, text, display) == orjson.dumps(event)


def test_token_json_refuses_what_orjson_refuses() -> None:
    with pytest.raises(orjson.JSONEncodeError):
        orjson.dumps(TokenEvent(text="\ud800"))
    with pytest.raises(orjson.JSONEncodeError):
        token_json(0, "\ud800", "\ud800")


@pytest.mark.parametrize("size", [0, 40, 84, 85, 86, 200, 65_400, 65_536, 70_000])
@pytest.mark.parametrize("seq", [1, 9, 10, 99, 100, 12_345])
async def test_a_taps_frame_is_the_enveloped_events_websocket_frame(size: int, seq: int) -> None:
    """Each length class of the frame header (7-bit, 16-bit, 64-bit), around its edges."""
    sid = "AbCdEfGhIjKlMnOp"
    payload = b'{"type":"token","text":"%s"}' % (b"x" * size)
    taken: list[bytes] = []

    def take(frame: bytes) -> bool:
        taken.append(frame)
        return True

    writer = SimpleNamespace(take=take)
    waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    taps = Taps(sid)
    taps.park(LiveTap(sid, seq - 1, writer, waiter, None))
    taps.logged(seq, payload)
    assert taken == [ws_text_frame(envelope(sid, seq, payload))]


async def test_a_reads_tokens_reach_a_caught_up_client_as_one_piece(monkeypatch: Any) -> None:
    """The tokens of one upstream read are logged one by one, but handed to a live tap
    together: one ``take`` per read per client, not one per event (the batching would be
    silently off if this counted one take per token)."""
    takes: list[int] = []
    take = _LiveFrames.take

    def counting(self: _LiveFrames, data: bytes) -> bool:
        takes.append(data.count(b'"stream_id":'))
        return take(self, data)

    monkeypatch.setattr(_LiveFrames, "take", counting)
    tokens = [f"w{i} " for i in range(200)]
    async with (
        running(await _burst_upstream(tokens)) as url,
        relay(url + "/v1") as server,
        ws_client(server) as client,
    ):
        sid = await client.ask("q")
        await client.until_done(sid)
        events = client.events(sid)
    _contiguous(events)
    assert text_of(events) == "".join(tokens)
    assert sum(takes) > 150  # the tap delivered most of the answer (the pump the rest)
    assert len(takes) < 20, takes  # a few pieces: the reads' token runs, then done


@pytest.mark.parametrize("taps_n", [1, 3])
@pytest.mark.parametrize("sizes", [[1, 1], [0, 200, 5], [130, 2, 70_000, 9], [3] * 12])
async def test_a_run_of_tokens_is_the_frames_of_its_events_back_to_back(
    taps_n: int, sizes: list[int]
) -> None:
    sid = "AbCdEfGhIjKlMnOp"
    first = 98  # the seq crosses 100: the envelope's length changes inside the run
    payloads = [token_json(0, "x" * n, "x" * n) for n in sizes]
    taken: list[list[bytes]] = [[] for _ in range(taps_n)]
    loop = asyncio.get_running_loop()
    taps = Taps(sid)
    tap_list = []
    for i in range(taps_n):

        def take(frame: bytes, into: list[bytes] = taken[i]) -> bool:
            into.append(frame)
            return True

        tap = LiveTap(sid, first - 1, SimpleNamespace(take=take), loop.create_future(), None)
        taps.park(tap)
        tap_list.append(tap)
    taps.logged_run(first, payloads)
    last = first + len(payloads) - 1
    want = b"".join(ws_text_frame(envelope(sid, first + i, p)) for i, p in enumerate(payloads))
    assert taken == [[want]] * taps_n
    assert taps.last_seq == last and taps.frames_built == 1
    assert all(t.delivered == last and t.counted == len(payloads) for t in tap_list)
    # a tap that is behind lets go; the others keep going
    taps.logged(last + 2, payloads[0])
    assert taps.taps == [] and all(t.waiter.done() for t in tap_list)
