"""``stream_chat_sync``: the same events and answer as ``stream_chat``, from a plain thread.

Every recorded stream of tests/fixtures/ (providers' chat streams and the four other
dialects') is served over loopback by an upstream on its own thread and loop, cut in
pieces hypothesis chooses; the async and the sync API read it, and their events must
be equal (timings aside: they are clocks). Closing early cancels the upstream request
(the upstream sees the client go), and a stalled upstream ends under the timeouts.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamcite import Timeouts, stream_chat, stream_chat_sync
from streamcite.events import event_to_json
from streamcite.pipeline.apis import APIS
from tests._wait import wait_until_sync

FIXTURES = Path(__file__).parent / "fixtures"
RECORDED = sorted(
    [*FIXTURES.glob("providers/*.sse"), *FIXTURES.glob("dialects/*.sse")], key=lambda p: p.name
)
REQUEST = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "Q?"}]}


def _api(path: Path) -> str:
    head = path.name.split("__", 1)[0]
    return head if path.parent.name == "dialects" and head in APIS else "chat"


class Upstream:
    """Streams ``pieces`` to any POST, on its own thread and loop; counts what clients did."""

    def __init__(self) -> None:
        self.pieces: list[bytes] = []
        self.delay = 0.0
        self.finished = 0
        self.closed_by_client = 0
        self.loop = asyncio.new_event_loop()
        self.url = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        try:
            for piece in self.pieces:
                await resp.write(piece)
                if self.delay:
                    await asyncio.sleep(self.delay)
            await resp.write_eof()
        except (ConnectionError, asyncio.CancelledError):
            self.closed_by_client += 1
            raise
        self.finished += 1
        return resp


@contextlib.contextmanager
def upstream() -> Iterator[Upstream]:
    up = Upstream()
    app = web.Application()
    app.router.add_post("/{tail:.*}", up.handle)
    runner = web.AppRunner(app, shutdown_timeout=1.0, handler_cancellation=True)
    ready = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(up.loop)
        up.loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        up.loop.run_until_complete(site.start())
        up.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        ready.set()
        up.loop.run_forever()
        up.loop.run_until_complete(runner.cleanup())
        up.loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(10), "upstream did not start"
    try:
        yield up
    finally:
        up.loop.call_soon_threadsafe(up.loop.stop)
        thread.join(10)


def _comparable(events: list[Any]) -> list[Any]:
    out = []
    for ev in events:
        obj = orjson.loads(event_to_json(ev))
        if obj["type"] == "done":
            obj["answer"]["timings"] = None  # clocks, not events
        out.append(obj)
    return out


def _options(up: Upstream, api: str) -> dict[str, Any]:
    return {"base_url": up.url + "/v1", "api": api, "api_key": "k"}


async def _async_events(up: Upstream, api: str) -> list[Any]:
    async with stream_chat(REQUEST, **_options(up, api)) as s:
        return [ev async for ev in s]


@pytest.fixture(scope="module")
def shared_upstream() -> Iterator[Upstream]:
    with upstream() as up:
        yield up


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
@settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cuts=st.lists(st.integers(min_value=1, max_value=400), min_size=0, max_size=12))
def test_sync_events_equal_async_events_on_every_recorded_stream(
    path: Path, cuts: list[int], shared_upstream: Upstream
) -> None:
    data = path.read_bytes()
    pieces, at = [], 0
    for n in cuts:  # hypothesis chooses where the bytes are cut
        pieces.append(data[at : at + n])
        at += n
    pieces.append(data[at:])
    up = shared_upstream
    up.pieces = [p for p in pieces if p]
    api = _api(path)
    expected = _comparable(asyncio.run(_async_events(up, api)))
    with stream_chat_sync(REQUEST, **_options(up, api)) as stream:
        got = list(stream)
    assert _comparable(got) == expected
    assert got[-1].type == "done"
    assert orjson.loads(event_to_json(stream.answer))["text"] == expected[-1]["answer"]["text"]


def test_closing_early_cancels_the_upstream_request() -> None:
    data = (FIXTURES / "providers" / "openai_tool_calls.sse").read_bytes()
    with upstream() as up:
        up.pieces = [data[i : i + 20] for i in range(0, len(data), 20)]
        up.delay = 0.05  # seconds of stream left when the reader leaves
        with stream_chat_sync(REQUEST, base_url=up.url + "/v1") as stream:
            first = next(iter(stream))
        assert first.type != "done"
        wait_until_sync(lambda: up.closed_by_client > 0, 30.0)
        assert (up.closed_by_client, up.finished) == (1, 0)
        assert [e.code for e in stream.answer.errors] == ["cancelled"]
        assert list(stream) == []  # closed: nothing more, no new request


def test_a_stalled_upstream_ends_under_the_timeouts() -> None:
    with upstream() as up:
        up.pieces = [b": keep-alive\n\n"]
        up.delay = 60.0  # then silence
        t0 = time.monotonic()
        timeouts = Timeouts(first_token=0.3)
        with stream_chat_sync(REQUEST, base_url=up.url + "/v1", timeouts=timeouts) as stream:
            events = list(stream)
        assert time.monotonic() - t0 < 10
        assert events[-1].type == "done"
        assert "first_token_timeout" in [e.code for e in events if e.type == "error"]


def test_a_caller_error_is_raised_in_the_caller() -> None:
    with pytest.raises(ValueError):
        stream_chat_sync(REQUEST, base_url="http://127.0.0.1:9/v1", api="nonsense")


def test_a_slow_reader_holds_the_loop_back_not_memory() -> None:
    words = b"".join(
        b'data: {"choices":[{"index":0,"delta":{"content":"w "}}]}\n\n' for _ in range(2000)
    )
    with upstream() as up:
        up.pieces = [words, b"data: [DONE]\n\n"]
        with stream_chat_sync(REQUEST, base_url=up.url + "/v1") as stream:
            it = iter(stream)
            next(it)
            # The loop reads ahead meanwhile, up to its bound, then waits for room:
            # waited for (not slept on); unbounded, it would read past the bound.
            ch = stream._ch
            stopped = wait_until_sync(
                lambda: ch.pump_waiting or ch.ended or ch.put_count - ch.taken > 256, 30.0
            )
            ahead = stream._put_count - stream._taken
            assert stopped and ch.pump_waiting, ahead
            assert 0 < ahead <= 256
            answer = stream.until_done()
        assert answer.text == "w " * 2000
