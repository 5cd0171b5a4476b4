"""Accumulates a stream's events into a :class:`CitedAnswer`. Sans-I/O.

The chunk interpreter appends to the public lists directly on the hot path (one
``list.append`` per token); everything else arrives through :meth:`add`.
"""

from __future__ import annotations

from typing import Any

from streamcite.core.answer_fields import LazyParts
from streamcite.core.answer_fold import FOLD, MAX_CLAIMS
from streamcite.core.bounds import (
    ANSWER_TOO_LARGE,
    DEFAULT_BOUNDS,
    MAX_ERRORS,
    StreamBounds,
)
from streamcite.core.copies import copy_tool_call
from streamcite.core.events import (
    ClaimEvent,
    ErrorEvent,
    Event,
    ProviderToolEvent,
    ToolCallEvent,
)
from streamcite.core.grounding import GroundingResult
from streamcite.core.models import (
    Citation,
    CitationSpan,
    CitedAnswer,
    Timings,
    ToolCall,
    Usage,
    answer_of,
)
from streamcite.core.refs import CitationRefs, RefStore
from streamcite.core.sources import QuotedSource

__all__ = ["COMPACT_EVERY", "MAX_CLAIMS", "MAX_ERRORS", "AnswerBuilder", "StreamBounds"]

COMPACT_EVERY = 128
"""A parser compacts its builder's text when more token texts than this are pending:
each pending one is a str object of ~50 bytes for a few characters, and a compaction
holds them, their join and the text's growth at once (the fixed part of the memory a
stream costs beyond its text; 512 made it 55 KiB, 4.9 bytes/char, on a 2k-chunk answer)."""


