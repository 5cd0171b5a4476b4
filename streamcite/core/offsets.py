"""Offset conversion between UTF-8 bytes, code points (Python str) and UTF-16 units.

Google reports claim positions in UTF-8 bytes; Python slices by code point; the
browser's JavaScript strings count UTF-16 code units. One pass builds a table so
many offsets convert in O(log n) each.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate, repeat
from operator import add, rshift

__all__ = ["OffsetMap", "byte_to_char", "char_to_byte", "char_to_utf16"]


class OffsetMap:
    """Maps offsets of one text between bytes, characters and UTF-16 units."""

    __slots__ = ("_byte_starts", "_u16_starts", "text")

    def __init__(self, text: str):
        self.text = text
        self._byte_starts: list[int] | None = None
        self._u16_starts: list[int] | None = None
        if text.isascii():
            return  # all three units coincide: no tables at all
        # Byte offset at which each character starts, plus the end sentinel; the
        # per-character lengths come from C-level map()s, not a Python loop.
        lens = list(map(len, map(str.encode, text, _UTF8, _SURROGATEPASS)))
        self._byte_starts = [0, *accumulate(lens)]
        if _ASTRAL.search(text):
            # UTF-16 units per character: (utf8_len >> 2) + 1 is 1 for 1–3 bytes, 2 for 4.
            units = map(add, map(rshift, lens, repeat(2)), repeat(1))
            self._u16_starts = [0, *accumulate(units)]

    def byte_to_char(self, byte_offset: int) -> int:
        """Character index of the character containing ``byte_offset`` (clamped).

        An offset inside a multi-byte character maps to that character's start;
        an offset past the end maps to ``len(text)``.
        """
        if byte_offset <= 0:
            return 0
        starts = self._byte_starts
        if starts is None:
            return min(byte_offset, len(self.text))
        if byte_offset >= starts[-1]:
            return len(self.text)
        return bisect_right(starts, byte_offset) - 1

    def byte_to_char_end(self, byte_offset: int) -> int:
        """Like :meth:`byte_to_char` for an exclusive end: rounds up inside a character."""
        i = self.byte_to_char(byte_offset)
        starts = self._byte_starts
        if starts is not None and i < len(self.text) and starts[i] < byte_offset:
            return i + 1
        return i

    def char_to_byte(self, char_offset: int) -> int:
        char_offset = max(0, min(char_offset, len(self.text)))
        return char_offset if self._byte_starts is None else self._byte_starts[char_offset]

    def char_to_utf16(self, char_offset: int) -> int:
        char_offset = max(0, min(char_offset, len(self.text)))
        return char_offset if self._u16_starts is None else self._u16_starts[char_offset]

    @property
    def byte_length(self) -> int:
        return len(self.text) if self._byte_starts is None else self._byte_starts[-1]


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")  # characters that are 2 UTF-16 units
_UTF8 = repeat("utf-8")
_SURROGATEPASS = repeat("surrogatepass")


def byte_to_char(text: str, byte_offset: int) -> int:
    return OffsetMap(text).byte_to_char(byte_offset)


def char_to_byte(text: str, char_offset: int) -> int:
    return len(text[:char_offset].encode("utf-8", "surrogatepass"))


def char_to_utf16(text: str, char_offset: int) -> int:
    return len(text[:char_offset].encode("utf-16-le", "surrogatepass")) // 2
