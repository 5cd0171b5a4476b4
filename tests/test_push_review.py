"""A hostile review of the push transport: what a server may do to it, and what the relay's
push mode must keep as the pull mode (aiohttp) does.

Real loopback servers only (raw asyncio servers on 127.0.0.1 port 0 for the shapes a
well-behaved server does not send, the relay's own fake upstream otherwise); every wait is
bounded, and servers report what they saw through events, never through sleeps.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("httptools")

from streamcite.core.events import FinishEvent, TokenEvent
from streamcite.pipeline import stream_chat
from streamcite.pipeline.timeouts import Timeouts
from streamcite.transports.base import TransportError
from streamcite.transports.push import MAX_HEAD_BYTES, ConnectionPool, PushTransport
from tests._raw_upstream import Handler, chunk_of, raw_upstream, read_request
from tests._relay_fixtures import chunk_frame, relay, ws_client

_SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
)


_BODY = {"model": "m", "messages": [{"role": "user", "content": "q"}]}


async def _answer(url: str, transport: Any, **kw: Any) -> Any:
    async with stream_chat(_BODY, base_url=url, transport=transport, retries=0, **kw) as s:
        return await s.until_done()


# -- the pool: what a connection may be in when it is kept ----------------------------------


async def test_a_stream_closed_at_its_finish_pools_no_paused_connection() -> None:
    """The finish chunk is handed to the task with reading paused; a consumer that stops
    there (a relay stream cancelled, a caller that breaks at the finish) closes the
    response with the body complete: the connection went to the pool still paused, and
    ``_begin`` forgot the pause, so the next request on it was never read (it hung until
    its first-token timeout)."""

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        while True:
            await read_request(r)
            w.write(_SSE_HEAD + chunk_of(chunk_frame("tok")))
            await w.drain()
            tail = chunk_frame(None, "stop") + b"data: [DONE]\n\n"
            w.write(chunk_of(tail) + chunk_of(b""))  # finish, [DONE], terminator: one read
            await w.drain()

    pool = ConnectionPool()
    try:
        async with raw_upstream(handle) as url, asyncio.timeout(15):
            stream = stream_chat(_BODY, base_url=url, transport=pool.transport(), retries=0)
            batches: Any = stream.batches()
            batches.take_tokens(lambda evs: True)
            async for batch in batches:
                if any(type(e) is FinishEvent for e in batch):
                    break  # the finish went to the task: stop there
            await stream.aclose()
            timeouts = Timeouts(first_token=3.0)
            answer = await _answer(url, pool.transport(), timeouts=timeouts)
    finally:
        pool.close()
    assert answer.text == "tok" and not answer.errors, answer.errors
    assert pool.opened == 1  # the kept connection served the second request


async def test_unsolicited_bytes_on_an_idle_connection_retire_it() -> None:
    """A server that writes to a connection no request is waiting on (here a second
    response right after the first): the connection is not kept for the next request."""
    served = 0

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        nonlocal served
        while True:
            await read_request(r)
            served += 1
            text = f"answer{served}"
            body = chunk_frame(text) + chunk_frame(None, "stop") + b"data: [DONE]\n\n"
            smuggled = chunk_frame("SMUGGLED") + b"data: [DONE]\n\n"
            w.write(
                _SSE_HEAD
                + chunk_of(body)
                + chunk_of(b"")
                + b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                + b"Content-Length: %d\r\n\r\n" % len(smuggled)
                + smuggled
            )
            await w.drain()

    pool = ConnectionPool()
    try:
        async with raw_upstream(handle) as url, asyncio.timeout(15):
            first = await _answer(url, pool.transport())
            second = await _answer(url, pool.transport())
    finally:
        pool.close()
    assert (first.text, second.text) == ("answer1", "answer2")
    assert pool.opened == 2, "a connection that spoke out of turn was kept"


# -- hostile heads: bounded memory, typed errors --------------------------------------------


async def _endless(url_handle: Handler, transport: Any) -> tuple[list[str], int]:
    async with raw_upstream(url_handle) as url, asyncio.timeout(20):
        answer = await _answer(url, transport, timeouts=Timeouts(first_token=4.0))
    return [e.code for e in answer.errors], 0


@pytest.mark.parametrize("shape", ["header", "interim"])
async def test_an_endless_head_is_refused_before_it_is_buffered(shape: str) -> None:
    """A header value that never ends (httptools gathers a header before its callback: the
    per-header bound came after the whole value was in memory), or 1xx answers without
    end: refused once the bytes before the final head pass ``MAX_HEAD_BYTES``, as
    aiohttp refuses a long line, not at the first-token timeout."""
    sent = 0
    cap = 64 * MAX_HEAD_BYTES  # what the server would send if never stopped

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        nonlocal sent
        await read_request(r)
        if shape == "header":
            w.write(b"HTTP/1.1 200 OK\r\nX-Endless: ")
            piece = b"a" * 8192
        else:
            piece = b"HTTP/1.1 100 Continue\r\n\r\n" * 256
        while sent < cap:
            w.write(piece)
            sent += len(piece)
            await w.drain()
        await r.read()  # until the client closes

    codes, _ = await _endless(handle, PushTransport())
    assert codes == ["protocol_error"], codes
    assert sent < cap


# -- secrets ----------------------------------------------------------------------------------


async def test_a_refused_url_does_not_show_its_password() -> None:
    transport = PushTransport()
    for url in ("ftp://user:s3cr3t-pw@127.0.0.1/v1", "http://user:s3cr3t-pw@/v1"):
        with pytest.raises(TransportError) as info:
            await transport.open(url, {}, b"{}", 1.0)
        assert "s3cr3t-pw" not in str(info.value)
        assert "s3cr3t-pw" not in repr(info.value)
    await transport.aclose()


# -- the stream's end: cancelled mid-stream ---------------------------------------------------


async def test_a_stream_cancelled_mid_body_closes_its_connection_and_pushes_no_more() -> None:
    """Cancelled while the server still streams: the connection is closed (the server sees
    it go), not pooled, and the sink gets nothing after the cancel."""
    streaming = asyncio.Event()
    server_saw_close = asyncio.Event()

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await read_request(r)
        w.write(_SSE_HEAD)
        try:
            for i in range(100_000):
                w.write(chunk_of(chunk_frame(f" t{i}")))
                await w.drain()
                if i == 20:
                    streaming.set()
                await asyncio.sleep(0)
        except ConnectionError:
            server_saw_close.set()
            raise

    pool = ConnectionPool()
    taken: list[int] = []
    after_cancel: list[int] = []
    cancelled = False

    def sink(evs: list[TokenEvent]) -> bool:
        (after_cancel if cancelled else taken).append(len(evs))
        return True

    try:
        async with raw_upstream(handle) as url, asyncio.timeout(15):
            stream = stream_chat(_BODY, base_url=url, transport=pool.transport(), retries=0)

            async def consume() -> None:
                batches: Any = stream.batches()
                batches.take_tokens(sink)
                async for _ in batches:
                    pass

            task = asyncio.create_task(consume())
            await streaming.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            cancelled = True  # the task has seen it: the stream's reading is over
            await stream.aclose()
            await server_saw_close.wait()
    finally:
        pool.close()
    assert taken and not after_cancel
    assert not any(pool._idle.values())


# -- deadlines: push mode fires them as pull mode does ----------------------------------------


@pytest.mark.parametrize(
    ("timeouts", "shape", "expected"),
    [
        # keep-alive comments only: reads without a token do not restart the deadline
        (Timeouts(first_token=0.4), "comments", "first_token_timeout"),
        (Timeouts(idle=0.4, first_token=5.0), "two_then_silence", "idle_timeout"),
        # keep-alive comments after a token: each read restarts the idle deadline
        (Timeouts(idle=5.0, total=0.8, first_token=5.0), "one_then_comments", "total_timeout"),
        (Timeouts(total=0.6, first_token=5.0, idle=5.0), "tokens", "total_timeout"),
    ],
    ids=["first_token", "idle", "total_after_comments", "total_mid_tokens"],
)
async def test_deadlines_fire_in_push_mode_as_with_aiohttp(
    timeouts: Timeouts, shape: str, expected: str
) -> None:
    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await read_request(r)
        w.write(_SSE_HEAD)
        for i in range(10_000):
            if shape == "tokens" or (i < 2 and shape == "two_then_silence"):
                w.write(chunk_of(chunk_frame(f" t{i}")))
            elif i == 0 and shape == "one_then_comments":
                w.write(chunk_of(chunk_frame(" t0")))
            elif shape != "two_then_silence":
                w.write(chunk_of(b": keep-alive\n\n"))  # bytes, but no token
            await w.drain()
            await asyncio.sleep(0.02)

    answers = {}
    async with raw_upstream(handle) as url:
        for transport in ("push", "aiohttp"):
            async with (
                asyncio.timeout(15),
                relay(url, upstream_transport=transport, timeouts=timeouts) as server,
                ws_client(server) as client,
            ):
                sid = await client.ask("q")
                answers[transport] = (await client.until_done(sid, 10))["answer"]
    codes = {t: [e["code"] for e in a["errors"]] for t, a in answers.items()}
    assert codes["push"] == codes["aiohttp"], codes
    assert codes["push"][0] == expected
    if shape != "tokens":  # (how many tokens fit in the total budget varies)
        assert answers["push"]["text"] == answers["aiohttp"]["text"]


# -- a second response in the read that ends the first ----------------------------------------


async def test_a_smuggled_second_response_is_not_read_as_the_first_ones_body() -> None:
    """A JSON answer (read by pulls) followed, in the same write, by a response nobody asked
    for: the answer is the first body only, as aiohttp reads it (the second one's bytes
    were buffered after the first's and read as the same body)."""
    answer = (
        b'{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,'
        b'"message":{"role":"assistant","content":"plain"},"finish_reason":"stop"}]}'
    )
    extra = b'{"smuggled": true}'

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await read_request(r)
        w.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            + b"Content-Length: %d\r\n\r\n" % len(answer)
            + answer
            + b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(extra)
            + extra
        )
        await w.drain()
        await r.read()

    answers = {}
    async with raw_upstream(handle) as url, asyncio.timeout(15):
        for name, transport in (("push", PushTransport()), ("aiohttp", "aiohttp")):
            answers[name] = await _answer(url, transport)
            if isinstance(transport, PushTransport):
                await transport.aclose()
    assert answers["push"].text == answers["aiohttp"].text == "plain"
    assert [e.code for e in answers["push"].errors] == []


