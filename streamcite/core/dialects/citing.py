"""The citation registry of a non-chat stream: one :class:`Citation` per distinct source,
the spans that anchor them in choice 0's text (characters and UTF-16) with the passage
each one quotes, and the ``citations`` event sent only when something was added.
Every passage stored goes through :meth:`Citing.passage` (one string per distinct
passage, shared by the citation and its spans). A mixin of
:class:`~streamcite.core.dialects.base.StreamState`, which owns the state named below.
Sans-I/O."""

from __future__ import annotations

from typing import Any

from streamcite.core._fields import expect_fields
from streamcite.core.answer import AnswerBuilder
from streamcite.core.bounds import TOO_MANY_CITATIONS
from streamcite.core.citation_caps import CITATION_TOO_LARGE, CitationBudget, clip_text
from streamcite.core.dialects.payloads import astral
from streamcite.core.events import CitationsEvent, Event
from streamcite.core.markers import FootnoteDetector
from streamcite.core.models import Citation, CitationSpan

__all__ = ["MAX_SPANS", "Citing"]

expect_fields(CitationsEvent, ["type", "citations", "spans"], "dialects/citing.py")
_new = object.__new__

MAX_SPANS = 1024
"""Citation spans per answer: every ``citations`` event carries the whole list so far,
so the events stay bounded whatever a stream anchors (four per cited source)."""


