"""Gemini's byte offsets → characters: the one-walk batch (:meth:`ByteOffsets.to_chars`)
gives what converting offset by offset (:meth:`ByteOffsets.to_char`) and what decoding
the UTF-8 prefix give, for any text (astral characters too), any growth,
any offsets (inside a character, repeated, across checkpoints, going back)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from streamcite.core import byte_offsets
from streamcite.core.byte_offsets import ByteOffsets

_TEXT = st.text(
    # (No lone surrogate: the answer's text never holds one, core.surrogates replaces them.)
    alphabet=st.sampled_from(["a", " ", "é", "°", "€", "中", "🙂", "\n"]),
    max_size=60,
)


def _reference(text: str, b: int, end: bool) -> int:
    """The character at byte ``b``: the characters whose bytes start before it, less
    one when ``b`` is inside a character and the start is asked."""
    enc = text.encode("utf-8", "surrogatepass")
    starts = sum(1 for x in enc[:b] if not 0x80 <= x < 0xC0)
    inside = b < len(enc) and 0x80 <= enc[b] < 0xC0
    return starts - (inside and not end)


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(_TEXT, min_size=1, max_size=4),
    picks=st.lists(st.lists(st.tuples(st.floats(0, 1), st.booleans()), max_size=8), max_size=4),
    step=st.sampled_from([3, 8, byte_offsets.STEP]),
)
def test_batch_is_offset_by_offset(
    pieces: list[str], picks: list[list[tuple[float, bool]]], step: int
) -> None:
    saved, byte_offsets.STEP = byte_offsets.STEP, step  # checkpoints and long walks, small
    try:
        _check(pieces, picks)
    finally:
        byte_offsets.STEP = saved


def _check(pieces: list[str], picks: list[list[tuple[float, bool]]]) -> None:
    one, batch = ByteOffsets(), ByteOffsets()
    text = ""
    for i, piece in enumerate(pieces):
        text += piece
        n = one.grow(text)
        assert batch.grow(text) == n == len(text.encode("utf-8", "surrogatepass"))
        asked = picks[i] if i < len(picks) else []
        needed = sorted({(round(f * n), end) for f, end in asked})
        want = [_reference(text, b, end) for b, end in needed]
        assert [one.to_char(b, end=end) for b, end in needed] == want
        assert batch.to_chars(needed) == want
        one.release()
        batch.release()
