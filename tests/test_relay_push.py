"""The relay's push transport: the same frames as aiohttp's, tokens logged in the
connection's callback, connections reused, failures and timeouts typed as before.

Real loopback servers throughout (aiohttp upstreams, raw asyncio servers for the shapes
aiohttp will not send); nothing is mocked but counting wrappers.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("httptools")

from streamcite.pipeline import stream_chat
from streamcite.pipeline.timeouts import Timeouts
from streamcite.relay.pushed import PushedTokens
from streamcite.transports.base import TransportError
from streamcite.transports.push import MAX_HEAD_BYTES, ConnectionPool, PushTransport
from tests._raw_upstream import chunk_of, raw_upstream, read_request
from tests._relay_fixtures import (
    chunk_frame,
    fake_upstream,
    relay,
    seqs_of,
    text_of,
    ws_client,
)

_VOLATILE = ("ttft_ms", "stream_ms", "total_ms", "citations_ms", "timings", "stream_id")


def _stable(obj: Any) -> Any:
    """A frame without what differs between two runs (times, ids)."""
    if isinstance(obj, dict):
        return {k: _stable(v) for k, v in obj.items() if k not in _VOLATILE}
    if isinstance(obj, list):
        return [_stable(v) for v in obj]
    return obj


async def _one_answer(transport: str, **up: Any) -> tuple[list[dict[str, Any]], Any]:
    async with (
        fake_upstream(**up) as upstream,
        relay(upstream.url + "/v1", upstream_transport=transport) as server,
        ws_client(server) as client,
    ):
        sid = await client.ask("What does the handbook say?")
        await client.until_done(sid)
        return client.events(sid), server.relay.producer.push_pool


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many tokens the push sink logged (in the connection's callback)."""
    counts: list[int] = []
    take = PushedTokens.take

    def counting(self: PushedTokens, batch: Any) -> bool:
        ok = take(self, batch)
        if ok:
            counts.append(len(batch))
        return ok

    monkeypatch.setattr(PushedTokens, "take", counting)
    return counts


@pytest.mark.parametrize("delay", [0.0, 0.002])
async def test_push_gives_the_frames_aiohttp_gives(delay: float, taken: list[int]) -> None:
    tokens = [f" w{i}" for i in range(60)] + [" [1]", " end [2]."]
    pulled, none = await _one_answer("aiohttp", tokens=tokens, delay=delay)
    assert none is None and not taken
    pushed, pool = await _one_answer("push", tokens=tokens, delay=delay)
    assert isinstance(pool, ConnectionPool)
    assert [_stable(f) for f in pushed] == [_stable(f) for f in pulled]
    assert text_of(pushed) == "".join(tokens)
    assert seqs_of(pushed) == list(range(1, len(pushed) + 1))
    # the tokens went through the callback, not the producer's task (when they come a
    # read each: all but those that share a read with the finish chunk)
    assert sum(taken) >= (len(tokens) - 5 if delay else 1), sum(taken)


async def test_auto_is_push_when_httptools_is_installed(taken: list[int]) -> None:
    async with (
        fake_upstream(delay=0.001) as up,
        relay(up.url + "/v1") as server,
        ws_client(server) as client,
    ):
        pool = server.relay.producer.push_pool
        assert isinstance(pool, ConnectionPool)
        for _ in range(3):
            sid = await client.ask("again")
            await client.until_done(sid)
            assert text_of(client.events(sid)) == up.answer
        assert up.requests == 3
        assert pool.opened == 1  # one keep-alive connection for the three
    assert sum(taken) > 0


async def test_an_upstream_error_reads_as_with_aiohttp() -> None:
    frames = {}
    for transport in ("aiohttp", "push"):
        events, _ = await _one_answer(
            transport, status=429, error_body=b'{"error":{"message":"slow down"}}'
        )
        frames[transport] = [_stable(e) for e in events]
    assert frames["push"] == frames["aiohttp"]
    error = next(e for e in frames["push"] if e["type"] == "error")
    assert error["code"] == "rate_limited" and "slow down" in error["message"]


# -- raw upstreams: shapes a well-behaved server does not send ------------------------------


def _sse(head: bytes = b"", *, chunked: bool = True) -> bytes:
    te = b"Transfer-Encoding: chunked\r\n" if chunked else b""
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n" + te + head + b"\r\n"


async def _events(url: str, transport: Any = None, **kw: Any) -> list[Any]:
    events = []
    async with stream_chat(
        {"model": "m", "messages": [{"role": "user", "content": "q"}]},
        base_url=url,
        transport=transport or PushTransport(),
        **kw,
    ) as stream:
        async for ev in stream:
            events.append(ev)
    return events


def _codes(events: list[Any]) -> list[str]:
    return [e.code for e in events[-1].answer.errors]


