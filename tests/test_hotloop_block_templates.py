"""The Anthropic and Cohere hot loops with the templates a block's start writes and
Anthropic's paddings: whatever blocks start (text, thinking, of any index, in any order),
whatever deltas follow (of a started block or not, text or thinking, escaped or not,
padded with spaces, tabs or anything else before the last brace), however the events are
cut into reads, the events and the answer are the general way's (every event parsed)."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamcite.core.dialects.anthropic as anthropic_mod
from streamcite.core.sse import RawEvent
from tests._fast_and_general import count_loads
from tests.test_dialect_hotloop import _general, _hot

PADS = [b"", b" ", b"   ", b" " * 64, b" " * 65, b"\t", b" \t ", b"x", b"\x0b", b"\n"]


def _start(dialect: str, kind: str, idx: int) -> RawEvent:
    if dialect == "anthropic":
        block = {"type": "content_block_start", "index": idx, "content_block": {"type": kind}}
        return (b"content_block_start", orjson.dumps(block), "", None)
    content = {"message": {"content": {"type": kind, kind: ""}}}
    return (
        b"content-start",
        orjson.dumps({"type": "content-start", "index": idx, "delta": content}),
        "",
        None,
    )


def _delta(dialect: str, kind: str, idx: int, enc: bytes, pad: bytes) -> RawEvent:
    if dialect == "anthropic":
        key = b"text" if kind == "text" else b"thinking"
        data = b'{"type":"content_block_delta","index":%d,"delta":{"type":"%s_delta","%s":"%s"}%s}' % (
            idx, key, key, enc, pad,
        )  # fmt: skip
        return (b"content_block_delta", data, "", None)
    data = b'{"type":"content-delta","index":%d,"delta":{"message":{"content":{"%s":"%s"}}}%s}' % (
        idx, kind.encode(), enc, pad,
    )  # fmt: skip
    return (b"content-delta", data, "", None)


def _prelude(dialect: str) -> list[RawEvent]:
    if dialect == "anthropic":
        start = {"type": "message_start", "message": {"id": "m", "model": "c"}}
        return [(b"message_start", orjson.dumps(start), "", None)]
    return [(b"message-start", orjson.dumps({"type": "message-start", "id": "c"}), "", None)]


STEP = st.one_of(
    st.tuples(st.just("start"), st.sampled_from(["text", "thinking", "other"]), st.integers(0, 2)),
    st.tuples(
        st.just("delta"),
        st.sampled_from(["text", "thinking"]),
        st.integers(0, 2),
        st.text(max_size=8),
        st.booleans(),
        st.sampled_from(PADS),
    ),
)


@settings(max_examples=300, deadline=None)
@given(
    dialect=st.sampled_from(["anthropic", "cohere"]),
    steps=st.lists(STEP, min_size=1, max_size=20),
    reads=st.integers(1, 6),
)
def test_block_templates_same_events(dialect: str, steps: list[Any], reads: int) -> None:
    raw = _prelude(dialect)
    for step in steps:
        if step[0] == "start":
            raw.append(_start(dialect, step[1], step[2]))
            continue
        _, kind, idx, text, ascii_escapes, pad = step
        enc = json.dumps(text) if ascii_escapes else orjson.dumps(text).decode()
        raw.append(_delta(dialect, kind, idx, enc[1:-1].encode("utf-8", "surrogatepass"), pad))
    assert _hot(dialect, raw, reads) == _general(dialect, raw)


def test_padded_deltas_are_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Anthropic's padded text deltas (spaces, up to many, or tabs) are read by their
    bytes like the others: only the prelude is parsed."""
    calls = count_loads(monkeypatch, anthropic_mod)
    raw = [*_prelude("anthropic"), _start("anthropic", "text", 1)]
    pads = [b"", b" ", b" " * 10, b" " * 64, b" " * 100, b"\t", b" \t"]
    raw += [_delta("anthropic", "text", 1, b"w%d" % i, pads[i % len(pads)]) for i in range(70)]
    out, answer = _hot("anthropic", raw)
    assert answer.text == "".join(f"w{i}" for i in range(70))
    assert len(calls) == 2  # the message's start and the block's
    assert (out, answer) == _general("anthropic", raw)
