"""The SSE decoder's route for a read that ends at a block boundary (what a relay feeds:
one upstream read, often one event): ``feed_raw`` gives exactly what the general reading
gives (the same reads through the general reading, which the route skips), whatever the blocks, line ends, BOM, ids,
retries and event-size limit; and the route is taken for the usual one-event reads."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamcite.core.sse import OVERFLOW, SSEDecoder

NAME = st.sampled_from([b"content_block_delta", b"", b"x y", b"data: w", b"\xc3\xa9"])
VALUE = st.sampled_from([b'{"a":1}', b"", b"data: x", b" lead", b"[DONE]", b":", b"x" * 40])
LINE = st.one_of(
    st.builds(lambda v: b"event: " + v, NAME),
    st.builds(lambda v: b"data: " + v, VALUE),
    st.sampled_from([b"event:x", b"data:y", b"id: 7", b": c", b"retry: 10", b"data", b"\r"]),
)
NAMED = st.builds(lambda n, v: b"event: " + n + b"\ndata: " + v, NAME, VALUE)
DATA = st.builds(lambda v: b"data: " + v, VALUE)
BLOCK = st.one_of(NAMED, DATA, st.lists(LINE, min_size=1, max_size=4).map(b"\n".join))


def _items(d: SSEDecoder, reads: list[bytes], general: bool = False) -> list[Any]:
    out: list[Any] = []
    for r in reads:
        for item in d._feed(r, False) if general else d.feed_raw(r):
            out.append("OVERFLOW" if item is OVERFLOW else item)
    return out


@settings(max_examples=400, deadline=None)
@given(
    blocks=st.lists(BLOCK, min_size=1, max_size=10),
    seps=st.lists(st.sampled_from([b"\n\n", b"\n\n", b"\n\n\n", b"\r\n\r\n"]), min_size=10),
    group=st.lists(st.integers(1, 3), min_size=10, max_size=10),
    bom=st.booleans(),
    limit=st.sampled_from([16, 30, 1 << 20]),
)
def test_block_aligned_reads_give_what_the_general_reading_gives(
    blocks: list[bytes], seps: list[bytes], group: list[int], bom: bool, limit: int
) -> None:
    whole = [b + s for b, s in zip(blocks, seps, strict=False)]
    if bom:
        whole[0] = b"\xef\xbb\xbf" + whole[0]
    reads: list[bytes] = []
    k = 0
    for n in group:  # one to three whole blocks per read
        if k < len(whole):
            reads.append(b"".join(whole[k : k + n]))
            k += n
    assert _items(SSEDecoder(limit), reads) == _items(SSEDecoder(limit), reads, general=True)


@pytest.mark.parametrize(
    "read",
    [
        b'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\n',
        b'event: content_block_delta\ndata: {"type":"content_block_delta"}\n\n',
    ],
)
def test_one_event_reads_skip_the_general_reading(
    read: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fails if the route is silently disabled: the general reading is entered only for
    a read that needs it (a BOM to strip, a CR)."""
    calls: list[bytes] = []
    general = SSEDecoder._feed

    def counting(self: SSEDecoder, chunk: bytes, full: bool, cr: bool = True) -> Any:
        calls.append(chunk)
        return general(self, chunk, full, cr)

    monkeypatch.setattr(SSEDecoder, "_feed", counting)
    d = SSEDecoder()
    first = d.feed_raw(read)
    for _ in range(5):
        assert d.feed_raw(read) == first
    assert calls == []
    d.feed_raw(b"data: x\r\n\r\n")  # CRLF data lines: their own route
    assert calls == []
    d.feed_raw(b"id: 1\r\ndata: x\r\n\r\n")  # a CR in another shape: the general reading
    assert len(calls) == 1
    bom = SSEDecoder()
    assert bom.feed_raw(b"\xef\xbb\xbf" + read) == first  # the BOM: the general reading
    assert len(calls) == 2
