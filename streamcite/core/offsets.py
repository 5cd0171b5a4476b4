"""Offset conversion between UTF-8 bytes, code points (Python str) and UTF-16 units.

Google reports claim positions in UTF-8 bytes; Python slices by code point; the
browser's JavaScript strings count UTF-16 code units. One pass builds a table so
many offsets convert in O(log n) each.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate

__all__ = ["OffsetMap", "byte_to_char", "char_to_byte", "char_to_utf16"]


class OffsetMap:
    """Maps offsets of one text between bytes, characters and UTF-16 units."""

    __slots__ = ("_byte_starts", "_u16_starts", "text")

    def __init__(self, text: str):
        self.text = text
        # Byte offset at which each character starts, plus the end sentinel.
        self._byte_starts = [0, *accumulate(_utf8_len(c) for c in text)]
        self._u16_starts = [0, *accumulate(2 if ord(c) > 0xFFFF else 1 for c in text)]

    def byte_to_char(self, byte_offset: int) -> int:
        """Character index of the character containing ``byte_offset`` (clamped).

        An offset inside a multi-byte character maps to that character's start;
        an offset past the end maps to ``len(text)``.
        """
        if byte_offset <= 0:
            return 0
        if byte_offset >= self._byte_starts[-1]:
            return len(self.text)
        return bisect_right(self._byte_starts, byte_offset) - 1

    def byte_to_char_end(self, byte_offset: int) -> int:
        """Like :meth:`byte_to_char` for an exclusive end: rounds up inside a character."""
        i = self.byte_to_char(byte_offset)
        if i < len(self.text) and self._byte_starts[i] < byte_offset:
            return i + 1
        return i

    def char_to_byte(self, char_offset: int) -> int:
        char_offset = max(0, min(char_offset, len(self.text)))
        return self._byte_starts[char_offset]

    def char_to_utf16(self, char_offset: int) -> int:
        char_offset = max(0, min(char_offset, len(self.text)))
        return self._u16_starts[char_offset]

    @property
    def byte_length(self) -> int:
        return self._byte_starts[-1]


def _utf8_len(c: str) -> int:
    o = ord(c)
    return 1 if o < 0x80 else 2 if o < 0x800 else 3 if o < 0x10000 else 4


def byte_to_char(text: str, byte_offset: int) -> int:
    return OffsetMap(text).byte_to_char(byte_offset)


def char_to_byte(text: str, char_offset: int) -> int:
    return len(text[:char_offset].encode("utf-8", "surrogatepass"))


def char_to_utf16(text: str, char_offset: int) -> int:
    return len(text[:char_offset].encode("utf-16-le", "surrogatepass")) // 2
