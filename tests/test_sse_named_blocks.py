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


LAST = st.sampled_from(
    [b"data: [DONE]", b"data: [DONE]", b"data:[DONE]", b"id: 3\ndata: [DONE]", b": c\ndata: [DONE]"]
)


@settings(max_examples=200, deadline=None)
@given(
    blocks=st.lists(NAMED, min_size=0, max_size=8),
    last=LAST,
    sep=st.sampled_from([b"\n\n", b"\n\n\n", b"\r\n\r\n"]),
    cuts=st.lists(st.integers(0, 300), max_size=3),
)
def test_named_blocks_then_a_done_line_read_as_the_standard(
    blocks: list[bytes], last: bytes, sep: bytes, cuts: list[int]
) -> None:
    """Cohere's ending: named blocks, then ``data: [DONE]`` (read in the same pass)."""
    stream = b"".join(b + sep for b in [*blocks, last])
    points = sorted({min(c, len(stream)) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    raw, full = _raw(chunks), _full(chunks)
    assert [r[:2] for r in raw] == [f[:2] for f in full]


def test_a_named_stream_is_read_by_the_named_path(monkeypatch: Any) -> None:
    """Every read of a stream of named blocks (ending as Cohere's does) goes the C-level
    way: fails if that path is silently skipped."""
    taken: list[bool] = []
    for method in ("_named", "_named_then_data"):
        real = getattr(SSEDecoder, method)

        def spy(self: SSEDecoder, region: bytes, real: Any = real) -> Any:
            got = real(self, region)
            taken.append(got is not None)
            return got

        monkeypatch.setattr(SSEDecoder, method, spy)
    block = b'event: content-delta\ndata: {"type":"content-delta","delta":{"text":"Hi"}}\n\n'
    stream = block * 60 + b"data: [DONE]\n\n"
    d = SSEDecoder()
    reads = [stream[i : i + 1000] for i in range(0, len(stream), 1000)]
    items = [item for r in reads for item in d.feed_raw(r)]
    assert len(items) == 61 and items[-1] == b"[DONE]"
    assert items[0] == (b"content-delta", block[27:-2], "", None)
    assert len(taken) >= len(reads) and all(taken)  # (the last read: both)
