"""The SSE decoder's CRLF data-lines route (Gemini: each event one ``data:`` line ended by
CRLF CRLF; few, large events that straddle reads): ``feed_raw`` gives exactly what the
general reading gives — the same items, the same overflow markers, the same state left
for the next read and for ``close`` — for any stream near that shape, split anywhere;
and the route is taken on a Gemini-shaped stream (a test fails if it is silently off).

The streams are written here (Gemini's ``streamGenerateContent?alt=sse`` shape: JSON with
``", "`` and ``": "`` separators, non-ASCII text, ``\\r\\n\\r\\n`` after every event)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from streamcite.core.api import ChatStreamParser
from streamcite.core.events import TokenEvent
from streamcite.core.sse import OVERFLOW, SSEDecoder

TEXT = st.lists(st.sampled_from([*'ab \n\r"\\é😀[]:', "data: ", "\r\n\r\n"]), max_size=40).map(
    "".join
)


def _chunk(text: str, n: int, last: bool) -> bytes:
    """One Gemini chunk as the API writes it (``json.dumps`` escapes CR and LF)."""
    cand: dict[str, Any] = {"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}
    if last:
        cand["finishReason"] = "STOP"
    obj = {
        "candidates": [cand],
        "usageMetadata": {
            "promptTokenCount": 9,
            "candidatesTokenCount": n,
            "totalTokenCount": 9 + n,
        },
        "modelVersion": "gemini-2.5-flash",
        "responseId": "r-test",
    }
    return json.dumps(obj, ensure_ascii=False).encode()


DATA = st.builds(lambda t, r: _chunk(t * r, r, False), TEXT, st.integers(1, 60))
ODD = st.sampled_from(
    [b"data:{}", b"data: a\r\ndata: b", b": keep-alive", b"id: 7\r\ndata: x", b"data: x\ry",
     b"data: x\ny", b"retry: 5", b"data", b"event: e\r\ndata: y", b"da", b""]
)  # fmt: skip
SMALL = st.sampled_from([b'{"a": 1}', b"{}", b'"\\r\\n"', b"[DONE]", b"x" * 45])
DATA_BLOCK = st.builds(lambda d: b"data: " + d, st.one_of(DATA, SMALL, SMALL))
# Mostly the route's shape, so that most reads take it, with an odd block or line end now
# and then (a read holding one goes the general way whole).
BLOCK = st.one_of(DATA_BLOCK, DATA_BLOCK, DATA_BLOCK, DATA_BLOCK, DATA_BLOCK, ODD)
SEP = st.sampled_from([b"\r\n\r\n"] * 20 + [b"\n\n", b"\r\r", b"\r\n\r\n\r\n", b"\n\r\n", b"\r\n"])


def _reads(stream: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(stream)) for c in cuts})
    return [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]


class _General(SSEDecoder):
    """The decoder with the route off."""

    def _data_lines(self, data: bytes) -> None:
        return None


def _decode(reads: list[bytes], limit: int, cls: type[SSEDecoder]) -> list[Any]:
    """Every read's items (overflow markers by identity), the state each leaves, close."""
    d = cls(limit)
    out: list[Any] = []
    for r in reads:
        items = d.feed_raw(r)
        out.append(["OVERFLOW" if i is OVERFLOW else i for i in items])
        out.append((bytes(d._tail), d.pending, d._skip_lf, d._discarding, d.last_event_id))
    out.append((d.close(), d.truncated, d.retry))
    return out


@pytest.mark.source_only  # (subclasses the decoder: not possible compiled)
@settings(max_examples=400, deadline=None)
@given(
    bom=st.booleans(),
    blocks=st.lists(BLOCK, min_size=1, max_size=8),
    seps=st.lists(SEP, min_size=8, max_size=8),
    cuts=st.lists(st.integers(0, 3000), max_size=8) | st.lists(st.integers(0, 200), max_size=8),
    limit=st.sampled_from([16 * 1024 * 1024, 300, 40]),
)
# A LF-ended block after the CRLF ones, in the same read; blocks over the limit.
@example(False, [b"data: A", b"data: B"], [b"\r\n\r\n", b"\n\n"], [], 40)
@example(False, [b"data: " + b"x" * 45, b"data: y"], [b"\r\n\r\n"] * 2, [], 40)
@example(False, [b"data: " + b"x" * 45], [b"\r\n\r\n"], [20], 40)
# The route's pending line, then a read the general way takes (a LF), then the route again.
@example(False, [b"data: {}", b"data: abcx\ndata: yz"], [b"\r\n\r\n"] * 2, [20, 27], 400)
def test_crlf_data_lines_read_as_the_general_way(
    bom: bool, blocks: list[bytes], seps: list[bytes], cuts: list[int], limit: int
) -> None:
    stream = (b"\xef\xbb\xbf" if bom else b"") + b"".join(
        b + s for b, s in zip(blocks, seps, strict=False)
    )
    reads = _reads(stream, cuts)
    assert _decode(reads, limit, SSEDecoder) == _decode(reads, limit, _General)


@settings(max_examples=200, deadline=None)
@given(
    texts=st.lists(TEXT, min_size=1, max_size=6),
    repeat=st.integers(1, 400),
    cuts=st.lists(st.integers(0, 40000), max_size=12),
)
def test_gemini_stream_split_anywhere_gives_the_whole_reads_events(
    texts: list[str], repeat: int, cuts: list[int]
) -> None:
    """Real-shaped Gemini streams (events of up to ~20 KB), split anywhere: the same
    events as the whole body read at once, and the same as the standard's reading."""
    body = b"".join(
        b"data: " + _chunk(t * repeat, i, i == len(texts) - 1) + b"\r\n\r\n"
        for i, t in enumerate(texts)
    )
    whole = SSEDecoder().feed_raw(body)
    assert len(whole) == len(texts)
    d = SSEDecoder()
    split = [item for r in _reads(body, cuts) for item in d.feed_raw(r)]
    assert split == whole
    assert [e.data.encode() for e in SSEDecoder().feed(body)] == whole


def _gemini_body() -> bytes:
    """A Gemini answer of five events, two of them larger than a 4 KiB read."""
    texts = ["Ça commence. ", "Long " * 1200, "😀 and more ", "middle " * 900, "the end."]
    return b"".join(
        b"data: " + _chunk(t, i, i == len(texts) - 1) + b"\r\n\r\n" for i, t in enumerate(texts)
    )


def test_a_gemini_stream_in_4k_reads_takes_the_route(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails if the route is silently off: no 4 KiB read of a Gemini-shaped stream goes the
    general way, and the parser still gives every token."""
    body = _gemini_body()
    reads = [body[i : i + 4096] for i in range(0, len(body), 4096)]
    assert len(reads) > 3
    calls: list[bytes] = []
    general = SSEDecoder._feed

    def counting(self: SSEDecoder, chunk: bytes, full: bool, cr: bool = True) -> Any:
        calls.append(chunk)
        return general(self, chunk, full, cr)

    monkeypatch.setattr(SSEDecoder, "_feed", counting)
    p = ChatStreamParser(dialect="gemini")
    events = [e for r in reads for e in p.feed(r)] + p.close()
    assert calls == []
    text = "".join(e.text for e in events if isinstance(e, TokenEvent))
    assert text == "Ça commence. " + "Long " * 1200 + "😀 and more " + "middle " * 900 + "the end."
    assert [e.type for e in events].count("finish") == 1
