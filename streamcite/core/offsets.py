"""Offset conversion between UTF-8 bytes, code points (Python str) and UTF-16 units.

Google reports claim positions in UTF-8 bytes; Python slices by code point; the
browser's JavaScript strings count UTF-16 code units. :class:`OffsetMap` converts
offsets of one text between the three.

Two strategies give the same answers, and the map picks one itself: a handful of
conversions re-code a prefix in C (a grounding reply has a few claims, the answer
may have 20,000 characters), and once a text has been asked more than
``_RECODE_LIMIT`` times, per-character tables are built in one pass so each further
conversion costs O(log n). ASCII text (bytes = characters = UTF-16 units) needs
neither.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate, repeat
from operator import add, rshift

from streamcite.core.surrogates import SURROGATE

__all__ = ["OffsetMap", "byte_to_char", "char_to_byte", "char_to_utf16"]

# Conversions answered by re-coding before the tables pay for themselves.
_RECODE_LIMIT = 16


class OffsetMap:
    """Maps offsets of one text between bytes, characters and UTF-16 units.

    Offsets are clamped to the text; a byte offset inside a character maps to that
    character's start (:meth:`byte_to_char`) or past it (:meth:`byte_to_char_end`).

    >>> m = OffsetMap("né 🙂")
    >>> m.char_to_byte(2), m.char_to_utf16(4), m.byte_to_char(2), m.byte_to_char_end(2)
    (3, 5, 1, 2)

    ``tables=True`` builds the tables at once, ``False`` never does; by default the
    map decides from how much it is used.
    """

    __slots__ = ("_astral", "_byte_starts", "_calls", "_u16_starts", "_utf8", "byte_length", "text")

    def __init__(self, text: str, *, tables: bool | None = None):
        self.text = text
        self._byte_starts: list[int] | None = None
        self._u16_starts: list[int] | None = None
        self._astral = False
        if text.isascii():
            self._utf8 = b""
            self.byte_length = len(text)
            self._calls = -1  # never builds tables: all three units coincide
            return
        self._utf8 = text.encode("utf-8", "surrogatepass")
        self.byte_length = len(self._utf8)
        self._astral = _ASTRAL.search(text) is not None
        self._calls = -1 if tables is False else 0
        if tables or SURROGATE.search(text):
            # Re-coding cannot decode a prefix holding a lone surrogate: tables only.
            self._build_tables()

    def _build_tables(self) -> None:
        # Byte offset at which each character starts, plus the end sentinel; the
        # per-character lengths come from C-level map()s, not a Python loop.
        lens = list(map(len, map(str.encode, self.text, _UTF8, _SURROGATEPASS)))
        self._byte_starts = [0, *accumulate(lens)]
        if self._astral:
            # UTF-16 units per character: (utf8_len >> 2) + 1 is 1 for 1–3 bytes, 2 for 4.
            units = map(add, map(rshift, lens, repeat(2)), repeat(1))
            self._u16_starts = [0, *accumulate(units)]
        self._calls = -1

    def _tables(self) -> bool:
        """Whether this conversion should use the tables (building them when due)."""
        if self._byte_starts is not None:
            return True
        if self._calls < 0:
            return False
        self._calls += 1
        if self._calls > _RECODE_LIMIT:
            self._build_tables()
            return True
        return False

    def byte_to_char(self, byte_offset: int) -> int:
        """Character index of the character containing ``byte_offset`` (clamped)."""
        if byte_offset <= 0:
            return 0
        if byte_offset >= self.byte_length:
            return len(self.text)
        if not self._utf8:
            return byte_offset
        if self._tables():
            assert self._byte_starts is not None
            return bisect_right(self._byte_starts, byte_offset) - 1
        # A cut inside a character leaves a partial sequence, which "ignore" drops.
        return len(self._utf8[:byte_offset].decode("utf-8", "ignore"))

    def byte_to_char_end(self, byte_offset: int) -> int:
        """Like :meth:`byte_to_char` for an exclusive end: rounds up inside a character."""
        i = self.byte_to_char(byte_offset)
        inside = (
            0 < byte_offset < self.byte_length
            and bool(self._utf8)
            and self._utf8[byte_offset] & 0xC0 == 0x80  # a continuation byte
        )
        return i + 1 if inside else i

    def char_to_byte(self, char_offset: int) -> int:
        char_offset = max(0, min(char_offset, len(self.text)))
        if not self._utf8:
            return char_offset
        if self._tables():
            assert self._byte_starts is not None
            return self._byte_starts[char_offset]
        return len(self.text[:char_offset].encode("utf-8", "surrogatepass"))

    def char_to_utf16(self, char_offset: int) -> int:
        char_offset = max(0, min(char_offset, len(self.text)))
        if not self._astral:
            return char_offset
        if self._tables():
            assert self._u16_starts is not None
            return self._u16_starts[char_offset]
        return len(self.text[:char_offset].encode("utf-16-le", "surrogatepass")) // 2


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")  # characters that are 2 UTF-16 units
_UTF8 = repeat("utf-8")
_SURROGATEPASS = repeat("surrogatepass")


def byte_to_char(text: str, byte_offset: int) -> int:
    return OffsetMap(text).byte_to_char(byte_offset)


def char_to_byte(text: str, char_offset: int) -> int:
    return len(text[:char_offset].encode("utf-8", "surrogatepass"))


def char_to_utf16(text: str, char_offset: int) -> int:
    return len(text[:char_offset].encode("utf-16-le", "surrogatepass")) // 2
