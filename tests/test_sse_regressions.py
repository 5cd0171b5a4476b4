"""Regressions of the SSE decoder and the aiohttp transport (issue 10, section 3).

Each test failed on the code before the fix; the property tests hold for any input.
"""

from __future__ import annotations

import json

import orjson
import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

try:
    from conftest import ServeFn
except ImportError:  # tests/ imported as a package
    from tests.conftest import ServeFn

from streamcite.core.api import ChatStreamParser
from streamcite.core.errors import EventTooLarge
from streamcite.core.sse import OVERFLOW, SSEDecoder
from streamcite.events import TokenEvent
from streamcite.transports.aiohttp import AiohttpTransport
from streamcite.transports.base import TransportError


def _raw(decoder: SSEDecoder, reads: list[bytes]) -> list[object]:
    out: list[object] = []
    for r in reads:
        out.extend("OVERFLOW" if e is OVERFLOW else e for e in decoder.feed_raw(r))
    decoder.close()
    return out


def _full(decoder: SSEDecoder, reads: list[bytes]) -> list[object]:
    out: list[object] = []
    for r in reads:
        try:
            out.extend(decoder.feed(r))
        except EventTooLarge as exc:
            out.extend(exc.events)
            out.append("OVERFLOW")  # where in the read: not part of the contract
    decoder.close()
    return out


def _norm(raw: list[object]) -> list[object]:
    """Raw items as (type, data): plain events may come as bytes or as tuples."""
    return [x if x == "OVERFLOW" else (b"", x) if type(x) is bytes else x[:2] for x in raw]  # type: ignore[index]


