"""Gemini's UTF-8 byte offsets → character offsets of the answer, linear. Sans-I/O.

A ``groundingSupports`` segment counts UTF-8 bytes of the candidate's text. The answer
grows; its byte length is counted once per character (:meth:`ByteOffsets.grow`), and
offsets are converted walking forward from the last one converted, with a checkpoint
every :data:`STEP` characters: an offset before the walker restarts from the nearest
checkpoint, never from 0, so offsets in any order (reversed, overlapping) cost about
the text once per pass plus :data:`STEP` per backward jump. Nothing is kept per
character (per-character tables cost some 70 bytes per character of answer), and the
text is held only during a pass (a reference kept would make the answer's in-place
growth copy it).
"""

from __future__ import annotations

from bisect import bisect_right

__all__ = ["STEP", "ByteOffsets"]

STEP = 16384
"""Characters between two checkpoints of the walk."""


class ByteOffsets:
    """Byte → character offsets of a growing text.

    >>> b = ByteOffsets()
    >>> b.grow("né 🙂!")
    9
    >>> b.to_char(5, end=False), b.to_char(3, end=False), b.to_char(5, end=True)
    (3, 2, 4)
    """

    __slots__ = ("_chars", "_mark_bytes", "_mark_chars", "byte", "byte_length", "char", "text")

    def __init__(self) -> None:
        self.text = ""
        """The text during a pass (:meth:`grow` sets it, :meth:`release` drops it)."""
        self.byte_length = 0
        self._chars = 0  # characters counted into byte_length
        self.char = 0
        self.byte = 0
        self._mark_bytes = [0]
        self._mark_chars = [0]

    def grow(self, text: str) -> int:
        """The text as it stands now (the old one plus what was appended): its UTF-8
        length, counting only the new characters."""
        self.text = text
        new = text[self._chars :]
        if new:
            self.byte_length += (
                len(new) if new.isascii() else len(new.encode("utf-8", "surrogatepass"))
            )
            self._chars = len(text)
        return self.byte_length

    def release(self) -> None:
        self.text = ""

    def _advance(self, need: int) -> None:
        piece = self.text[self.char : self.char + need].encode("utf-8", "surrogatepass")[:need]
        whole = piece.decode("utf-8", "ignore")  # a cut character at the end is left out
        self.char += len(whole)
        self.byte += len(piece) if len(whole) == len(piece) else len(whole.encode("utf-8"))
        if self.char >= self._mark_chars[-1] + STEP:
            self._mark_bytes.append(self.byte)
            self._mark_chars.append(self.char)

    def to_char(self, b: int, *, end: bool) -> int:
        """The character at byte ``b``; inside a character: its start, or past it (``end``)."""
        if b < self.byte:
            i = bisect_right(self._mark_bytes, b) - 1
            self.byte, self.char = self._mark_bytes[i], self._mark_chars[i]
        while b - self.byte > STEP:
            before = self.byte
            self._advance(STEP)
            if self.byte == before:
                break
        self._advance(b - self.byte)
        return self.char + 1 if end and self.byte < b else self.char

    def to_chars(self, needed: list[tuple[int, bool]]) -> list[int]:
        """:meth:`to_char` of each ``(byte, end)`` of ``needed`` (ascending), in one walk:
        the text up to the last offset is encoded once and its characters counted
        between one offset and the next (each stretch decoded once), no walk
        per offset. A walk longer than :data:`STEP` goes offset by offset.

        >>> b = ByteOffsets()
        >>> b.grow("né 🙂!")
        9
        >>> b.to_chars([(0, False), (2, False), (2, True), (4, True), (9, True)])
        [0, 1, 2, 3, 5]
        """
        if not needed:
            return []
        first, last = needed[0][0], needed[-1][0]
        if first < self.byte:
            i = bisect_right(self._mark_bytes, first) - 1
            self.byte, self.char = self._mark_bytes[i], self._mark_chars[i]
        base_b, base_c = self.byte, self.char
        if last - base_b > STEP:
            return [self.to_char(b, end=end) for b, end in needed]
        piece = self.text[base_c : base_c + last - base_b].encode("utf-8", "surrogatepass")
        chars: list[int] = []
        if piece.isascii():  # a byte is a character
            chars = [base_c + b - base_b for b, _ in needed]
            self.byte, self.char = last, base_c + last - base_b
        else:
            # Walked from character start to character start, each stretch decoded
            # (UTF-8 decoding runs over ASCII a word at a time): its length is the
            # characters it holds. An offset inside a character is at its start, or past
            # it (``end``).
            at, counted, size = 0, 0, len(piece)
            for b, end in needed:
                rel = start = b - base_b
                while start < size and 0x80 <= piece[start] < 0xC0:
                    start -= 1  # back to the start of the character ``rel`` is in
                if start > at:
                    counted += len(piece[at:start].decode("utf-8", "surrogatepass"))
                    at = start
                chars.append(base_c + counted + (end and start < rel))
            self.byte = base_b + at
            self.char = base_c + counted
        if self.char >= self._mark_chars[-1] + STEP:
            self._mark_bytes.append(self.byte)
            self._mark_chars.append(self.char)
        return chars
