"""The relay does not resend every citation and span on every ``citations`` event.

Anthropic (and Cohere, Responses) streams give a ``citations`` event per citation, each
carrying every citation and span so far; the relay logged and sent each one whole, so
an answer of n cited blocks sent O(n²) bytes to every browser (1,024 blocks from a
0.6 MB upstream: 99 MB of citations frames). Now the citations frames of a stream total
about ``CITATIONS_RESEND + 2`` times the largest, and the newest set always arrives
before ``done``. The upstream is an Anthropic Messages stream written for this test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import orjson
from aiohttp import web

from streamcite.relay import producer
from tests._relay_fixtures import relay, running, text_of, ws_client
from tests._wait import wait_until

BLOCKS = 300


def _sse(event: str, data: dict[str, object]) -> bytes:
    return (
        f"event: {event}\n".encode() + b"data: " + orjson.dumps({"type": event, **data}) + b"\n\n"
    )


def _stream() -> Iterator[bytes | int]:
    """The stream's events; an int ``i`` after block ``i``: wait until the client saw it."""
    message = {
        "id": "msg_many",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 9, "output_tokens": 1},
    }
    yield _sse("message_start", {"message": message})
    for i in range(BLOCKS):
        block = {"type": "text", "text": "", "citations": []}
        yield _sse("content_block_start", {"index": i, "content_block": block})
        cite = {
            "type": "web_search_result_location",
            "url": f"https://example.org/{i % 200}",
            "title": f"Page {i % 200}",
            "cited_text": "Quoted.",
            "encrypted_index": "e",
        }
        delta = {"type": "citations_delta", "citation": cite}
        yield _sse("content_block_delta", {"index": i, "delta": delta})
        delta = {"type": "text_delta", "text": f"Fact {i}. "}
        yield _sse("content_block_delta", {"index": i, "delta": delta})
        yield _sse("content_block_stop", {"index": i})
        yield i
    delta = {"stop_reason": "end_turn", "stop_sequence": None}
    yield _sse("message_delta", {"delta": delta, "usage": {"output_tokens": BLOCKS}})
    yield _sse("message_stop", {})


def _upstream(seen: Callable[[], str]) -> web.Application:
    """Paced as a model is: block ``i + 1`` is written once the client has block ``i``'s
    text (so each citations event is read on its own, not batched with the next)."""

    async def messages(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for part in _stream():
            if isinstance(part, int):
                end = f"Fact {part}. "
                await wait_until(lambda e=end: seen().endswith(e), timeout=30, interval=0.002)
            else:
                await resp.write(part)
        return resp

    app = web.Application()
    app.router.add_post("/v1/messages", messages)
    return app


async def test_citations_frames_total_linear_bytes_and_the_newest_comes_before_done() -> None:
    frames: list[dict[str, Any]] = []
    async with (
        running(_upstream(lambda: text_of(frames))) as url,
        relay(url + "/v1", api="anthropic", model="claude-test") as server,
        ws_client(server) as live,
    ):
        frames = live.frames
        sid = await live.ask("many facts?")
        await live.until_done(sid, limit=90)
        events = live.events(sid)
    assert text_of(events) == "".join(f"Fact {i}. " for i in range(BLOCKS))
    cits = [e for e in events if e["type"] == "citations"]
    sizes = [len(orjson.dumps(e)) for e in cits]
    # before: 300 frames, 15.1 MB. The bound, in items (citations + spans):
    # CITATIONS_RESEND + 2 (= 10) times the largest; in bytes about the same.
    assert sum(sizes) <= 12 * max(sizes), (len(sizes), sum(sizes))
    # the newest set, whole, before done: every distinct source and every span
    last = cits[-1]
    assert len(last["citations"]) == 200 and len(last["spans"]) == BLOCKS
    kinds = [e["type"] for e in events]
    assert kinds.index("done") > max(i for i, k in enumerate(kinds) if k == "citations")
    assert producer.CITATIONS_RESEND == 8