def _reads(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def _chunk(text: str, **extra: object) -> bytes:
    obj = {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": text}}]}
    return b"data: " + orjson.dumps({**obj, **extra}) + b"\n\n"


# -- max_event_size does not depend on the read split ---------------------------------------


def test_many_data_lines_event_same_verdict_whole_and_split() -> None:
    # 6 MiB of raw event in 64 KiB reads vs one read, limit 4 MiB: the data alone is
    # under the limit (the old whole path passed it), the block is over (old split
    # path dropped it). Now both drop it and keep the next event.
    line = b"data: ab\n"  # 9 bytes raw, 3 bytes of data
    big = line * (6 * 1024 * 1024 // 9) + b"\n"
    stream = big + b"data: next\n\n"
    limit = 4 * 1024 * 1024
    assert len(big) > 6 * 1024 * 1024 - 20 and 3 * (len(big) // 9) < limit
    whole = _raw(SSEDecoder(limit), [stream])
    split = _raw(SSEDecoder(limit), _reads(stream, 64 * 1024))
    assert whole == split == ["OVERFLOW", b"next"]


def test_comments_and_ignored_lines_count_the_same_on_both_paths() -> None:
    block = b": " + b"c" * 600 + b"\nfoo: " + b"f" * 600 + b"\ndata: d\n\n"
    stream = block + b"data: after\n\n"
    whole = _raw(SSEDecoder(1024), [stream])
    split = _raw(SSEDecoder(1024), _reads(stream, 100))
    assert whole == split == ["OVERFLOW", b"after"]


def test_block_of_exactly_the_limit_passes_whatever_the_split() -> None:
    block = b"data: " + b"y" * 1018  # 1024 bytes of block
    stream = block + b"\n\n"
    for cut in range(len(stream) + 1):
        got = _raw(SSEDecoder(1024), [stream[:cut], stream[cut:]])
        assert got == [b"y" * 1018], cut


_lines = st.sampled_from(
    [
        b"data: abc",
        b"data:" + b"z" * 40,
        b"data",
        b": comment " + b"k" * 30,
        b"id: 3",
        b"event: e",
        b"retry: 12",
        b"foo: " + b"q" * 25,
        b"",
        b"data: " + b"w" * 70,
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(_lines, max_size=40),
    eol=st.sampled_from([b"\n", b"\r\n", b"\r"]),
    limit=st.integers(20, 200),
    cuts=st.lists(st.integers(0, 4000), max_size=12),
)
def test_any_split_gives_the_same_raw_events(
    lines: list[bytes], eol: bytes, limit: int, cuts: list[int]
) -> None:
    stream = eol.join(lines) + eol
    bounds = sorted({c % (len(stream) + 1) for c in cuts})
    reads = [stream[a:b] for a, b in zip([0, *bounds], [*bounds, len(stream)], strict=True)]
    whole = _norm(_raw(SSEDecoder(limit), [stream]))
    assert _norm(_raw(SSEDecoder(limit), reads)) == whole
    assert _norm(_raw(SSEDecoder(limit), _reads(stream, 1))) == whole
    full = [e for e in _full(SSEDecoder(limit), [stream]) if e != "OVERFLOW"]
    assert [e for e in _full(SSEDecoder(limit), reads) if e != "OVERFLOW"] == full


# -- retry at close, huge retry, no exception for any input -------------------------------


def test_retry_line_of_unterminated_final_block_counts_at_close() -> None:
    d = SSEDecoder()
    assert d.feed(b"data: a\n\nretry: 5000\ndata: lost") != []
    assert d.close() == []
    assert d.truncated and d.retry == 5000


def test_retry_of_unfinished_line_does_not_count() -> None:
    d = SSEDecoder()
    d.feed(b"retry: 5000")
    d.close()
    assert d.retry is None


def test_retry_of_5000_digits_does_not_raise_nor_lose_tokens() -> None:
    p = ChatStreamParser()
    stream = _chunk("Hi") + b"retry: " + b"9" * 5000 + b"\n\n" + _chunk(" there")
    events = p.feed(stream)
    assert [e.text for e in events if type(e) is TokenEvent] == ["Hi", " there"]
    d = SSEDecoder()
    d.feed(b"retry: " + b"0" * 6000 + b"42\n\n")
    assert d.retry == 42
    d.feed(b"retry: " + b"7" * 5000 + b"\n\n")
    assert d.retry == 10**4000 - 1  # saturated, not raised


def test_sse_command_prints_a_retry_beyond_64_bits() -> None:
    # The CLI serialises each event with orjson, which refuses integers beyond 64 bits:
    # a huge retry used to crash it (TypeError) and lose the rest of the stream.
    from click.testing import CliRunner

    from streamcite.cli import main

    stdin = b"retry: " + b"9" * 30 + b"\ndata: x\n\ndata: y\n\n"
    result = CliRunner().invoke(main, ["sse"], input=stdin, catch_exceptions=False)
    assert result.exit_code == 0
    lines = [json.loads(line) for line in result.stdout_bytes.splitlines()]
    assert [(e["data"], e["retry"]) for e in lines] == [("x", 10**30 - 1), ("y", 10**30 - 1)]


@settings(max_examples=400, deadline=None)
@given(data=st.binary(max_size=600), cuts=st.lists(st.integers(0, 600), max_size=8))
def test_no_exception_escapes_for_any_bytes(data: bytes, cuts: list[int]) -> None:
    bounds = sorted({c % (len(data) + 1) for c in cuts})
    reads = [data[a:b] for a, b in zip([0, *bounds], [*bounds, len(data)], strict=True)]
    d = SSEDecoder(max_event_size=64)
    p = ChatStreamParser(max_event_size=64)
    for r in reads:
        d.feed_raw(r)
        p.feed(r)
    d.close()
    p.close()
    p.done_event()


@settings(max_examples=200, deadline=None)
@given(
    fields=st.lists(
        st.tuples(st.sampled_from([b"retry", b"id", b"event", b"data"]), st.binary(max_size=30)),
        max_size=10,
    ),
    digits=st.integers(0, 6000),
)
def test_no_exception_for_any_field_values(fields: list[tuple[bytes, bytes]], digits: int) -> None:
    body = b"".join(
        k + b": " + v.replace(b"\n", b"").replace(b"\r", b"") + b"\n" for k, v in fields
    )
    stream = body + b"retry: " + b"1" * digits + b"\n\n" + body
    p = ChatStreamParser()
    p.feed(stream)
    p.close()


# -- the overflow marker is not an event type ----------------------------------------------


def test_event_named_nul_overflow_is_not_an_overflow() -> None:
    stream = b"event: \x00overflow\ndata:\n\n"
    d = SSEDecoder()
    assert [(e.event, e.data) for e in d.feed(stream)] == [("\x00overflow", "")]
    p = ChatStreamParser()
    events = p.feed(_chunk("a") + stream + _chunk("b"))
    assert [e.type for e in events if e.type == "error"] == []
    assert p.answer.text == "ab"


def test_real_overflow_still_reported() -> None:
    p = ChatStreamParser(max_event_size=100)
    events = p.feed(_chunk("a") + b"data: " + b"x" * 200 + b"\n\n" + _chunk("b"))
    assert [getattr(e, "code", None) for e in events if e.type == "error"] == ["event_too_large"]
    assert p.answer.text == "ab"


# -- nothing after [DONE], even when it has an id line -------------------------------------


def test_done_with_id_line_stops_the_answer_in_the_same_read() -> None:
    p = ChatStreamParser()
    p.feed(_chunk("Hi"))
    events = p.feed(b"id: 7\ndata: [DONE]\n\n" + _chunk(" leaked"))
    assert [e for e in events if type(e) is TokenEvent] == []
    assert p.done and p.answer.text == "Hi"


def test_done_with_event_line_stops_the_answer() -> None:
    p = ChatStreamParser()
    p.feed(_chunk("Hi") + b"event: message\ndata: [DONE]\n\n" + _chunk(" leaked"))
    assert p.answer.text == "Hi"


# -- aiohttp transport: Fetch's MIME type, the real header named, SSE request headers --------


async def _open(serve: ServeFn, ctype: str) -> tuple[object, dict[str, str]]:
    seen: dict[str, str] = {}

    async def handler(request: web.Request) -> web.StreamResponse:
        seen.update(request.headers)
        resp = web.Response(body=_chunk("x") + b"data: [DONE]\n\n")
        resp.headers["Content-Type"] = ctype
        return resp

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    url = await serve(app)
    transport = AiohttpTransport()
    try:
        resp = await transport.open(f"{url}/v1/chat/completions", {"X-Mine": "1"}, b"{}", 5.0)
        try:
            return (resp.content_type, getattr(resp, "check_event_stream", None)), seen
        finally:
            await resp.aclose()
    finally:
        await transport.aclose()


async def test_aiohttp_extracts_the_mime_type_as_fetch_does(serve: ServeFn) -> None:
    (ctype, check), seen = await _open(serve, "application/json, text/event-stream; charset=utf-8")
    assert ctype == "text/event-stream"
    assert check is not None
    check()  # an event stream: no error
    assert seen["Accept"] == "text/event-stream"
    assert seen["Cache-Control"] == "no-store"
    assert seen["X-Mine"] == "1"


async def test_aiohttp_names_the_real_header_when_not_an_event_stream(serve: ServeFn) -> None:
    (ctype, check), _ = await _open(serve, "text/html; charset=ISO-8859-1")
    assert ctype == "text/html"
    assert check is not None
    try:
        check()
    except TransportError as exc:
        assert exc.code == "unexpected_content_type"
        assert "text/html; charset=ISO-8859-1" in str(exc)
    else:
        raise AssertionError("expected unexpected_content_type")


# -- regressions found in review (each failed before its fix) ---------------------------


def _splits(data: bytes) -> list[list[bytes]]:
    """Whole, byte by byte, and cut at 7."""
    return [[data], [data[i : i + 1] for i in range(len(data))], [data[:7], data[7:]]]


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
    for parts in _splits(stream):
        d = SSEDecoder(max_event_size=100)
        got = []
        for part in parts:
            try:
                got += d.feed(part)
            except EventTooLarge as exc:
                got += exc.events
        assert [e.data for e in got] == ["a\nb"]
