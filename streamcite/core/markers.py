"""Streaming footnote detector: finds ``[n]``, ``[n, m]``, ``[n][m]`` across deltas.

Fed one choice's token texts in order, it reports each complete marker as soon as
it is known to be one, with its character offset in the raw text, and produces the
text to display under a marker mode:

- ``keep``: display is the raw text;
- ``strip``: markers are removed;
- ``superscript`` or a callable ``number -> str``: each number is rendered.

A marker is ``[`` + one or more comma-separated footnote numbers (1–4 digits, no
leading zero) + ``]``, not followed by ``(`` (that would be a markdown link). So a
complete ``[n]`` at the very end of a delta waits for one more character (or the
end of the text) before it is confirmed. In strip/render mode only the shortest
possible partial marker is held back, and released as soon as it cannot be one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeAlias

__all__ = [
    "FootnoteDetector",
    "MarkerMode",
    "find_markers",
    "footnote_numbers",
    "render_markers",
    "render_superscript",
    "strip_markers",
]

MarkerMode: TypeAlias = str | Callable[[int], str]

# THE footnote grammar, the one every module uses (the streaming scanner below
# implements the same rule by hand, and a property test holds the two together):
# "[" + comma-separated numbers (1–4 digits, no leading zero; spaces after a
# comma) + "]", not followed by "(" (a markdown link).
_NUMBERS = r"[1-9][0-9]{0,3}(?:, *[1-9][0-9]{0,3})*"
_MARKER = re.compile(r"\[(" + _NUMBERS + r")\](?!\()")
# Horizontal space before a marker goes with it when markers are stripped or
# rendered ("Cameron [1]." → "Cameron." / "Cameron¹."), as the detector does.
# Matched from the first blank of a run only (the lookbehind): tried from every blank, a
# long run of blanks before a "[" that is no marker took quadratic time (a hostile
# upstream's 60,000 blanks: seconds), for the same matches.
_SPACED_MARKER = re.compile(r"(?<![ \t])[ \t]*\[(" + _NUMBERS + r")\](?!\()")
# A complete marker that ends the text: it still awaits its next character.
_TAIL_MARKER = re.compile(r"\[(" + _NUMBERS + r")\]\Z")
# The usual complete tail marker of a token, "[1]" … "[199]", and its number: one dict
# lookup instead of a scan and int() (core/fastpath.py; others go the detector's way).
TAIL_MARKERS: dict[str, int] = {f"[{i}]": i for i in range(1, 200)}
_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
_MAX_DIGITS = 4
_PARTIAL = -1
_SPACE = " \t"
_INVALID = -2


def render_superscript(number: int) -> str:
    """``3`` → ``³``: a compact rendering of a footnote for terminals and plain text."""
    return str(number).translate(_SUPERSCRIPT)


def find_markers(text: str) -> list[tuple[int, int, list[int]]]:
    """Every complete footnote marker of a whole text: ``[(start, end, numbers), ...]``.

    >>> find_markers("Paris [1], Lyon [2, 3]. See [4](http://x) and [0].")
    [(6, 9, [1]), (16, 22, [2, 3])]
    """
    return [
        (m.start(), m.end(), [int(n) for n in m.group(1).split(",")])
        for m in _MARKER.finditer(text)
    ]


def footnote_numbers(text: str) -> list[int]:
    """The footnote numbers a whole text cites, in order, repeats kept.

    >>> footnote_numbers("a [2] b [1, 2]")
    [2, 1, 2]
    """
    return [int(n) for m in _MARKER.finditer(text) for n in m.group(1).split(",")]


def strip_markers(raw: str) -> tuple[str, list[int]]:
    """``raw`` without its markers (and the spaces before them), plus an offset map.

    The map gives, for each character kept, its index in ``raw``, with one extra
    entry ``len(raw)`` so an end offset maps too.

    >>> strip_markers("Hi [1].")
    ('Hi.', [0, 1, 6, 7])
    """
    out: list[str] = []
    char_map: list[int] = []
    pos = 0
    for m in _SPACED_MARKER.finditer(raw):
        out.append(raw[pos : m.start()])
        char_map.extend(range(pos, m.start()))
        pos = m.end()
    out.append(raw[pos:])
    char_map.extend(range(pos, len(raw)))
    char_map.append(len(raw))
    return "".join(out), char_map


def render_markers(text: str, mode: MarkerMode) -> str:
    """A whole text's markers as a marker mode displays them (what the detector streams).

    >>> render_markers("Paris [1, 2].", "superscript")
    'Paris¹².'
    >>> render_markers("Paris [1].", "strip")
    'Paris.'
    """
    if mode == "keep":
        return text
    if mode == "strip":
        return _SPACED_MARKER.sub("", text)
    render = render_superscript if mode == "superscript" else mode
    if not callable(render):
        raise ValueError(f"unknown marker mode {mode!r}: keep, strip, superscript or a callable")
    return _SPACED_MARKER.sub(
        lambda m: "".join(render(int(n)) for n in m.group(1).split(",")), text
    )


def _scan(s: str, p: int, nums: list[int]) -> int:
    """Parse a marker at ``s[p] == "["``.

    Returns the end index (exclusive) of a complete marker and fills ``nums``, or
    ``_PARTIAL`` if ``s`` ends while it could still become one, or ``_INVALID``.
    """
    n = len(s)
    i = p + 1
    while True:
        j = i
        while j < n and "0" <= s[j] <= "9":
            j += 1
        digits = j - i
        if digits > _MAX_DIGITS or (digits and s[i] == "0"):
            return _INVALID
        if j == n:
            return _PARTIAL
        if digits == 0:
            return _INVALID
        nums.append(int(s[i:j]))
        c = s[j]
        if c == "]":
            return j + 1
        if c != ",":
            return _INVALID
        j += 1
        while j < n and s[j] == " ":
            j += 1
        if j == n:
            return _PARTIAL
        i = j


class FootnoteDetector:
    """Footnote markers of one choice's text, detected incrementally."""

    __slots__ = ("_render", "_strip", "held", "held_refs", "held_start", "keep", "offset")

    def __init__(self, mode: MarkerMode = "keep") -> None:
        self._render: Callable[[int], str] | None = None
        if mode == "keep":  # (every stream makes one: the usual mode decided at once)
            self.keep = True
            self._strip = False
        else:
            self.keep = False
            self._strip = mode == "strip"
            if mode == "superscript":
                self._render = render_superscript
            elif callable(mode):
                self._render = mode
            elif not self._strip:
                raise ValueError(
                    f"unknown marker mode {mode!r}: keep, strip, superscript or a callable"
                )
        self.offset = 0
        """Characters of raw text seen so far."""
        self.held = ""
        """Raw text held back because it may be (the start of) a marker."""
        self.held_start = 0
        self.held_refs: list[tuple[int, int]] | None = None
        """Keep mode: the refs of a held *complete* marker that only awaits its next char
        (``core/fastpath.py`` confirms and sets it inline for the plain ``… [n]`` case)."""

    def feed(self, text: str) -> tuple[str, list[tuple[int, int]] | None]:
        """Consume one delta. Returns ``(display text, [(number, offset), ...] or None)``."""
        if not self.held and "[" not in text and (self.keep or text[-1:] not in _SPACE):
            self.offset += len(text)
            return text, None
        if self.held_refs is not None and text[:1] != "(":
            # The held "[n]" is confirmed by a next char that is not "(": no re-scan.
            refs: list[tuple[int, int]] | None = self.held_refs
            self.held_refs = None
            self.held = ""
            if "[" in text:
                more = self._process(text, self.offset, final=False)[1]
                if more:
                    refs = [*(refs or ()), *more]
            self.offset += len(text)
            return text, refs
        self.held_refs = None
        if self.keep and not self.held:
            # The usual shape, "… [3]": one complete marker ending the delta. It only
            # awaits its next character (not "("), so hold it with its refs known.
            p = text.find("[")
            m = _TAIL_MARKER.match(text, p)
            if m is not None:
                offset = self.offset + p
                self.held = text[p:]
                self.held_start = offset
                self.held_refs = [(int(n), offset) for n in m.group(1).split(",")]
                self.offset += len(text)
                return text, None
        if self.held:
            s = self.held + text
            base = self.held_start
        else:
            s = text
            base = self.offset
        self.offset += len(text)
        display, refs = self._process(s, base, final=False)
        return (text if self.keep else display), refs

    def flush(self) -> tuple[str, list[tuple[int, int]] | None]:
        """End of the text: a held complete marker is confirmed, a partial one released."""
        if not self.held:
            return "", None
        s, base = self.held, self.held_start
        self.held = ""
        self.held_refs = None
        display, refs = self._process(s, base, final=True)
        return ("" if self.keep else display), refs

    def _hold(self, s: str, base: int, hold: int, emitted: int, final: bool) -> None:
        """Hold back ``s[hold:]`` (-1: nothing), what may still become a marker."""
        if not self.keep and not final:
            # Spaces right before a (possible) marker are held too, so they can go with it.
            if hold == -1:
                hold = len(s)
            while hold > emitted and s[hold - 1] in _SPACE:
                hold -= 1
        if hold == -1 or hold >= len(s):
            self.held = ""
        else:
            self.held = s[hold:]
            self.held_start = base + hold

    def _process(
        self, s: str, base: int, *, final: bool
    ) -> tuple[str, list[tuple[int, int]] | None]:
        refs: list[tuple[int, int]] | None = None
        out: list[str] = []
        emitted = 0  # s[:emitted] has been written to out (display) or dropped
        hold = -1  # index in s from which text is held back
        p = s.find("[")
        while p != -1:
            nums: list[int] = []
            end = _scan(s, p, nums)
            if end == _INVALID or (end == _PARTIAL and final):
                p = s.find("[", p + 1)
                continue
            if end == _PARTIAL or (end == len(s) and not final):
                hold = p
                if end != _PARTIAL and self.keep:
                    self.held_refs = [(number, base + p) for number in nums]
                break
            if end < len(s) and s[end] == "(":
                p = s.find("[", end)  # a markdown link, not a footnote
                continue
            if refs is None:
                refs = []
            offset = base + p
            for number in nums:
                refs.append((number, offset))
            if not self.keep:
                # "Cameron [1]." displays as "Cameron." (strip) or "Cameron¹." (render).
                q = p
                while q > emitted and s[q - 1] in _SPACE:
                    q -= 1
                out.append(s[emitted:q])
                if self._render is not None:
                    out.append("".join(self._render(n) for n in nums))
                emitted = end
            p = s.find("[", end)
        self._hold(s, base, hold, emitted, final)
        if self.keep:
            return "", refs  # display is exactly the raw delta; feed() passes it through
        out.append(s[emitted : len(s) - len(self.held)])
        return "".join(out), refs
