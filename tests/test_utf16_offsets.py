"""A span's UTF-16 offsets, asked in any order, are the text's own UTF-16 offsets."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from streamcite.core.api import ChatStreamParser

_TEXT = st.text(alphabet=st.sampled_from("aé€😀𝄞 漢"), min_size=0, max_size=60)


def _interpreter_with(text: str) -> object:
    p = ChatStreamParser(dialect="anthropic")
    delta = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": text},
    }
    start = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "text", "text": ""},
    }
    for obj in (start, delta):
        p.feed(b"event: " + obj["type"].encode() + b"\ndata: " + orjson.dumps(obj) + b"\n\n")  # type: ignore[attr-defined]
    return p._interpreter


@settings(max_examples=200, deadline=None)
@given(_TEXT, st.lists(st.integers(min_value=0, max_value=60), max_size=12))
def test_utf16_offsets_in_any_order(text: str, asks: list[int]) -> None:
    it = _interpreter_with(text)
    for char in asks:
        char = min(char, len(text))
        want = len(text[:char].encode("utf-16-le")) // 2
        assert it.utf16_at(char) == want  # type: ignore[attr-defined]
