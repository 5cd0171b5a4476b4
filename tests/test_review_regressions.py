"""Regressions for defects found in review: each test failed before its fix."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from aiohttp import web
from structlog.testing import capture_logs

from streamcite import (
    ChatStreamParser,
    ErrorEvent,
    Event,
    EventTooLarge,
    SSEDecoder,
    Timeouts,
    iter_events,
    stream_chat,
)
from streamcite.enrich.base import EnrichContext
from tests._upstream import WORDS, Upstream, chunk
from tests.conftest import ServeFn

TRANSPORTS = ["httpx", "aiohttp"]
REQ = {"model": "m", "messages": [], "stream": True}


def splits(data: bytes) -> list[list[bytes]]:
    return [[data], [data[i : i + 1] for i in range(len(data))], [data[:7], data[7:]]]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_no_response_headers_is_a_timeout_not_a_hang(serve: ServeFn, transport: str) -> None:
    async def never(request: web.Request) -> web.Response:
        await request.read()
        await asyncio.sleep(3600)
        raise AssertionError

    app = web.Application()
    app.router.add_post("/v1/chat/completions", never)
    url = await serve(app)
    t = Timeouts(connect=1, first_token=0.3, idle=0.3, total=5)
    async with asyncio.timeout(5):
        async with stream_chat(REQ, base_url=url + "/v1", transport=transport, timeouts=t) as s:
            events = [e async for e in s]
    assert [e.type for e in events] == ["error", "done"]
    assert isinstance(events[0], ErrorEvent) and events[0].code == "first_token_timeout"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_iterating_after_close_never_sends_a_second_request(
    serve: ServeFn, transport: str
) -> None:
    up = Upstream(delay_between=0.02)
    url = await serve(up.app())
    async with stream_chat(REQ, base_url=url + "/v1", transport=transport) as s:
        async for ev in s:
            if ev.type == "token":
                break
    answer = await s.until_done()
    assert up.requests == 1
    assert answer.text == WORDS[0]


def test_oversized_event_keeps_the_other_events_of_its_read() -> None:
    d = SSEDecoder(max_event_size=100)
    with pytest.raises(EventTooLarge) as info:
        d.feed(b"data: ok\n\ndata: " + b"x" * 200)
    assert [e.data for e in info.value.events] == ["ok"]
    # The rest of the oversized event is dropped, never parsed as new events.
    assert [e.data for e in d.feed(b'yyy\ndata: {"forged":1}\n\ndata: after\n\n')] == ["after"]


def test_event_after_an_oversized_multi_line_event_is_decoded() -> None:
    # The size count of the dropped event must not carry over into the next one.
    big = b"".join(b"data: " + b"x" * 40 + b"\n" for _ in range(5)) + b"\n"
    stream = big + b"data: a\ndata: b\n\n"
    for parts in splits(stream):
        d = SSEDecoder(max_event_size=100)
        got = []
        for part in parts:
            try:
                got += d.feed(part)
            except EventTooLarge as exc:
                got += exc.events
        assert [e.data for e in got] == ["a\nb"]


def test_parser_reports_oversize_and_keeps_tokens_however_split() -> None:
    data = chunk("a") + b"data: " + b"x" * 300 + b"\n\n" + chunk("b", "stop") + b"data: [DONE]\n\n"
    for parts in splits(data):
        p = ChatStreamParser(max_event_size=200)
        events: list[Event] = []
        for part in parts:
            events += p.feed(part)
        events += p.close()
        assert [e.type for e in events if e.type in ("token", "error")] == [
            "token",
            "error",
            "token",
        ]
        assert p.answer.text == "ab"


@pytest.mark.parametrize("index", [b"null", b"false", b"0.0", b'"0"'])
def test_choice_index_not_an_int_is_bad_chunk_however_split(index: bytes) -> None:
    bad = b'data: {"choices":[{"index":' + index + b',"delta":{"content":"X"}}]}\n\n'
    data = chunk("a") + chunk("b") + bad + chunk("c", "stop") + b"data: [DONE]\n\n"
    for parts in splits(data):
        events = list(iter_events(parts))
        assert [e.code for e in events if isinstance(e, ErrorEvent)] == ["bad_chunk"]
        assert events[-1].answer.text == "abc"  # type: ignore[union-attr]


def test_anything_after_done_is_ignored_however_split() -> None:
    err = b'event: error\ndata: {"error": {"message": "late"}}\n\n'
    data = chunk("a") + chunk("b", "stop") + b"data: [DONE]\n\n" + err + chunk("zzz")
    for parts in splits(data):
        events = list(iter_events(parts))
        assert not [e for e in events if isinstance(e, ErrorEvent)]
        assert events[-1].answer.text == "ab"  # type: ignore[union-attr]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_undecodable_body_is_an_error_event_with_done(serve: ServeFn, transport: str) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Content-Encoding": "gzip"}
        )
        await resp.prepare(request)
        await resp.write(b"this is not gzip at all" * 10)
        return resp

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    url = await serve(app)
    async with stream_chat(
        REQ, base_url=url + "/v1", transport=transport, timeouts=Timeouts(idle=2)
    ) as s:
        events = [e async for e in s]
    assert events[-1].type == "done"
    assert [e for e in events if isinstance(e, ErrorEvent)]


async def test_url_userinfo_and_header_credentials_never_appear(serve: ServeFn) -> None:
    token = "sk-HDRKEY-123456"
    up = Upstream(
        status=401, error_body=orjson.dumps({"error": {"message": f"Invalid token {token}"}})
    )
    url = await serve(up.app())
    base = url.replace("http://", "http://alice:s3cretpw@") + "/v1"
    with capture_logs() as logs:
        async with stream_chat(
            REQ, base_url=base, transport="httpx", headers={"Authorization": f"Bearer {token}"}
        ) as s:
            events = [e async for e in s]
            rep = repr(s)
    blob = repr(events) + rep + repr(logs) + orjson.dumps([e.to_dict() for e in events]).decode()
    assert "s3cretpw" not in blob and "alice" not in blob
    assert token not in blob and "Invalid token ***" in blob


class _Raises:
    kind = "sources"
    timeout = 2.0
    needs: tuple[str, ...] = ()

    async def enrich(self, ctx: EnrichContext) -> Any:
        raise asyncio.CancelledError


class _Needs:
    kind = "grounding"
    timeout = 2.0
    needs = ("sources",)

    async def enrich(self, ctx: EnrichContext) -> Any:
        assert await ctx.result_of("sources") is None
        return None


async def test_enricher_raising_cancelled_error_does_not_kill_the_stream(serve: ServeFn) -> None:
    up = Upstream()
    url = await serve(up.app())
    async with asyncio.timeout(5):
        async with stream_chat(REQ, base_url=url + "/v1", after=[_Raises(), _Needs()]) as s:
            events = [e async for e in s]
    assert events[-1].type == "done"
    errs = [(e.stage, e.code) for e in events if isinstance(e, ErrorEvent)]
    assert errs == [("sources", "sources_failed")]
