"""The inlined hot loop (core/fastpath.py) against the general path, on marker-heavy
streams: its two inlined keep-mode marker steps (a tail ``[n]`` held, confirmed by
the next token) and the template slices it decodes itself (escapes, non-ASCII,
control characters, invalid UTF-8) give exactly the general path's events."""

from __future__ import annotations

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

try:
    from _streams import general_path_events as _general
    from _streams import normalise
except ImportError:  # tests/ imported as a package
    from tests._streams import general_path_events as _general
    from tests._streams import normalise

from streamcite.core.api import ChatStreamParser
from streamcite.core.events import Event, TokenEvent

_MARKERY = [
    " [1]",
    "[2]",
    " see [12]",
    "[0]",
    "[01]",
    "[12345]",
    "[1, 2]",
    "[3](http://x)",
    "(",
    "(x",
    "]",
    "[",
    "[4",
    "a [5] b [6]",
    "[²]",
    "[١]",
    " x",
    "",
    '"',
    "\\",
    "🙏 [7]",
    "\u2028",
    "\x01",
]
_words = st.one_of(st.sampled_from(_MARKERY), st.text(max_size=6))

_ENVELOPE = {"id": "c", "object": "chat.completion.chunk", "model": "m"}


def _frame(text: str) -> bytes:
    choice = {"index": 0, "delta": {"content": text}, "finish_reason": None}
    return b"data: " + orjson.dumps({**_ENVELOPE, "choices": [choice]}) + b"\n\n"


def _fast(stream: bytes, cuts: list[int]) -> tuple[list[Event], ChatStreamParser]:
    bounds = sorted({c % (len(stream) + 1) for c in cuts})
    p = ChatStreamParser()
    got: list[Event] = []
    for a, b in zip([0, *bounds], [*bounds, len(stream)], strict=True):
        got.extend(p.feed(stream[a:b]))
    got.extend(p.close())
    return got, p


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    words=st.lists(_words, min_size=1, max_size=40),
    cuts=st.lists(st.integers(0, 20_000), max_size=6),
    finish=st.booleans(),
)
def test_marker_heavy_streams_fast_equals_general(
    words: list[str], cuts: list[int], finish: bool
) -> None:
    # A few plain tokens first, so that the template is proven and the loop runs.
    frames = [_frame(w) for w in ["a", "b", "c", *words]]
    if finish:
        fin = {**_ENVELOPE, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        frames.append(b"data: " + orjson.dumps(fin) + b"\n\ndata: [DONE]\n\n")
    stream = b"".join(frames)
    got, p = _fast(stream, cuts)
    assert normalise(got) == normalise(_general(stream))
    assert p.answer.text == "".join(e.text for e in got if isinstance(e, TokenEvent))


def test_template_slices_the_loop_must_not_take_go_the_full_way() -> None:
    """Raw control characters and invalid UTF-8 in a template slice are reported by
    the full path (invalid JSON), exactly as without the fast path."""
    good = b"".join(_frame(w) for w in ["a", "b", "c", "d"])
    bad_ctrl = _frame("x").replace(b'"x"', b'"\x01"')
    bad_utf8 = _frame("x").replace(b'"x"', b'"\xff"')
    surrogate = _frame("x").replace(b'"x"', b'"\xed\xa0\x80"')
    for bad in (bad_ctrl, bad_utf8, surrogate):
        stream = good + bad + _frame("e")
        got, p = _fast(stream, [])
        assert normalise(got) == normalise(_general(stream))
        assert [e.code for e in p.answer.errors if e.code != "truncated"] == ["invalid_json"]
        assert p.answer.text == "abcde"
