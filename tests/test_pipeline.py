"""The async pipeline over real loopback HTTP, with both transports."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from aiohttp import web
from structlog.testing import capture_logs

from streamcite import Event, Timeouts, iter_events, stream_chat
from streamcite.enrich.base import EnrichContext
from streamcite.events import CitationsEvent, DoneEvent, ErrorEvent, SourcesEvent, TokenEvent
from tests._upstream import WORDS, Upstream, chunk, full_stream
from tests._wait import wait_until
from tests.conftest import ServeFn

TRANSPORTS = ["httpx", "aiohttp"]
REQ = {"model": "streamcite-local", "messages": [{"role": "user", "content": "q"}], "stream": True}
FAST = Timeouts(connect=2, first_token=2, idle=0.5, total=10)


async def run(url: str, transport: str, **kw: Any) -> list[Event]:
    kw.setdefault("timeouts", FAST)
    async with stream_chat(REQ, base_url=url + "/v1", transport=transport, **kw) as s:
        return [ev async for ev in s]


def types(events: list[Event]) -> list[str]:
    return [e.type for e in events]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_full_stream(serve: ServeFn, transport: str) -> None:
    up = Upstream()
    url = await serve(up.app())
    events = await run(url, transport)
    assert types(events)[0] == "meta"
    assert [e.text for e in events if isinstance(e, TokenEvent)] == WORDS
    refs = [(e.number, e.offset) for e in events if e.type == "citation_ref"]
    text = "".join(WORDS)
    assert refs == [(1, text.index("[1]")), (2, text.index("[2]"))]
    done = events[-1]
    assert isinstance(done, DoneEvent)
    a = done.answer
    assert a.text == text and a.complete and a.finish_reason == "stop"
    assert [c.document_title for c in a.citations] == ["Films", "Cast"]
    assert a.dangling_refs == [] and a.errors == []
    assert a.timings.ttft_ms is not None and a.timings.total_ms is not None
    assert a.timings.ttft_ms <= a.timings.total_ms


async def test_transports_give_identical_events(serve: ServeFn) -> None:
    parts = full_stream()
    parts.insert(0, b"\xef\xbb\xbf: comment\r\n\r\nevent: ping\ndata\n\n")  # BOM, comment, ping
    up = Upstream(parts=parts)
    url = await serve(up.app())
    a = await run(url, "httpx")
    b = await run(url, "aiohttp")
    # stream_chat(api="chat") reads the chat dialect, so the recording is read as chat too
    # (auto-detection is the core's concern: tests/test_dialects.py)
    recorded = list(iter_events([b"".join(parts)], dialect="chat"))

    def strip(evs: list[Event]) -> list[Any]:
        out = []
        for e in evs:
            d = e.to_dict()
            if d["type"] == "done":
                d["answer"].pop("timings")
            out.append(d)
        return out

    assert strip(a) == strip(b) == strip(recorded)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_non_streaming_body_gives_same_events(serve: ServeFn, transport: str) -> None:
    body = {
        "object": "chat.completion",
        "id": "x",
        "created": 1,
        "model": "magisterium-1",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Radicato [1]."},
                "finish_reason": "stop",
            }
        ],
        "citations": [
            {"cited_text": "34. ...", "document_title": "Cherishing Life", "document_index": 0}
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
    }
    up = Upstream(json_body=orjson.dumps(body))
    url = await serve(up.app())
    events = await run(url, transport)
    assert types(events) == [
        "meta",
        "token",
        "citation_ref",
        "citations",
        "finish",
        "usage",
        "done",
    ]
    a = events[-1].answer  # type: ignore[union-attr]
    assert a.text == "Radicato [1]." and a.citations[0].document_title == "Cherishing Life"
    assert a.usage is not None and a.usage.total_tokens == 3


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_stall_gives_idle_timeout_and_keeps_tokens(serve: ServeFn, transport: str) -> None:
    up = Upstream(stall_after=3)
    url = await serve(up.app())
    events = await run(url, transport)
    errs = [e for e in events if isinstance(e, ErrorEvent)]
    assert [e.code for e in errs] == ["idle_timeout", "truncated"]
    assert errs[0].stage == "timeout" and errs[0].retryable
    a = events[-1].answer  # type: ignore[union-attr]
    assert a.text == "".join(WORDS[:3]) and not a.complete


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_first_token_timeout(serve: ServeFn, transport: str) -> None:
    up = Upstream(stall_after=0)
    url = await serve(up.app())
    events = await run(
        url, transport, timeouts=Timeouts(connect=2, first_token=0.3, idle=5, total=10)
    )
    assert next(e.code for e in events if isinstance(e, ErrorEvent)) == "first_token_timeout"
    assert events[-1].type == "done"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_total_timeout(serve: ServeFn, transport: str) -> None:
    up = Upstream(delay_between=0.1)
    url = await serve(up.app())
    events = await run(
        url, transport, timeouts=Timeouts(connect=2, first_token=2, idle=2, total=0.35)
    )
    codes = [e.code for e in events if isinstance(e, ErrorEvent)]
    assert codes[0] == "total_timeout"
    assert 0 < len([e for e in events if e.type == "token"]) < len(WORDS)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_reset_mid_stream_keeps_delivered_tokens(serve: ServeFn, transport: str) -> None:
    up = Upstream(reset_after=5)
    url = await serve(up.app())
    events = await run(url, transport)
    codes = [e.code for e in events if isinstance(e, ErrorEvent)]
    assert "truncated" in codes
    a = events[-1].answer  # type: ignore[union-attr]
    assert a.text == "".join(WORDS[:5])


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_429_retry_after_then_success(serve: ServeFn, transport: str) -> None:
    up = Upstream(status=429, status_times=2, retry_after="0")
    url = await serve(up.app())
    events = await run(url, transport, retries=3)
    assert up.requests == 3
    assert events[-1].answer.text == "".join(WORDS)  # type: ignore[union-attr]
    assert not [e for e in events if isinstance(e, ErrorEvent)]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_429_without_retries_is_a_typed_error(serve: ServeFn, transport: str) -> None:
    up = Upstream(status=429, retry_after="7")
    url = await serve(up.app())
    events = await run(url, transport)
    assert types(events) == ["error", "done"]
    err = events[0]
    assert isinstance(err, ErrorEvent)
    assert (err.code, err.status, err.retryable, err.retry_after, err.stage) == (
        "rate_limited",
        429,
        True,
        7.0,
        "http",
    )
    assert "nope" in err.message and "rate_limit_exceeded" in err.message


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [
        (401, "unauthorized", False),
        (403, "forbidden", False),
        (404, "not_found", False),
        (503, "upstream_unavailable", True),
    ],
)
async def test_http_errors(
    serve: ServeFn, transport: str, status: int, code: str, retryable: bool
) -> None:
    up = Upstream(status=status)
    url = await serve(up.app())
    events = await run(url, transport, retries=2)
    err = events[0]
    assert isinstance(err, ErrorEvent) and (err.code, err.retryable, err.status) == (
        code,
        retryable,
        status,
    )
    assert up.requests == (3 if retryable else 1)  # never retry a 4xx that will not change


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_connect_refused(transport: str) -> None:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    events = await run(f"http://127.0.0.1:{port}", transport)
    err = events[0]
    assert (
        isinstance(err, ErrorEvent)
        and err.code == "connect_failed"
        and err.stage == "connect"
        and err.retryable
    )
    assert events[-1].type == "done"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_wrong_content_type(serve: ServeFn, transport: str) -> None:
    up = Upstream(content_type="text/html")
    url = await serve(up.app())
    events = await run(url, transport)
    assert [e.code for e in events if isinstance(e, ErrorEvent)] == ["unexpected_content_type"]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_leaving_early_closes_the_upstream_connection(serve: ServeFn, transport: str) -> None:
    up = Upstream(delay_between=0.05)
    url = await serve(up.app())
    baseline = len(asyncio.all_tasks())
    async with stream_chat(REQ, base_url=url + "/v1", transport=transport, timeouts=FAST) as s:
        async for ev in s:
            if ev.type == "token":
                break
    # the server notices the closed socket on its next write
    await wait_until(lambda: up.open_streams == 0 and len(asyncio.all_tasks()) == baseline)
    assert up.open_streams == 0 and up.closed_by_client == 1
    assert len(asyncio.all_tasks()) == baseline


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_cancelling_the_task_closes_everything(serve: ServeFn, transport: str) -> None:
    up = Upstream(delay_between=0.05)
    url = await serve(up.app())
    got: list[Event] = []
    holder: dict[str, Any] = {}

    async def consume() -> None:
        async with stream_chat(REQ, base_url=url + "/v1", transport=transport, timeouts=FAST) as s:
            holder["s"] = s
            async for ev in s:
                got.append(ev)

    baseline = len(asyncio.all_tasks())
    task = asyncio.create_task(consume())
    await wait_until(lambda: any(e.type == "token" for e in got), what="a first token")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # the server's handler task ends when it sees the closed socket
    await wait_until(lambda: up.open_streams == 0 and len(asyncio.all_tasks()) == baseline)
    assert up.open_streams == 0
    assert len(asyncio.all_tasks()) == baseline
    answer = holder["s"].answer
    assert answer.text and [e.code for e in answer.errors] == ["cancelled"]


class _Sources:
    kind = "sources"
    timeout = 2.0
    needs: tuple[str, ...] = ()

    def __init__(self, delay: float = 0.05, fail: bool = False) -> None:
        self.delay, self.fail = delay, fail
        self.ctx: EnrichContext | None = None

    async def enrich(self, ctx: EnrichContext) -> SourcesEvent:
        self.ctx = ctx
        await asyncio.sleep(self.delay)
        if self.fail:
            raise RuntimeError("wikit exploded")
        return SourcesEvent(query_id=ctx.answer.id)


class _Grounding:
    kind = "grounding"
    timeout = 2.0
    needs = ("sources",)

    def __init__(self, delay: float = 0.05) -> None:
        self.delay = delay
        self.saw: Event | None = None

    async def enrich(self, ctx: EnrichContext) -> ErrorEvent | None:
        self.saw = await ctx.result_of("sources")
        await asyncio.sleep(self.delay)
        return None


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_enrichers_run_after_finish_and_concurrently(serve: ServeFn, transport: str) -> None:
    up = Upstream()
    url = await serve(up.app())
    src, grd = _Sources(), _Grounding()
    events = await run(url, transport, after=[src, grd])
    assert types(events)[-2:] == ["sources", "done"]
    assert src.ctx is not None and src.ctx.answer.text == "".join(WORDS)
    assert [c.document_title for c in src.ctx.answer.citations] == ["Films", "Cast"]
    assert isinstance(grd.saw, SourcesEvent)  # grounding waited for sources
    a = events[-1].answer  # type: ignore[union-attr]
    assert a.timings.sources_ms is not None and a.timings.grounding_ms is not None


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_failing_and_slow_enrichers_become_errors(serve: ServeFn, transport: str) -> None:
    up = Upstream()
    url = await serve(up.app())
    slow = _Grounding(delay=5)
    slow.needs = ()
    slow.timeout = 0.2
    events = await run(url, transport, after=[_Sources(fail=True), slow])
    errs = {e.stage: e.code for e in events if isinstance(e, ErrorEvent)}
    assert errs == {"sources": "sources_failed", "grounding": "grounding_timeout"}
    a = events[-1].answer  # type: ignore[union-attr]
    assert a.text == "".join(WORDS) and len(a.citations) == 2


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_text_stream_and_until_done(serve: ServeFn, transport: str) -> None:
    up = Upstream()
    url = await serve(up.app())
    async with stream_chat(
        REQ, base_url=url + "/v1", transport=transport, marker_mode="strip"
    ) as s:
        text = "".join([t async for t in s.text_stream])
    assert text == "Titanic was directed by James Cameron. It stars Kate Winslet."
    async with stream_chat(REQ, base_url=url + "/v1", transport=transport) as s:
        answer = await s.until_done()
    assert answer.text == "".join(WORDS)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_secrets_never_appear(serve: ServeFn, transport: str) -> None:
    secret = "sk-live-5f3c9a1b2c"
    up = Upstream(
        status=401,
        error_body=orjson.dumps({"error": {"message": f"Incorrect API key provided: {secret}"}}),
    )
    url = await serve(up.app())
    with capture_logs() as logs:
        async with stream_chat(
            REQ,
            base_url=url + "/v1",
            transport=transport,
            api_key=secret,
            headers={"X-Api-Key": "hdr-" + secret},
        ) as s:
            events = [ev async for ev in s]
            rep = repr(s)
    assert up.seen_auth == [f"Bearer {secret}"]
    blob = orjson.dumps([e.to_dict() for e in events]).decode() + repr(events) + rep + repr(logs)
    assert secret not in blob
    assert "Incorrect API key provided: ***" in blob
    assert any(entry["event"] == "stream.error" for entry in logs)


async def test_structured_log_lines(serve: ServeFn) -> None:
    up = Upstream()
    url = await serve(up.app())
    with capture_logs() as logs:
        await run(url, "aiohttp", stream_id="abc")
    names = [e["event"] for e in logs]
    assert names == ["stream.start", "stream.first_token", "stream.finish", "stream.done"]
    assert all(e["stream_id"] == "abc" and e["upstream"].startswith("127.0.0.1:") for e in logs)


async def test_bad_chunks_mid_stream_do_not_stop_the_stream(serve: ServeFn) -> None:
    parts = [
        chunk("a"),
        b"data: {not json\n\n",
        chunk("b"),
        b'data: {"error": {"message": "overloaded", "code": "overloaded"}}\n\n',
        chunk("c", "stop"),
        b"data: [DONE]\n\n",
    ]
    up = Upstream(parts=parts)
    url = await serve(up.app())
    events = await run(url, "aiohttp")
    errs = [(e.code, e.retryable) for e in events if isinstance(e, ErrorEvent)]
    assert errs == [("invalid_json", False), ("overloaded", True)]
    assert events[-1].answer.text == "abc"  # type: ignore[union-attr]


async def test_citations_event_in_order_before_finish(serve: ServeFn) -> None:
    up = Upstream()
    url = await serve(up.app())
    events = await run(url, "httpx")
    kinds = types(events)
    assert kinds.index("citations") < kinds.index("finish")
    assert isinstance(events[kinds.index("citations")], CitationsEvent)


# -- regressions found in review (each failed before its fix) ---------------------------


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