async def test_interim_responses_and_a_close_delimited_body() -> None:
    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await read_request(r)
        w.write(b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n")
        w.write(_sse(b"Connection: close\r\n", chunked=False))
        for tok in ("Hello", " there"):
            w.write(chunk_frame(tok))
            await w.drain()
        w.write(chunk_frame(None, "stop"))
        await w.drain()  # then closed: the body's end

    async with raw_upstream(handle) as url:
        events = await _events(url)
    assert events[-1].answer.text == "Hello there"
    assert not events[-1].answer.errors


async def test_a_connection_cut_mid_body_is_connection_lost() -> None:
    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await read_request(r)
        w.write(_sse() + chunk_of(chunk_frame("partial")))
        await w.drain()

    async with raw_upstream(handle) as url:
        events = await _events(url)
        pulled = await _events(url, "aiohttp")
    answer = events[-1].answer
    assert answer.text == "partial"
    assert _codes(events) == _codes(pulled)
    assert _codes(events)[0] == "connection_lost"


@pytest.mark.parametrize(
    ("head", "code"),
    [
        (b"X-Big: " + b"a" * MAX_HEAD_BYTES + b"\r\n", "protocol_error"),
        (b"".join(b"X-H%d: v\r\n" % i for i in range(200)), "protocol_error"),
        (b"Content-Encoding: gzip\r\n", "protocol_error"),
    ],
)
async def test_hostile_heads_are_typed_errors(head: bytes, code: str) -> None:
    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await read_request(r)
        w.write(_sse(head) + chunk_of(chunk_frame("x")))
        await w.drain()
        await asyncio.sleep(5)  # (closed by the client, or the test ends it)

    async with raw_upstream(handle) as url:
        events = await _events(url)
    assert [e.code for e in events[-1].answer.errors] == [code]


async def test_garbage_instead_of_http_is_a_typed_error() -> None:
    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await read_request(r)
        w.write(b"\x1b[31mNOT HTTP\r\n\r\n")
        await w.drain()

    async with raw_upstream(handle) as url:
        events = await _events(url)
    (error,) = events[-1].answer.errors
    assert error.code == "protocol_error" and "\x1b" not in error.message


async def test_idle_timeout_in_push_mode() -> None:
    stalled = asyncio.Event()

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await read_request(r)
        w.write(_sse() + chunk_of(chunk_frame("one")))
        await w.drain()
        stalled.set()
        await asyncio.sleep(30)

    timeouts = Timeouts(idle=0.3, first_token=5.0)
    answers = {}
    async with raw_upstream(handle) as url:
        for transport in ("push", "aiohttp"):
            async with (
                asyncio.timeout(10),
                relay(url, upstream_transport=transport, timeouts=timeouts) as server,
                ws_client(server) as client,
            ):
                sid = await client.ask("q")
                answers[transport] = (await client.until_done(sid))["answer"]
    assert stalled.is_set()
    codes = {t: [e["code"] for e in a["errors"]] for t, a in answers.items()}
    assert codes["push"] == codes["aiohttp"] and codes["push"][0] == "idle_timeout"
    assert answers["push"]["text"] == answers["aiohttp"]["text"] == "one"


async def test_a_stale_pooled_connection_is_retried_once_on_a_new_one() -> None:
    served = 0

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        nonlocal served
        await read_request(r)
        served += 1
        body = chunk_frame("ok") + chunk_frame(None, "stop") + b"data: [DONE]\n\n"
        w.write(_sse() + chunk_of(body) + chunk_of(b""))
        await w.drain()
        # keep-alive announced, but the server closes the idle connection at once

    pool = ConnectionPool()
    try:
        async with raw_upstream(handle) as url:
            for _ in range(2):
                async with stream_chat(
                    {"model": "m", "messages": []}, base_url=url, transport=pool.transport()
                ) as stream:
                    answer = await stream.until_done()
                assert answer.text == "ok" and not answer.errors
    finally:
        pool.close()
    assert served == 2


async def test_header_injection_is_refused_before_anything_is_sent() -> None:
    transport = PushTransport()
    with pytest.raises(ValueError, match="invalid character"):
        await transport.open("http://127.0.0.1:9/v1", {"X-A": "b\r\nEvil: 1"}, b"{}", 1.0)
    with pytest.raises(TransportError):
        await transport.open("ftp://127.0.0.1/v1", {}, b"{}", 1.0)
    await transport.aclose()


async def test_no_token_is_logged_from_the_callback_after_a_cancel() -> None:
    """Between ``cancel()`` and the stream's task running, the socket may deliver more
    tokens: the push sink refuses them (they go to the task, which is being cancelled),
    so no token follows a cancel, as when the task reads them."""
    from streamcite.core.events import TokenEvent

    async with (
        fake_upstream(tokens=[f" t{i}" for i in range(200)], delay=0.02) as up,
        relay(up.url + "/v1", upstream_transport="push") as server,
        ws_client(server) as client,
    ):
        sid = await client.ask("q")
        await client.until(lambda o: o.get("stream_id") == sid and o.get("type") == "token")
        producer = server.relay.producer
        stream = producer.streams[sid]
        assert stream.pushed is not None
        logged = stream.taps.last_seq if stream.taps is not None else 0
        producer.cancel(stream, "cancelled")
        late = [TokenEvent(index=0, text=" late", display=" late")]
        assert stream.pushed.take(late) is False  # (the old sink logged it)
        assert stream.taps is not None and stream.taps.last_seq == logged
        done = await client.until_done(sid)
        events = client.events(sid)
    assert " late" not in text_of(events)
    assert [e["code"] for e in done["answer"]["errors"]] == ["cancelled"]
    kinds = [e["type"] for e in events]
    assert "token" not in kinds[kinds.index("error") :]