class Citing:
    """Citations and spans of choice 0, for :class:`StreamState` (which holds the
    ``builder`` and choice 0's footnote detector ``_det0``, and sets these slots up)."""

    __slots__ = (
        "_astral",
        "_astral_upto",
        "_cit_budget",
        "_cit_deferred",
        "_cit_last",
        "_cit_sent",
        "_cit_wire",
        "_cite_keys",
        "_passages",
        "citations_clipped",
        "citations_dropped",
        "spans_dropped",
    )

    builder: AnswerBuilder
    _cite_keys: dict[Any, int]
    _cit_sent: tuple[int, int]
    _det0: FootnoteDetector
    _astral: int
    _astral_upto: int
    _passages: dict[str, str]
    citations_dropped: int
    citations_clipped: int
    spans_dropped: int
    _cit_budget: CitationBudget | None
    _cit_wire: int
    _cit_last: int
    _cit_deferred: bool

    def init_citing(self) -> None:
        """The registry's own state (called by :class:`StreamState`'s ``__init__``)."""
        self._cite_keys = {}
        self._passages = {}
        self._cit_sent = (0, 0)
        self._cit_budget = None  # (made at the first citation: most streams cite nothing)
        self._cit_wire = 0
        """Bytes (as counted by the budget) of the ``citations`` events sent so far."""
        self._cit_last = 0
        """The set's bytes at the last ``citations`` event."""
        self._cit_deferred = False
        """A change not sent yet (coalesced past ``max_citation_wire_bytes``)."""
        self.citations_dropped = 0
        self.citations_clipped = 0
        self.spans_dropped = 0

    def admit(self, obj: Citation | CitationSpan, out: list[Event]) -> bool:
        """``obj`` held to the per-field and total byte caps (:mod:`..citation_caps`):
        clipped in place (reported once per stream, then counted); False when the total
        is reached (reported once)."""
        ok, problems = self._budget().admit(obj)
        if problems:
            if not self.citations_clipped:
                self.fault(out, CITATION_TOO_LARGE, "; ".join(problems[:3]))
            self.citations_clipped += 1
        return ok

    def _budget(self) -> CitationBudget:
        """The byte budget of this stream's citations and spans (made at first use)."""
        budget = self._cit_budget
        if budget is None:
            budget = self._cit_budget = CitationBudget(self.builder.bounds)
        return budget

    def fault(self, out: list[Event], code: str, message: str, stage: str = "chunk") -> None:
        raise NotImplementedError  # StreamState's

    def cite(self, key: Any, citation: Citation, out: list[Event]) -> int | None:
        """The ``document_index`` of the source known by ``key``; a new source is added
        (``citation`` gets its index). ``None`` beyond ``bounds.max_citations``."""
        known = self._cite_keys.get(key)
        if known is not None:
            return known
        n, cap = len(self.builder.citations), self.builder.bounds.max_citations
        if n >= cap:
            if not self.citations_dropped:
                msg = f"more than {cap} cited sources: the rest dropped"
                self.fault(out, TOO_MANY_CITATIONS, msg)
            self.citations_dropped += 1
            return None
        if not self.admit(citation, out):
            self.citations_dropped += 1
            return None
        citation.document_index = n
        citation.cited_text = self.passage(citation.cited_text)
        self._cite_keys[key] = n
        self.builder.citations = [*self.builder.citations, citation]
        return n

    def passage(self, text: str | None) -> str | None:
        """The one stored copy of a quoted passage (a citation's or a span's): the same
        string for every span and citation that quote it. ``None`` and ``""`` stay."""
        if not text:
            return text
        known = self._passages.get(text)
        if known is None:
            self._passages[text] = known = text
        return known

    def span(
        self,
        doc: int,
        start: int,
        end: int,
        out: list[Event],
        cited_text: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> bool:
        """Add the span ``start:end`` (characters of choice 0's text) of citation ``doc``,
        with the passage it quotes (``cited_text``) and where the provider says that
        passage is (``meta``). False (and reported) when it is not within the text so
        far or over the bound."""
        chars = self._det0.offset
        if not 0 <= start <= end <= chars:
            msg = (
                f"citation span {start}-{end} of citation {doc} is not within the answer"
                f" text ({chars} characters)"
            )
            self.fault(out, "bad_citation_span", msg)
            return False
        if len(self.builder.citation_spans) >= MAX_SPANS:
            self.span_over(out)
            return False
        sp = CitationSpan(
            doc,
            start,
            end,
            self.utf16_at(start),
            self.utf16_at(end),
            self.passage(clip_text(cited_text, self.builder.bounds)),
            meta or None,
        )
        if not self.admit(sp, out):
            self.spans_dropped += 1
            return False
        self.builder.citation_spans = [*self.builder.citation_spans, sp]
        return True

    def spans(
        self, cited: list[tuple[int, str | None, Any]], start: int, end: int, out: list[Event]
    ) -> bool:
        """:meth:`span` ``start:end`` for each (document index, passage, metadata) of
        ``cited`` in turn, the offsets converted to UTF-16 once and the list of spans
        copied once (a block cited several times). True when one was added."""
        if len(cited) == 1 or not 0 <= start <= end <= self._det0.offset:
            added = False
            for doc, passage, meta in cited:  # (one, or each reported as span() does)
                added = self.span(doc, start, end, out, passage, meta) or added
            return added
        b = self.builder
        start16, end16 = self.utf16_at(start), self.utf16_at(end)
        kept: list[CitationSpan] = []
        for doc, passage, meta in cited:
            if len(b.citation_spans) + len(kept) >= MAX_SPANS:
                self.span_over(out)
                continue
            text = self.passage(clip_text(passage, b.bounds))
            sp = CitationSpan(doc, start, end, start16, end16, text, meta or None)
            if not self.admit(sp, out):
                self.spans_dropped += 1
                continue
            kept.append(sp)
        if kept:
            b.citation_spans = [*b.citation_spans, *kept]
        return bool(kept)

    def span_over(self, out: list[Event]) -> None:
        """A span beyond :data:`MAX_SPANS`: reported once, then counted."""
        if not self.spans_dropped:
            msg = f"more than {MAX_SPANS} citation spans: the rest dropped"
            self.fault(out, TOO_MANY_CITATIONS, msg)
        self.spans_dropped += 1

    def emit_citations(self, out: list[Event], *, final: bool = False) -> None:
        """A ``citations`` event with every citation and span so far (consumers replace),
        only when a citation or a span was added since the last one: a citation of a
        known source, or a span beyond :data:`MAX_SPANS`, emits nothing (each event
        carries the whole lists: repeating them would amplify the input). Past
        ``bounds.max_citation_wire_bytes`` of such events, one is sent only when the set
        has doubled since the last, or at the end (``final``): the events stay within a
        small constant times the set's bytes."""
        b = self.builder
        counts = (len(b.citations), len(b.citation_spans))
        if counts == self._cit_sent:
            return
        size = self._budget().used
        over = self._cit_wire + size > b.bounds.max_citation_wire_bytes
        if over and not final and size < 2 * self._cit_last:
            self._cit_deferred = True
            return
        self._cit_sent = counts
        self._cit_wire += size
        self._cit_last = size
        self._cit_deferred = False
        ev = _new(CitationsEvent)  # (its __init__ and default factories: a third of it)
        ev.type = "citations"
        ev.citations = b.citations
        ev.spans = b.citation_spans
        out.append(ev)

    def flush_citations(self, out: list[Event]) -> None:
        """The set as it stands, if a change was coalesced (the finish, the end)."""
        if self._cit_deferred:
            self.emit_citations(out, final=True)

    @property
    def chars0(self) -> int:
        """Characters of choice 0's text so far."""
        return self._det0.offset

    def utf16_at(self, char: int) -> int:
        """UTF-16 offset of character ``char`` of choice 0's text so far. The characters
        beyond the BMP are counted up to the furthest offset asked (spans come mostly in
        text order: each part of the text is looked at about once)."""
        text = self.builder.text_so_far()
        upto = self._astral_upto
        if char < upto:
            # Behind the furthest offset asked (a span's start, a support naming two
            # sources): counted from whichever end is nearer.
            if char > upto >> 1:
                return char + self._astral - astral(text[char:upto])
            return char + astral(text[:char])
        self._astral += astral(text[self._astral_upto : char])
        self._astral_upto = char
        return char + self._astral

    def text_slice(self, start: int, end: int) -> str:
        return self.builder.text_so_far()[start:end]
