"""One socket write per pump wake (issue 13): the frames a pump finds ready go out in
one write — each event still its own WebSocket message / SSE event with its ``seq`` —
and a write never takes the client's buffer past its cap by more than one frame."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from tests._relay_fixtures import (
    eventually,
    fake_upstream,
    read_sse,
    relay,
    seqs_of,
    text_of,
    ws_client,
)

TOKENS = [f"w{i} " for i in range(300)]


def _count_writes(transport: Any) -> list[int]:
    """Record the size of every write on a server-side transport."""
    sizes: list[int] = []
    write: Callable[[bytes], None] = transport.write

    def counting(data: bytes) -> None:
        sizes.append(len(data))
        write(data)

    transport.write = counting
    return sizes


async def _finished_stream(server: Any) -> tuple[str, int]:
    """A stream whose events are all logged (the backlog a resume then finds at once)."""
    async with ws_client(server) as first:
        sid = await first.ask("q")
        await first.until_done(sid)
        n = len(first.events(sid))
    await eventually(lambda: server.relay.client_count == 0)
    return sid, n


@pytest.mark.parametrize("cap", [256 * 1024, 4096])
async def test_a_ws_backlog_goes_out_in_few_writes_each_event_its_own_frame(cap: int) -> None:
    async with (
        fake_upstream(tokens=TOKENS) as up,
        relay(up.url + "/v1", client_buffer_bytes=cap) as server,
    ):
        sid, n = await _finished_stream(server)
        async with ws_client(server) as second:
            await eventually(lambda: server.relay.client_count == 1)
            (conn,) = server.relay._clients
            sizes = _count_writes(conn.transport)
            await second.send({"type": "resume", "stream_id": sid, "after_seq": 0})
            await second.until_done(sid)
            events = second.events(sid)
            frames = second.raw[-n:]
    assert seqs_of(events) == list(range(1, n + 1))
    assert text_of(events) == "".join(TOKENS)
    total = sum(sizes)
    largest = max(len(f.encode()) for f in frames) + 4  # + the WebSocket header
    if cap > total:
        assert len(sizes) <= 3, sizes  # accepted + the whole backlog (one per frame: > 300)
    else:
        # Cut at the cap: never more than the cap plus one frame in one write.
        assert len(sizes) >= total // (cap + largest), sizes
        assert max(sizes) <= cap + largest, (max(sizes), cap, largest)
        assert len(sizes) < n / 4, sizes


async def test_an_sse_resume_writes_its_backlog_at_once_with_exact_ids(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with fake_upstream(tokens=TOKENS) as up, relay(up.url + "/v1") as server:
        sid, n = await _finished_stream(server)
        writes: list[int] = []
        write = web.StreamResponse.write

        async def counting(self: web.StreamResponse, data: Any) -> None:
            if self.content_type == "text/event-stream":
                writes.append(len(data))
            await write(self, data)

        monkeypatch.setattr(web.StreamResponse, "write", counting)
        async with (
            aiohttp.ClientSession() as session,
            session.get(
                server.url + "/sse",
                params={"stream_id": sid},
                headers={"Last-Event-ID": "7"},
            ) as resp,
        ):
            assert resp.status == 200
            sse = await read_sse(resp)
    ids = [int(ev.id) for ev in sse if ev.id]
    assert ids == list(range(8, n + 1))
    assert len(writes) <= 3, writes  # accepted + the backlog (one per event: > 290)