# -- the stale-connection retry: when a request is sent twice ---------------------------------


@pytest.mark.parametrize("answered", [False, True])
async def test_a_request_is_sent_again_only_when_no_byte_of_its_answer_came(
    answered: bool,
) -> None:
    """Pins the retry's reach: a reused connection that closes after the server READ the
    request, without a byte of answer, has it sent again on a new connection (a server
    that crashed mid-request sees it twice: RFC 9112 §9.3.1 says not to, and aiohttp
    does not for a POST; the retry is kept because a server that closes a keep-alive
    connection right after its answer, before the client saw it go, would otherwise
    fail every other request with ``retries=0``); one byte of an answer and it is never
    sent again."""
    requests = 0

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        nonlocal requests
        served = 0
        while True:
            await read_request(r)
            requests += 1
            served += 1
            if served == 2:  # the second request on this connection: read, then dropped
                if answered:
                    w.write(b"HTTP/1.1 2")
                    await w.drain()
                return
            body = chunk_frame("ok") + chunk_frame(None, "stop") + b"data: [DONE]\n\n"
            w.write(_SSE_HEAD + chunk_of(body) + chunk_of(b""))
            await w.drain()

    pool = ConnectionPool()
    try:
        async with raw_upstream(handle) as url, asyncio.timeout(15):
            first = await _answer(url, pool.transport())
            second = await _answer(url, pool.transport())
    finally:
        pool.close()
    assert first.text == "ok"
    if answered:
        assert requests == 2
        assert [e.code for e in second.errors] == ["connection_lost"]
    else:
        assert requests == 3  # sent twice: see the report
        assert second.text == "ok"