class AnswerBuilder(LazyParts):
    """Collects the parts of one answer; :meth:`snapshot` returns the answer so far."""

    __slots__ = (
        "_arg_parts",
        "_display",
        "_more_chars",
        "_reasoning_text",
        "_refs_seen",
        "_refs_upto",
        "_refusal_text",
        "_size",
        "_text",
        "arg_pending",
        "bounds",
        "citation_spans",
        "citations",
        "complete",
        "display_is_text",
        "display_parts",
        "enrichment_skipped",
        "errors_dropped",
        "finish_reason",
        "grounding",
        "id",
        "model",
        "reasoning_parts",
        "refusal_parts",
        "skipped_types",
        "text_parts",
        "too_large",
        "tool_calls",
        "usage",
    )

    def __init__(self, bounds: StreamBounds = DEFAULT_BOUNDS) -> None:
        self.bounds = bounds
        """The caps this answer is held to (:mod:`streamcite.core.bounds`)."""
        self._text = ""  # choice 0's raw text up to the last compaction
        self._display = ""  # and its display text (unused in keep mode)
        self.text_parts: list[str] = []
        """Raw token texts of choice 0 since the last :meth:`compact`."""
        self.display_parts: list[str] = []
        """Display texts of choice 0 since the last :meth:`compact` (unused when
        ``display_is_text``: keep mode)."""
        self.display_is_text = False
        self.reasoning_parts: list[str] = []
        """Reasoning texts of choice 0 since the last :meth:`compact`."""
        self.refusal_parts: list[str] = []
        """Refusal texts of choice 0 since the last :meth:`compact`."""
        self.tool_calls: dict[int, ToolCall] = {}
        """Choice 0's tool calls by ``tool_index`` (``arguments`` joined up to the last
        :meth:`compact`; :meth:`tool_call` keeps the fragments since in parts)."""
        # The dialects read these three per citation or unknown event: kept plain.
        self.citations: list[Citation] = []
        self.citation_spans: list[CitationSpan] = []
        self.skipped_types: dict[str, int] = {}
        """Unknown provider types skipped (:attr:`CitedAnswer.skipped_types`)."""
        # Made at first use (None until then): the public ones through LazyParts.
        self._refs: RefStore | None = None
        self._sources: list[QuotedSource] | None = None
        self._errors: list[ErrorEvent] | None = None
        self._timings: Timings | None = None
        self._chunk_fields: dict[str, Any] | None = None
        self._references: list[Any] | None = None
        self._claims: list[ClaimEvent] | None = None
        self._provider_tools: list[ProviderToolEvent] | None = None
        self._refs_seen: dict[tuple[int, int], None] | None = None
        """Choice 0's distinct ``(number, document_index)`` in first-seen order, of the
        refs before ``_refs_upto`` (the snapshot updates it with the new refs only)."""
        self._refs_upto = 0
        self._arg_parts: dict[int, list[str]] | None = None
        self.arg_pending = 0
        """Tool-argument fragments kept in parts since the last :meth:`compact`."""
        self._more_chars = 0  # characters of reasoning + refusal + arguments, compacted
        self._size = 0  # characters of text + reasoning + refusal + arguments, compacted
        self._reasoning_text = ""  # reasoning and refusal up to the last compaction
        self._refusal_text: str | None = None
        self.grounding: GroundingResult | None = None
        self.usage: Usage | None = None
        self.finish_reason: str | None = None
        self.id: str | None = None
        self.model: str | None = None
        self.complete = False
        self.too_large = False
        """The answer went beyond ``bounds.max_answer_chars`` (:meth:`check_size`)."""
        self.errors_dropped = 0
        self.enrichment_skipped: str | None = None

    def error(self, ev: ErrorEvent) -> None:
        """Keep one error (bounded: beyond ``bounds.max_errors`` only counted)."""
        errors = self._errors
        if errors is None:
            errors = self._errors = []
        if len(errors) < self.bounds.max_errors:
            errors.append(ev)
        else:
            self.errors_dropped += 1

    def tool_call(self, ev: ToolCallEvent) -> None:
        """Fold one tool-call fragment of choice 0: id/name first seen kept, arguments
        kept in parts and joined at the next :meth:`compact` (linear, as the text is)."""
        tidx = ev.tool_index
        tc = self.tool_calls.get(tidx)
        if tc is None:
            tc = self.tool_calls[tidx] = ToolCall()
        if tc.id is None:
            tc.id = ev.id
        if tc.name is None:
            tc.name = ev.name
        if ev.arguments:
            arg_parts = self._arg_parts
            if arg_parts is None:
                arg_parts = self._arg_parts = {}
            parts = arg_parts.get(tidx)
            if parts is None:
                parts = arg_parts[tidx] = []
            parts.append(ev.arguments)
            self.arg_pending += 1

    def has_reasoning(self) -> bool:
        """Choice 0 has some reasoning text."""
        return bool(self._reasoning_text or self.reasoning_parts)

    def has_refusal(self) -> bool:
        """Choice 0 has a refusal (even an empty one)."""
        return self._refusal_text is not None or bool(self.refusal_parts)

    def answer_chars(self) -> int:
        """Characters of text + reasoning + refusal + tool arguments (compacts first)."""
        self.compact()
        return self._size

    def check_size(self) -> ErrorEvent | None:
        """Compact, then the ``answer_too_large`` error if the answer just went beyond
        ``bounds.max_answer_chars`` (recorded, the answer marked incomplete and
        :attr:`too_large` set: the interpreter feeding this builder stops there); else
        ``None``. Interpreters call it at least every :data:`COMPACT_EVERY` parts (the
        parser does, per read), so what is held stays within the cap and one read."""
        self.compact()
        if self.too_large or self._size <= self.bounds.max_answer_chars:
            return None
        self.too_large = True
        self.complete = False
        ev = ErrorEvent(
            code=ANSWER_TOO_LARGE,
            message=(
                f"the answer went beyond {self.bounds.max_answer_chars:,} characters"
                " (text, reasoning, refusal and tool arguments): the stream was cut"
            ),
            retryable=False,
            stage="chunk",
        )
        self.error(ev)
        return ev

    def add(self, ev: Event) -> None:
        """Fold one event into the answer (events already folded by the interpreter are
        recognised by identity of type and need not be passed again)."""
        fold = FOLD.get(type(ev))
        if fold is not None:
            fold(self, ev)

    def compact(self) -> None:
        """Append the parts that arrived since the last compaction to the text.

        The text is one string grown in place (CPython resizes a string nobody else
        holds instead of copying it), so memory stays at the text's own size and
        each character is copied about once: flat at any length. The part lists are
        emptied in place, because the chunk interpreter holds references to them.
        Reasoning, refusal and tool arguments are compacted the same way."""
        refs = self._refs
        if refs is not None:
            refs.flush()
        if self.reasoning_parts or self.refusal_parts or self.arg_pending:
            self._compact_more()
        parts = self.text_parts
        if parts:
            text, self._text = self._text, ""
            text += "".join(parts)
            self._text = text
            parts.clear()
        dparts = self.display_parts
        if dparts:
            display, self._display = self._display, ""
            display += "".join(dparts)
            self._display = display
            dparts.clear()
        self._size = len(self._text) + self._more_chars

    def _compact_more(self) -> None:
        """Compact reasoning, refusal and tool arguments (rarer than text: one check for
        the three on the common path)."""
        if self.reasoning_parts:
            self._compact_reasoning()
        if self.refusal_parts:
            self._compact_refusal()
        if self.arg_pending:
            self._compact_arguments()

    def _compact_reasoning(self) -> None:
        parts = self.reasoning_parts
        text, self._reasoning_text = self._reasoning_text, ""
        more = "".join(parts)
        text += more
        self._reasoning_text = text
        self._more_chars += len(more)
        parts.clear()

    def _compact_refusal(self) -> None:
        parts = self.refusal_parts
        text, self._refusal_text = self._refusal_text or "", None
        more = "".join(parts)
        text += more
        self._refusal_text = text
        self._more_chars += len(more)
        parts.clear()

    def _compact_arguments(self) -> None:
        assert self._arg_parts is not None  # (fragments pending)
        for tidx, parts in self._arg_parts.items():
            tc = self.tool_calls[tidx]
            args, tc.arguments = tc.arguments, ""
            more = "".join(parts)
            args += more  # grown in place: this local holds the only reference
            tc.arguments = args
            self._more_chars += len(more)
        self._arg_parts.clear()
        self.arg_pending = 0

    def text_so_far(self) -> str:
        """Choice 0's raw text so far (compacts first when text is pending; a cold path:
        citation spans ask for it twice each)."""
        if self.text_parts:
            self.compact()
        return self._text

    def text_length(self) -> int:
        """Characters of choice 0's raw text so far (a cold path: checks at the end)."""
        return len(self._text) + sum(map(len, self.text_parts))

    @property
    def uncompacted(self) -> int:
        """Parts (text, reasoning, refusal, tool arguments) added since the last :meth:`compact`."""
        return (
            len(self.text_parts)
            + len(self.reasoning_parts)
            + len(self.refusal_parts)
            + self.arg_pending
        )

    def snapshot(self) -> CitedAnswer:
        """The answer as known now (compacts the text and shares it with the answer: the
        next compaction copies it once; cheap enough to call per UI frame).

        Built without ``__init__`` (its keyword arguments, default factories and property
        store were most of a short stream's ``done``) by :func:`answer_of`, positionally,
        from the slots: a field the stream never used is a new empty one, made without a
        call; an answer without footnote refs or sources skips the dangling and uncited
        passes' sets."""
        citations = self.citations
        refs = self._refs
        if citations or self._sources or self._refs_seen or (refs is not None and len(refs)):
            view, dangling, uncited = self._ref_passes(citations)
        else:  # (the common short answer: no call, no sets)
            view, dangling, uncited = None, [], []
        self.compact()
        text = self._text
        tcs = self.tool_calls
        return answer_of(
            text,
            text if self.display_is_text else self._display,
            self.finish_reason,
            self.id,
            self.model,
            [*citations] if citations else [],
            [] if view is None else view,  # a list on first read
            dangling,
            uncited,
            [*self._sources] if self._sources else [],
            self.grounding,
            self.usage,
            [*self._errors] if self._errors else [],
            self._timings,  # (copied)
            self.complete,
            self._reasoning_text,
            [copy_tool_call(tcs[k]) for k in sorted(tcs)] if tcs else [],
            self._refusal_text,
            [*self._references] if self._references else [],
            [*self.citation_spans] if self.citation_spans else [],
            self.errors_dropped,
            self.enrichment_skipped,
            [*self._claims] if self._claims else [],
            {**self.skipped_types} if self.skipped_types else {},
            [*self._provider_tools] if self._provider_tools else [],
        )

    def _ref_passes(
        self, citations: list[Citation] | None
    ) -> tuple[CitationRefs | None, list[int], list[int]]:
        """The snapshot's refs (None: none), dangling footnotes and uncited documents."""
        refs = self._refs
        sources = self._sources
        if not (sources or self._refs_seen or (refs is not None and len(refs))):
            if not citations:
                return None, [], []
            docs = {c.document_index for c in citations if c.document_index is not None}
            return None, [], sorted(docs)
        citations = citations or []
        known = {c.document_index for c in citations}
        if sources:
            known.update(n - 1 for s in sources if (n := s.number) is not None)
        view = self.refs.view()
        referenced, dangling = self._refs_of_choice0(view, known)
        docs = {c.document_index for c in citations if c.document_index is not None}
        return view, dangling, sorted(docs - referenced)

    def _refs_of_choice0(
        self, refs: CitationRefs, known: set[int | None]
    ) -> tuple[set[int], list[int]]:
        """The document indexes choice 0's refs reference, and the footnote numbers (in
        first-seen order) that reference no known document. Only the refs that are new
        since the last snapshot are looked at, and without making objects."""
        seen = self._refs_seen
        if seen is None:
            seen = self._refs_seen = {}
        if len(refs) > self._refs_upto:
            for pair in refs.first_seen(self._refs_upto):
                if pair not in seen:
                    seen[pair] = None
            self._refs_upto = len(refs)
        referenced = {d for _, d in seen}
        dangling: list[int] = []
        for number, d in seen:
            if d not in known and number not in dangling:
                dangling.append(number)
        return referenced, dangling


def _specialise_compaction() -> None:
    """Run :meth:`AnswerBuilder.compact` a few times at import.

    CPython (3.11+) grows a string in place for ``text += more`` only once that
    instruction is specialised, after a function has run about eight times; until then
    each compaction copies the whole text, so a process's first streams would briefly
    hold their text twice."""
    b = AnswerBuilder()
    for _ in range(16):
        b.text_parts.append("x")
        b.display_parts.append("x")
        b.reasoning_parts.append("x")
        b.refusal_parts.append("x")
        b.tool_call(ToolCallEvent(0, 0, None, None, "x"))
        b.compact()


_specialise_compaction()
