"""Accumulates a stream's events into a :class:`CitedAnswer`. Sans-I/O.

The chunk interpreter appends to the public lists directly on the hot path (one
``list.append`` per token); everything else arrives through :meth:`add`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from streamcite.core._fields import expect_fields
from streamcite.core.bounds import (
    ANSWER_TOO_LARGE,
    DEFAULT_BOUNDS,
    MAX_ERRORS,
    StreamBounds,
)
from streamcite.core.events import (
    CitationRefEvent,
    CitationsEvent,
    ClaimEvent,
    ErrorEvent,
    Event,
    FinishEvent,
    GroundingEvent,
    MetaEvent,
    ProviderToolEvent,
    ReasoningEvent,
    RefusalEvent,
    SourcesEvent,
    TokenEvent,
    ToolCallEvent,
    UsageEvent,
)
from streamcite.core.grounding import GroundingResult
from streamcite.core.models import (
    Citation,
    CitationSpan,
    CitedAnswer,
    Timings,
    ToolCall,
    Usage,
    set_lazy_citation_refs,
)
from streamcite.core.refs import CitationRefs, RefStore
from streamcite.core.sources import QuotedSource

__all__ = ["COMPACT_EVERY", "MAX_CLAIMS", "MAX_ERRORS", "AnswerBuilder", "StreamBounds"]

COMPACT_EVERY = 128
"""A parser compacts its builder's text when more token texts than this are pending:
each pending one is a str object of ~50 bytes for a few characters, and a compaction
holds them, their join and the text's growth at once (the fixed part of the memory a
stream costs beyond its text; 512 made it 55 KiB, 4.9 bytes/char, on a 2k-chunk answer)."""

MAX_CLAIMS = 10_000
"""At most this many claims are kept on an answer (a capped answer has far fewer
sentences); beyond, they are still emitted as events but not kept."""


class AnswerBuilder:
    """Collects the parts of one answer; :meth:`snapshot` returns the answer so far."""

    __slots__ = (
        "_arg_chars",
        "_arg_parts",
        "_arg_pending",
        "_display",
        "_reasoning_text",
        "_refs_seen",
        "_refs_upto",
        "_refusal_text",
        "_size",
        "_text",
        "bounds",
        "chunk_fields",
        "citation_spans",
        "citations",
        "claims",
        "complete",
        "display_is_text",
        "display_parts",
        "enrichment_skipped",
        "errors",
        "errors_dropped",
        "finish_reason",
        "grounding",
        "id",
        "model",
        "provider_tools",
        "reasoning_parts",
        "references",
        "refs",
        "refusal_parts",
        "skipped_types",
        "sources",
        "text_parts",
        "timings",
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
        self.refs = RefStore()
        """Every choice's citation refs, compactly (the answer's ``citation_refs``)."""
        self._refs_seen: dict[tuple[int, int], None] = {}
        """Choice 0's distinct ``(number, document_index)`` in first-seen order, of the
        refs before ``_refs_upto`` (the snapshot updates it with the new refs only)."""
        self._refs_upto = 0
        self.citations: list[Citation] = []
        self.sources: list[QuotedSource] = []
        self.grounding: GroundingResult | None = None
        self.usage: Usage | None = None
        self.errors: list[ErrorEvent] = []
        self.finish_reason: str | None = None
        self.id: str | None = None
        self.model: str | None = None
        self.timings = Timings()
        self.complete = False
        self.chunk_fields: dict[str, Any] = {}
        """Top-level fields (``choices`` excepted) of the first chunk and of the finish
        chunk, first value kept: where providers put ids such as a Wikit query id."""
        self.reasoning_parts: list[str] = []
        """Reasoning texts of choice 0 since the last :meth:`compact`."""
        self.refusal_parts: list[str] = []
        """Refusal texts of choice 0 since the last :meth:`compact`."""
        self._reasoning_text = ""  # reasoning and refusal up to the last compaction
        self._refusal_text: str | None = None
        self.tool_calls: dict[int, ToolCall] = {}
        """Choice 0's tool calls by ``tool_index`` (``arguments`` joined up to the last
        :meth:`compact`; :meth:`tool_call` keeps the fragments since in parts)."""
        self._arg_parts: dict[int, list[str]] = {}
        self._arg_pending = 0  # fragments in _arg_parts
        self._arg_chars = 0  # characters of the joined arguments
        self._size = 0  # characters of text + reasoning + refusal + arguments, compacted
        self.too_large = False
        """The answer went beyond ``bounds.max_answer_chars`` (:meth:`check_size`)."""
        self.references: list[Any] = []
        self.citation_spans: list[CitationSpan] = []
        self.errors_dropped = 0
        self.enrichment_skipped: str | None = None
        self.skipped_types: dict[str, int] = {}
        """Unknown provider types skipped (:attr:`CitedAnswer.skipped_types`)."""
        self.claims: list[ClaimEvent] = []
        self.provider_tools: list[ProviderToolEvent] = []
        """The provider-run tools' events (the dialect holds them to the tool-call cap)."""

    def error(self, ev: ErrorEvent) -> None:
        """Keep one error (bounded: beyond ``bounds.max_errors`` only counted)."""
        if len(self.errors) < self.bounds.max_errors:
            self.errors.append(ev)
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
            parts = self._arg_parts.get(tidx)
            if parts is None:
                parts = self._arg_parts[tidx] = []
            parts.append(ev.arguments)
            self._arg_pending += 1

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
        fold = _FOLD.get(type(ev))
        if fold is not None:
            fold(self, ev)

    def _token(self, ev: TokenEvent) -> None:
        if ev.index == 0:
            self.text_parts.append(ev.text)
            if not self.display_is_text:
                self.display_parts.append(ev.display)

    def _citations(self, ev: CitationsEvent) -> None:
        if ev.citations:
            self.citations = ev.citations
        if ev.spans:
            self.citation_spans = ev.spans

    def _finish(self, ev: FinishEvent) -> None:
        if ev.index == 0:
            self.finish_reason = ev.reason
            self.complete = True

    def _meta(self, ev: MetaEvent) -> None:
        self.id = self.id or ev.id
        self.model = self.model or ev.model

    def _reasoning(self, ev: ReasoningEvent) -> None:
        if ev.index == 0:
            self.reasoning_parts.append(ev.text)

    def _refusal(self, ev: RefusalEvent) -> None:
        if ev.index == 0:
            self.refusal_parts.append(ev.text)

    def _tool_call(self, ev: ToolCallEvent) -> None:
        if ev.index == 0:
            self.tool_call(ev)

    def _sources(self, ev: SourcesEvent) -> None:
        self.sources = ev.sources

    def _claim(self, ev: ClaimEvent) -> None:
        if len(self.claims) < MAX_CLAIMS:
            self.claims.append(ev)

    def _provider_tool(self, ev: ProviderToolEvent) -> None:
        if len(self.provider_tools) < 2 * self.bounds.max_tool_calls:  # a call, a result
            self.provider_tools.append(ev)

    def _grounding(self, ev: GroundingEvent) -> None:
        self.grounding = ev.to_result()

    def _usage(self, ev: UsageEvent) -> None:
        self.usage = ev.to_usage()

    def compact(self) -> None:
        """Append the parts that arrived since the last compaction to the text.

        The text is one string grown in place (CPython resizes a string nobody else
        holds instead of copying it), so memory stays at the text's own size and
        each character is copied about once: flat at any length. The part lists are
        emptied in place, because the chunk interpreter holds references to them.
        Reasoning, refusal and tool arguments are compacted the same way."""
        self.refs.flush()
        if self.reasoning_parts:
            self._compact_reasoning()
        if self.refusal_parts:
            self._compact_refusal()
        if self._arg_pending:
            self._compact_arguments()
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
        self._size = len(self._text) + len(self._reasoning_text) + len(self._refusal_text or "")
        self._size += self._arg_chars

    def _compact_reasoning(self) -> None:
        parts = self.reasoning_parts
        text, self._reasoning_text = self._reasoning_text, ""
        text += "".join(parts)
        self._reasoning_text = text
        parts.clear()

    def _compact_refusal(self) -> None:
        parts = self.refusal_parts
        text, self._refusal_text = self._refusal_text or "", None
        text += "".join(parts)
        self._refusal_text = text
        parts.clear()

    def _compact_arguments(self) -> None:
        for tidx, parts in self._arg_parts.items():
            tc = self.tool_calls[tidx]
            args, tc.arguments = tc.arguments, ""
            more = "".join(parts)
            args += more  # grown in place: this local holds the only reference
            tc.arguments = args
            self._arg_chars += len(more)
        self._arg_parts.clear()
        self._arg_pending = 0

    def text_so_far(self) -> str:
        """Choice 0's raw text so far (compacts first; a cold path: citation spans)."""
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
            + self._arg_pending
        )

    def snapshot(self) -> CitedAnswer:
        """The answer as known now (compacts the text and shares it with the answer: the
        next compaction copies it once; cheap enough to call per UI frame)."""
        known = {c.document_index for c in self.citations}
        known.update(n - 1 for s in self.sources if (n := s.number) is not None)
        refs = self.refs.view()
        referenced, dangling = self._refs_of_choice0(refs, known)
        uncited = sorted(
            {c.document_index for c in self.citations if c.document_index is not None} - referenced
        )
        self.compact()
        text = self._text
        answer = CitedAnswer(
            text=text,
            display_text=text if self.display_is_text else self._display,
            finish_reason=self.finish_reason,
            id=self.id,
            model=self.model,
            citations=list(self.citations),
            dangling_refs=dangling,
            uncited_documents=uncited,
            sources=list(self.sources),
            grounding=self.grounding,
            usage=self.usage,
            errors=list(self.errors),
            timings=_copy_timings(self.timings),
            complete=self.complete,
            reasoning_text=self._reasoning_text,
            tool_calls=[replace(self.tool_calls[k]) for k in sorted(self.tool_calls)],
            refusal=self._refusal_text,
            references=list(self.references),
            citation_spans=list(self.citation_spans),
            errors_dropped=self.errors_dropped,
            enrichment_skipped=self.enrichment_skipped,
            claims=list(self.claims),
            skipped_types=dict(self.skipped_types),
            provider_tools=list(self.provider_tools),
        )
        set_lazy_citation_refs(answer, refs)  # a list of CitationRef on first read
        return answer

    def _refs_of_choice0(
        self, refs: CitationRefs, known: set[int | None]
    ) -> tuple[set[int], list[int]]:
        """The document indexes choice 0's refs reference, and the footnote numbers (in
        first-seen order) that reference no known document. Only the refs that are new
        since the last snapshot are looked at, and without making objects."""
        seen = self._refs_seen
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


