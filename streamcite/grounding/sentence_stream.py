"""The sentences of a text that arrives in pieces, each as soon as it is complete. Sans-I/O.

:class:`SentenceStream` is fed token texts and returns the sentences that can no
longer change, with exactly the offsets and texts :func:`~streamcite.grounding.sentences.
split_sentences` gives on the whole text (the same rules: footnote markers stay with
their sentence, abbreviations, decimals, CJK and Hebrew punctuation, list items).

How it knows a sentence is complete: it re-splits the open part of the text (from
the start of the line of the first sentence not yet returned) whenever that part
holds a possible sentence end, and returns every sentence but the last one, whose
end may still move. The one case where text after a sentence still changes it — a
footnote marker after a space, ``"ends. [1]"`` — is held until the marker is
complete. At :meth:`close` the rest is returned.

Bounded: the open part is re-split only while it holds a terminator or a line break
(most tokens cost one character-class search), and an open part longer than
``max_open`` characters (one "sentence" of thousands of characters) stops the live
split: the rest is returned at :meth:`close`, nothing is lost.

>>> s = SentenceStream()
>>> [x.text for x in s.feed("Paris is in France. It ")]
['Paris is in France.']
>>> [x.text for x in s.feed("has 2.1 million people.")]
[]
>>> [x.text for x in s.close()]
['It has 2.1 million people.']
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from streamcite.grounding.sentences import (
    _HEADING_RE,
    _LIST_MARKER_RE,
    _OPENERS,
    Sentence,
    split_sentences,
)

__all__ = ["MAX_OPEN", "SentenceStream", "StreamedSentence"]

MAX_OPEN = 16_384
"""Characters of open text beyond which the live split stops (the rest is split at close)."""

# Anything that may end a sentence or a segment: the terminators, line breaks.
_MAYBE_END = re.compile(r"[.!?…׃؟。！？\n]")
# An open sentence that is still the beginning of a footnote marker ("[", "[1", "[1, 2").
_MARKER_PREFIX = re.compile(r"\[\^?[\d\s,;–-]*\]?")
_EAGER = 512
"""Open characters re-split on every possible end; beyond, only once they have doubled
since a split that completed nothing (a sentence is rarely longer)."""
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


@dataclass(slots=True, frozen=True)
class StreamedSentence:
    """A complete sentence: ``text == full_text[start:end]``; UTF-16 offsets for browsers."""

    start: int
    end: int
    start_utf16: int
    end_utf16: int
    text: str
    heading: bool = False


def _undecided(last: str) -> bool:
    """Whether the sentence before ``last`` may still change: ``last`` is a footnote
    marker being written, or holds no character yet that decides the boundary (only
    openers such as quotes and brackets, which the splitter looks past)."""
    return _MARKER_PREFIX.fullmatch(last) is not None or not last.strip(_OPENERS + " \t\n")


def _utf16_len(text: str) -> int:
    if text.isascii() or _ASTRAL.search(text) is None:
        return len(text)
    return len(text) + len(_ASTRAL.findall(text))


class SentenceStream:
    """Feed text pieces; get each sentence once it is complete (see the module doc)."""

    __slots__ = (
        "_base",
        "_base_u16",
        "_dirty",
        "_done",
        "_done_u16",
        "_idle",
        "_max_open",
        "_open",
        "_overflow",
        "_prev",
    )

    def __init__(self, *, max_open: int = MAX_OPEN) -> None:
        self._open = ""
        """The text from ``_base`` on (the line of the first sentence not yet returned)."""
        self._base = 0
        self._base_u16 = 0
        self._done = 0
        """Offset (into ``_open``) where the returned sentences end."""
        self._done_u16 = 0
        """``_open[:_done]`` in UTF-16 units."""
        self._prev = 0
        self._idle = 0
        """Open characters at the last split that completed nothing: the next waits until
        the open part has doubled (a long sentence of false ends, ``wait… wait…``, is
        re-read a logarithmic number of times, not once per token)."""
        """Where the last returned sentence starts (in ``_open``)."""
        self._dirty = False
        self._overflow = False
        self._max_open = max_open

    @property
    def text_length(self) -> int:
        """Characters fed so far."""
        return self._base + len(self._open)

    @property
    def overflowed(self) -> bool:
        """True once the live split stopped (an open part longer than ``max_open``)."""
        return self._overflow

    def feed(self, text: str) -> list[StreamedSentence]:
        """Add the next piece of text; the sentences it completed (often none)."""
        if not text:
            return []
        self._open += text
        if self._overflow:
            return []
        if not self._dirty:
            if _MAYBE_END.search(text) is None:
                return []
            self._dirty = True
        pending = len(self._open) - self._done
        if pending > self._max_open:
            self._overflow = True
            return []
        if pending > _EAGER and pending < 2 * self._idle:
            return []
        out = self._split(final=False)
        self._idle = 0 if out else pending
        return out

    def close(self) -> list[StreamedSentence]:
        """The sentences not returned yet (the text is complete)."""
        out = self._split(final=True)
        self._dirty = False
        return out

    def _window(self) -> int:
        """Where to re-split from: the end of the returned sentences when the split of
        the rest is the whole text's there (a blank follows it and the rest of its line
        opens no list item, heading or table row: the whole text's split does not read
        that line as one), else the start of its line. Each sentence end is then read
        once, not once per sentence of its paragraph."""
        o, d = self._open, self._done
        if d == 0:
            return 0
        if d < len(o) and not o[d].isspace():
            # No blank after the last sentence (CJK "。", "Claim.Claim."): re-read from that
            # sentence's start, so its end is decided again with its context; the split
            # is kept only if it ends there too (:meth:`_split`), else the whole line.
            return self._prev
        nl = o.find("\n", d)
        partial = o[d : nl if nl >= 0 else len(o)]
        if _LIST_MARKER_RE.match(partial) or _HEADING_RE.match(partial):
            return 0
        return 0 if partial.lstrip().startswith("|") else d

    def _split(self, *, final: bool) -> list[StreamedSentence]:
        w = self._window()
        parts = split_sentences(self._open[w:])
        d = self._done
        if w and w < d and not any(s.end + w == d for s in parts):
            w, parts = 0, split_sentences(self._open)  # read differently from there
        sents = [
            Sentence(s.start + w, s.end + w, s.text, s.heading) for s in parts if s.end + w > d
        ]
        if not final:
            # The last sentence may still grow; a marker still being written may yet
            # join the sentence before it ("ends. [1]").
            keep = len(sents) - 1
            if keep > 0 and _undecided(sents[-1].text):
                keep -= 1
            sents = sents[: max(keep, 0)]
        if not sents:
            return []
        out = [self._out(s) for s in sents]
        self._advance(sents[-1].start, sents[-1].end)
        return out

    def _out(self, s: Sentence) -> StreamedSentence:
        between = self._open[self._done : s.start]  # (sentences never start before it)
        u_start = self._base_u16 + self._done_u16 + _utf16_len(between)
        return StreamedSentence(
            self._base + s.start,
            self._base + s.end,
            u_start,
            u_start + _utf16_len(s.text),
            s.text,
            s.heading,
        )

    def _advance(self, start: int, end: int) -> None:
        """Returned up to ``end`` (in ``_open``): drop the lines before the line of ``end``."""
        o = self._open
        u_end = self._done_u16 + _utf16_len(o[self._done : end])
        line = o.rfind("\n", 0, end) + 1
        if line:
            u_line = u_end - _utf16_len(o[line:end])
            self._base += line
            self._base_u16 += u_line
            self._open = o[line:]
            end -= line
            start -= line
            u_end -= u_line
        self._done = end
        self._prev = max(start, 0)
        self._done_u16 = u_end
        rest = self._open[end:]
        self._dirty = _MAYBE_END.search(rest) is not None
