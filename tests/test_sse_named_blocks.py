"""The SSE decoder's named-blocks path (``event: NAME`` + one ``data:`` line, found with C
splits and joins): ``feed_raw`` gives exactly the events ``feed`` (the standard's line by
line reading) gives, for any mix of blocks near that shape, split anywhere."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streamcite.core.sse import OVERFLOW, SSEDecoder

NAME = st.sampled_from([b"content_block_delta", b"", b"x y", b"event: z", b"data: w", b"\xc3\xa9"])
VALUE = st.sampled_from([b'{"a":1}', b"", b"data: x", b"event: y", b" lead", b"[DONE]", b":"])
LINE = st.one_of(
    st.builds(lambda v: b"event: " + v, NAME),
    st.builds(lambda v: b"data: " + v, VALUE),
    st.sampled_from([b"event:x", b"data:y", b"id: 7", b": comment", b"retry: 10", b"data", b""]),
)
NAMED = st.builds(lambda n, v: b"event: " + n + b"\ndata: " + v, NAME, VALUE)
BLOCK = st.one_of(NAMED, NAMED, NAMED, st.lists(LINE, min_size=1, max_size=4).map(b"\n".join))


def _raw(chunks: list[bytes]) -> list[Any]:
    d = SSEDecoder()
    out: list[Any] = []
    for c in chunks:
        for item in d.feed_raw(c):
            assert item is not OVERFLOW
            name, data, lid, retry = (b"", item, None, None) if isinstance(item, bytes) else item
            out.append((name.decode("utf-8", "replace") or "message", data.decode(), lid, retry))
    return out


def _full(chunks: list[bytes]) -> list[Any]:
    d = SSEDecoder()
    return [(e.event, e.data, e.id, e.retry) for c in chunks for e in d.feed(c)]


@settings(max_examples=300, deadline=None)
@given(
    blocks=st.lists(BLOCK, min_size=1, max_size=12),
    seps=st.lists(st.sampled_from([b"\n\n", b"\n\n", b"\n\n\n", b"\r\n\r\n"]), min_size=12),
    cuts=st.lists(st.integers(0, 400), max_size=4),
)
def test_named_blocks_read_as_the_standard(
    blocks: list[bytes], seps: list[bytes], cuts: list[int]
) -> None:
    stream = b"".join(b + s for b, s in zip(blocks, seps, strict=False))
    points = sorted({min(c, len(stream)) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    raw, full = _raw(chunks), _full(chunks)
    # feed_raw leaves the id and retry out of a plain data-only event: compare those as None.
    assert [r[:2] for r in raw] == [f[:2] for f in full]
    for r, f in zip(raw, full, strict=True):
        if r[2] is not None:
            assert r[2:] == f[2:]