# -- the closing drain: not for a stream cancelled mid-body ----------------------------------


async def test_a_cancelled_streams_end_does_not_wait_for_the_body_to_drain(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A client cancels while the upstream still streams (slowly): the relay logs the
    cancel's ``error`` + ``done`` once the upstream response is closed. The closing drain
    (meant for the terminator after [DONE]) waited ``_DRAIN_SECONDS`` first: the cancel's
    frames came that much later than with aiohttp. The drain is made unbounded here so
    that a wait shows as a hang (bounded by the test's own timeout)."""
    import streamcite.transports.push as push

    monkeypatch.setattr(push, "_DRAIN_SECONDS", 60.0)
    first_sent = asyncio.Event()
    closed = asyncio.Event()

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await read_request(r)
        w.write(_SSE_HEAD + chunk_of(chunk_frame("one")))
        await w.drain()
        first_sent.set()
        await r.read()  # no more: until the relay closes the connection
        closed.set()

    answers = {}
    async with raw_upstream(handle) as url:
        for transport in ("push", "aiohttp"):
            first_sent.clear()
            closed.clear()
            async with (
                asyncio.timeout(10),
                relay(url, upstream_transport=transport) as server,
                ws_client(server) as client,
            ):
                sid = await client.ask("q")
                await client.until(lambda f: f.get("type") == "token", 10)
                await client.send({"type": "cancel", "stream_id": sid})
                answers[transport] = (await client.until_done(sid, 10))["answer"]
                await closed.wait()
    codes = {t: [e["code"] for e in a["errors"]] for t, a in answers.items()}
    assert codes["push"] == codes["aiohttp"] == ["cancelled"], codes
    assert answers["push"]["text"] == answers["aiohttp"]["text"] == "one"


# -- the request: what goes on the wire ------------------------------------------------------


async def test_the_request_line_and_headers_are_sent_as_aiohttp_sends_them() -> None:
    """A base URL with a space or non-ASCII path (a deployment name), a header value
    outside latin-1: aiohttp sends the target percent-encoded (UTF-8) and headers in
    UTF-8; the push transport sent raw latin-1 bytes (a space split the request line)
    and raised a bare ``UnicodeEncodeError`` for anything past U+00FF."""
    seen: dict[str, tuple[bytes, bytes]] = {}
    which = ""

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        head = await read_request(r)
        line = head.split(b"\r\n")[0]
        tag = next(h for h in head.split(b"\r\n") if h.lower().startswith(b"x-tag:"))
        seen[which] = (line, tag.split(b":", 1)[1].strip())
        body = chunk_frame("ok") + chunk_frame(None, "stop") + b"data: [DONE]\n\n"
        w.write(_SSE_HEAD + chunk_of(body) + chunk_of(b""))
        await w.drain()

    async with raw_upstream(handle) as url, asyncio.timeout(15):
        base = url + "/dép loy☃/x%2Fy"
        for which, transport in (("aiohttp", "aiohttp"), ("push", PushTransport())):
            answer = await _answer(base, transport, headers={"X-Tag": "naïve ☃"})
            assert answer.text == "ok", (which, answer.errors)
            if isinstance(transport, PushTransport):
                await transport.aclose()
    assert seen["push"] == seen["aiohttp"], seen


def test_headers_differing_only_in_case_are_sent_once() -> None:
    """A caller's ``content-length`` or ``accept`` beside the transport's own: one line
    each (two Content-Length lines make servers refuse the request, or worse, pick one)."""
    from streamcite.transports.push_request import request_head

    _, head = request_head(
        "http://u:p@127.0.0.1:9/v1",
        {"content-length": "999", "accept": "application/json", "authorization": "Bearer k"},
        2,
    )
    lines = head.decode().lower().split("\r\n")
    names = [line.split(":", 1)[0] for line in lines[1:] if line]
    assert len(names) == len(set(names)), names
    assert "content-length: 2" in lines
    assert "authorization: bearer k" in lines  # the caller's, over the URL's userinfo


# -- order: reads of tokens in the callback, the rest through the task ------------------------


def _mixed_body() -> bytes:
    """Tokens of two choices, a role-only delta, keep-alive comments, the finish chunks and
    a usage chunk after them: reads of tokens only and reads with anything else."""
    frames = [b": opening comment\n\n", chunk_frame(None, role="assistant")]
    for i in range(40):
        frames.append(chunk_frame(f" w{i}"))
        if i % 7 == 3:
            frames.append(b": keep-alive\n\n")
        if i % 11 == 5:
            frames.append(chunk_frame(f" [{i % 3 + 1}]"))
    frames.append(chunk_frame(None, "stop"))
    frames.append(
        b'data: {"id":"c","object":"chat.completion.chunk","model":"fake","choices":[],'
        b'"usage":{"prompt_tokens":5,"completion_tokens":40,"total_tokens":45}}\n\n'
    )
    frames.append(b"data: [DONE]\n\n")
    return b"".join(frames)


@pytest.mark.parametrize("cut", [1, 7, 61, 0], ids=["bytewise", "7", "61", "whole"])
async def test_relay_frames_are_the_same_however_the_body_is_cut(cut: int) -> None:
    """The same body in reads of ``cut`` bytes (0: one write): the relay's frames with the
    push transport equal aiohttp's — no token lost, doubled or moved across a non-token
    event — and seqs run without a gap."""
    body = _mixed_body()

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await read_request(r)
        w.write(_SSE_HEAD)
        pieces = [body] if not cut else [body[i : i + cut] for i in range(0, len(body), cut)]
        for piece in pieces:
            w.write(chunk_of(piece))
            await w.drain()
            if cut:
                await asyncio.sleep(0)  # (a read each, most of the time)
        w.write(chunk_of(b""))
        await w.drain()

    frames = {}
    async with raw_upstream(handle) as url:
        for transport in ("push", "aiohttp"):
            async with (
                asyncio.timeout(30),
                relay(url, upstream_transport=transport) as server,
                ws_client(server) as client,
            ):
                sid = await client.ask("q")
                await client.until_done(sid)
                frames[transport] = [_stable(f) for f in client.events(sid)]
    assert frames["push"] == frames["aiohttp"]
    seqs = [f["seq"] for f in frames["push"]]
    assert seqs == list(range(1, len(seqs) + 1))
    assert sum(1 for f in frames["push"] if f["type"] == "token") >= 40


_VOLATILE = ("ttft_ms", "stream_ms", "total_ms", "citations_ms", "timings", "stream_id")


def _stable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _stable(v) for k, v in obj.items() if k not in _VOLATILE}
    if isinstance(obj, list):
        return [_stable(v) for v in obj]
    return obj


async def test_body_after_done_is_ignored() -> None:
    """[DONE], then more tokens and 100 KB of body: the answer is what came before [DONE]
    (as with aiohttp), and whether the connection was kept (its body parsed to the end in
    the closing drain) or closed (not), the next request on the pool reads its own answer."""
    requests = 0

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        nonlocal requests
        while True:
            await read_request(r)
            requests += 1
            body = chunk_frame("before") + chunk_frame(None, "stop") + b"data: [DONE]\n\n"
            w.write(_SSE_HEAD + chunk_of(body))
            await w.drain()
            for _ in range(25):
                w.write(chunk_of(chunk_frame("AFTER" * 800)))
            w.write(chunk_of(b""))
            await w.drain()

    pool = ConnectionPool()
    try:
        async with raw_upstream(handle) as url, asyncio.timeout(15):
            pushed = [await _answer(url, pool.transport()) for _ in range(2)]
            pulled = await _answer(url, "aiohttp")
    finally:
        pool.close()
    for answer in pushed:
        assert answer.text == pulled.text == "before"
        assert [e.code for e in answer.errors] == [e.code for e in pulled.errors] == []
    assert requests == 3


# -- a log that fails in the middle of a read of tokens ----------------------------------------


async def test_a_log_failure_mid_read_ends_the_stream_as_with_aiohttp(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The log refuses the 5th append, the 2nd token of a read of three: in push mode the
    sink has logged the 1st and keeps the failure, the read goes to the task, which raises
    it where its own loop would have. The client's frames equal aiohttp's."""
    from streamcite.core.errors import StreamciteError
    from streamcite.relay.memlog import MemoryStreamLog

    real = MemoryStreamLog.append_nowait
    calls = 0

    def failing_once(self: MemoryStreamLog, sid: str, payload: bytes) -> int:
        nonlocal calls
        calls += 1
        if calls == 5:
            raise StreamciteError("the log is full", code="log_full", retryable=True)
        return real(self, sid, payload)

    monkeypatch.setattr(MemoryStreamLog, "append_nowait", failing_once)
    from streamcite.relay.pushed import PushedTokens

    take = PushedTokens.take
    refused: list[int] = []  # the reads the sink refused, at which append

    def watching(self: PushedTokens, batch: Any) -> bool:
        ok = take(self, batch)
        if not ok:
            refused.append(calls)
        return ok

    monkeypatch.setattr(PushedTokens, "take", watching)

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await read_request(r)
        w.write(_SSE_HEAD)
        for i in range(0, 12, 3):  # reads of three tokens
            w.write(chunk_of(b"".join(chunk_frame(f" t{j}") for j in range(i, i + 3))))
            await w.drain()
            await asyncio.sleep(0.01)
        w.write(chunk_of(chunk_frame(None, "stop") + b"data: [DONE]\n\n") + chunk_of(b""))
        await w.drain()

    frames = {}
    async with raw_upstream(handle) as url:
        for transport in ("push", "aiohttp"):
            calls = 0
            async with (
                asyncio.timeout(15),
                relay(url, upstream_transport=transport) as server,
                ws_client(server) as client,
            ):
                sid = await client.ask("q")
                await client.until_done(sid)
                frames[transport] = [_stable(f) for f in client.events(sid)]
    assert refused == [5], refused  # the sink's own append failed, mid-read
    assert frames["push"] == frames["aiohttp"]
    errors = [f for f in frames["push"] if f["type"] == "error"]
    assert errors and "log" in errors[0]["message"]


@pytest.mark.parametrize(
    "bad",
    [b"ffffffffffffffffffff\r\n", b"zz\r\nxx\r\n", b"5\r\nabcdefgh\r\n"],
    ids=["size_overflow", "not_hex", "longer_than_its_size"],
)
async def test_a_broken_chunk_after_a_token_is_a_typed_error(bad: bytes) -> None:
    """A chunk size past 64 bits, not hex, or a chunk longer than its size: the push
    transport reports ``protocol_error`` at once, the token before it kept, the message
    quoted (aiohttp, for the record, waits for its idle timeout on all three)."""

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await read_request(r)
        w.write(_SSE_HEAD + chunk_of(chunk_frame("one")) + bad)
        await w.drain()
        await r.read()

    async with raw_upstream(handle) as url, asyncio.timeout(15):
        answer = await _answer(url, PushTransport(), timeouts=Timeouts(idle=5.0))
    assert answer.text == "one"
    codes = [e.code for e in answer.errors]
    assert codes[:1] == ["protocol_error"], codes
    assert "\r" not in answer.errors[0].message


# -- closing the pool: connections in use too --------------------------------------------------


async def test_closing_the_pool_closes_connections_in_use() -> None:
    """The relay closes its pool at shutdown, after giving streams 5 s to end: a stream
    still reading kept its connection open (the pool closed only idle ones) and, closed
    later, put it back into the closed pool, where nothing would ever close it. As an
    aiohttp session's close does, every connection is closed; none is pooled after."""
    streaming = asyncio.Event()
    closed = asyncio.Event()

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await read_request(r)
        w.write(_SSE_HEAD + chunk_of(chunk_frame("one")))
        await w.drain()
        streaming.set()
        await r.read()  # until the client closes
        closed.set()

    pool = ConnectionPool()
    async with raw_upstream(handle) as url, asyncio.timeout(10):
        resp = await pool.transport().open(url + "/chat/completions", {}, b"{}", 5.0)
        assert await resp.read_chunk()
        await streaming.wait()
        pool.close()
        await closed.wait()  # the server saw the connection go
        with pytest.raises(TransportError):
            while await resp.read_chunk():
                pass
        await resp.aclose()
    assert not any(pool._idle.values())


async def test_an_endless_trailer_is_refused_before_it_is_buffered() -> None:
    """After the last chunk, a trailer field that never ends (no [DONE] came, so the reader
    waits for the body's end): httptools gathers it whole, as a header; refused once past
    ``MAX_HEAD_BYTES`` with the token before it kept, not at the idle timeout."""
    sent = 0
    cap = 64 * MAX_HEAD_BYTES

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        nonlocal sent
        await read_request(r)
        w.write(_SSE_HEAD + chunk_of(chunk_frame("one")) + b"0\r\nX-Trailer: ")
        while sent < cap:
            w.write(b"a" * 8192)
            sent += 8192
            await w.drain()
        await r.read()

    async with raw_upstream(handle) as url, asyncio.timeout(20):
        answer = await _answer(url, PushTransport(), timeouts=Timeouts(idle=4.0))
    assert answer.text == "one"
    assert [e.code for e in answer.errors][:1] == ["protocol_error"], answer.errors
    assert sent < cap


@pytest.mark.parametrize("shape", ["silent", "upgrade"])
async def test_no_answer_or_a_protocol_switch_fails_as_with_aiohttp(
    shape: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A server that reads nothing and answers nothing: the first-token deadline covers
    the wait for the head (the request cut, its connection closed); a 101 answer to the
    POST is a ``protocol_error`` (httptools' upgrade exception is no HttpParserError: it
    escaped ``data_received``, asyncio logged a fatal error and the stream said
    ``connection_lost: ... 72``, the parser's offset)."""

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        if shape == "upgrade":
            await read_request(r)
            w.write(
                b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: evil\r\nConnection: Upgrade\r\n\r\n"
            )
            w.write(chunk_of(chunk_frame("raw")))
            await w.drain()
        await r.read()  # until the client closes (never, for "silent", until it gives up)

    answers = {}
    async with raw_upstream(handle) as url, asyncio.timeout(15):
        for name, transport in (("push", PushTransport()), ("aiohttp", "aiohttp")):
            answers[name] = await _answer(url, transport, timeouts=Timeouts(first_token=0.5))
            if isinstance(transport, PushTransport):
                await transport.aclose()
    codes = {k: [e.code for e in a.errors] for k, a in answers.items()}
    assert answers["push"].text == answers["aiohttp"].text == ""
    if shape == "silent":
        assert codes["push"] == codes["aiohttp"], codes
    else:
        assert codes["push"] == ["protocol_error"], codes
        assert "Fatal error" not in caplog.text


async def test_the_stale_connection_retry_is_made_on_a_new_connection() -> None:
    """The retry promised "a new one" but took the next idle connection, as stale as the
    first when the server dropped them all: two kept connections, each dropping its second
    request, and the third request failed instead of being answered on a new one."""
    both_in_use = asyncio.Event()
    in_use = 0

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        nonlocal in_use
        await read_request(r)
        in_use += 1
        if in_use == 2:
            both_in_use.set()
        await both_in_use.wait()  # (so that the two first requests hold two connections)
        body = chunk_frame("ok") + chunk_frame(None, "stop") + b"data: [DONE]\n\n"
        w.write(_SSE_HEAD + chunk_of(body) + chunk_of(b""))
        await w.drain()
        await read_request(r)  # the second request on this connection: read, then dropped

    pool = ConnectionPool()
    try:
        async with raw_upstream(handle) as url, asyncio.timeout(15):
            first = await asyncio.gather(*(_answer(url, pool.transport()) for _ in range(2)))
            assert pool.opened == 2 and [a.text for a in first] == ["ok", "ok"]
            third = await _answer(url, pool.transport())
    finally:
        pool.close()
    assert third.text == "ok" and not third.errors, third.errors
    assert pool.opened == 3