def _copy_timings(t: Timings) -> Timings:
    """A copy of ``t`` (``dataclasses.replace`` costs four times as much)."""
    return Timings(
        t.ttft_ms,
        t.stream_ms,
        t.citations_ms,
        t.sources_ms,
        t.grounding_ms,
        t.total_ms,
        t.first_claim_ms,
    )


expect_fields(
    Timings,
    [
        "ttft_ms",
        "stream_ms",
        "citations_ms",
        "sources_ms",
        "grounding_ms",
        "total_ms",
        "first_claim_ms",
    ],
    "answer.py (_copy_timings)",
)


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


_FOLD: dict[type, Callable[[AnswerBuilder, Any], None]] = {
    TokenEvent: AnswerBuilder._token,
    CitationRefEvent: lambda b, ev: b.refs.add_event(ev),
    CitationsEvent: AnswerBuilder._citations,
    FinishEvent: AnswerBuilder._finish,
    UsageEvent: AnswerBuilder._usage,
    MetaEvent: AnswerBuilder._meta,
    ErrorEvent: AnswerBuilder.error,
    ReasoningEvent: AnswerBuilder._reasoning,
    RefusalEvent: AnswerBuilder._refusal,
    ToolCallEvent: AnswerBuilder._tool_call,
    SourcesEvent: AnswerBuilder._sources,
    GroundingEvent: AnswerBuilder._grounding,
    ClaimEvent: AnswerBuilder._claim,
    ProviderToolEvent: AnswerBuilder._provider_tool,
}
"""How :meth:`AnswerBuilder.add` folds each event type (by exact type, as before)."""


_specialise_compaction()
