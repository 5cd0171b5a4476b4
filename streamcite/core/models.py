"""Answer-level data: citations, references, usage, timings and the final answer.

Slotted dataclasses. They serialise with ``orjson.dumps`` directly (field order is
the wire order) and expose ``to_dict()`` for callers who want plain objects.
Parsing of provider JSON into these models is a cold path and validates strictly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import orjson

from streamcite.core.grounding import GroundingResult
from streamcite.core.sources import QuotedSource

__all__ = [
    "Citation",
    "CitationRef",
    "CitationSpan",
    "CitedAnswer",
    "LazyList",
    "Timings",
    "ToolCall",
    "Usage",
    "answer_of",
    "refs_slot",
    "set_lazy_citation_refs",
]


def _plain(obj: Any) -> Any:
    """Plain-JSON view of a dataclass tree (orjson does the walking in C)."""
    return orjson.loads(orjson.dumps(obj))


@dataclass(slots=True)
class Citation:
    """One cited document, in the Magisterium schema (all eight fields, ``None`` where absent).

    ``document_index`` is zero-based; the answer's inline footnote ``[n]`` points at
    ``document_index == n - 1``.
    """

    cited_text: str | None = None
    cited_text_heading: str | None = None
    document_title: str | None = None
    document_index: int | None = None
    document_author: str | None = None
    document_year: str | None = None
    document_reference: str | None = None
    source_url: str | None = None
    provider_metadata: dict[str, Any] | None = None
    """The provider's own fields that have no place above (``file_id``,
    ``encrypted_index``, ``page``...), as sent; ``None`` when there are none."""

    @property
    def footnote(self) -> int | None:
        """The one-based footnote number that points at this citation."""
        return None if self.document_index is None else self.document_index + 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "cited_text": self.cited_text,
            "cited_text_heading": self.cited_text_heading,
            "document_title": self.document_title,
            "document_index": self.document_index,
            "document_author": self.document_author,
            "document_year": self.document_year,
            "document_reference": self.document_reference,
            "source_url": self.source_url,
            "provider_metadata": self.provider_metadata,
        }


@dataclass(slots=True)
class CitationRef:
    """An inline footnote marker seen in the answer text."""

    index: int
    """Choice index."""
    number: int
    """Footnote number as written (one-based)."""
    document_index: int
    """``number - 1``: the citation it points at."""
    offset: int
    """Character offset of the marker's ``[`` in the choice's raw text."""


@dataclass(slots=True)
class CitationSpan:
    """Where a citation anchors in the answer text.

    ``answer.text[span.start:span.end]`` is exactly what the provider anchored: OpenAI
    ``url_citation`` ``start_index:end_index``; the Anthropic text block a
    ``citations_delta`` belongs to; the Gemini ``groundingSupports`` segment (its UTF-8
    byte offsets converted); the Cohere ``start:end``. ``start_utf16``/``end_utf16`` are
    the same offsets in UTF-16 code units, for JavaScript strings (``None`` for the chat
    dialect's ``url_citation`` spans, which index text that may not have arrived yet).

    >>> CitationSpan(0, 2, 5, 2, 6)  # doctest: +NORMALIZE_WHITESPACE
    CitationSpan(document_index=0, start=2, end=5, start_utf16=2, end_utf16=6,
                 cited_text=None, provider_metadata=None)
    """

    document_index: int | None
    """The ``document_index`` of the citation it anchors."""
    start: int | None
    """Character offset into the choice's text."""
    end: int | None
    """Character offset, exclusive."""
    start_utf16: int | None = None
    """``start`` in UTF-16 code units."""
    end_utf16: int | None = None
    """``end`` in UTF-16 code units."""
    cited_text: str | None = None
    """The passage that supports this span, as the provider quoted it: Anthropic
    ``cited_text``, the Cohere source's text, the Gemini ``retrievedContext.text``;
    ``None`` where the API sends none (OpenAI ``url_citation``). Each span keeps its own
    passage, however many times one source is cited."""
    provider_metadata: dict[str, Any] | None = None
    """Where the provider says the passage is (page, character range, search-result
    index, grounding chunk...), as sent; ``None`` when it says nothing."""


@dataclass(slots=True)
class ToolCall:
    """One tool call of choice 0, its streamed fragments joined."""

    id: str | None = None
    type: str = "function"
    name: str | None = None
    arguments: str = ""
    """The argument fragments joined exactly as sent (valid JSON or not)."""


@dataclass(slots=True)
class Usage:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None


@dataclass(slots=True)
class Timings:
    """Stage timings in milliseconds, measured from the moment the request was sent."""

    ttft_ms: float | None = None
    """Request sent → first token."""
    stream_ms: float | None = None
    """Request sent → end of the upstream stream."""
    citations_ms: float | None = None
    """Request sent → finish chunk (citations captured)."""
    sources_ms: float | None = None
    """Duration of quoted-source retrieval."""
    grounding_ms: float | None = None
    """Duration of the grounding check."""
    total_ms: float | None = None
    """Request sent → ``done``."""
    first_claim_ms: float | None = None
    """Request sent → first ``claim`` event (None when no claim was emitted)."""


@dataclass(slots=True)
class CitedAnswer:
    """Everything known about one answer: text, citations, sources, grounding, faults."""

    text: str = ""
    """Raw text of choice 0: exactly the concatenation of its token texts."""
    display_text: str = ""
    """Text as displayed under the marker mode (equal to ``text`` in ``keep`` mode)."""
    finish_reason: str | None = None
    id: str | None = None
    model: str | None = None
    citations: list[Citation] = field(default_factory=list)
    citation_refs: list[CitationRef] = field(default_factory=list)
    dangling_refs: list[int] = field(default_factory=list)
    """Footnote numbers written in the text that point at no citation."""
    uncited_documents: list[int] = field(default_factory=list)
    """``document_index`` values of citations no footnote points at."""
    sources: list[QuotedSource] = field(default_factory=list)
    grounding: GroundingResult | None = None
    usage: Usage | None = None
    errors: list[Any] = field(default_factory=list)
    """``ErrorEvent`` objects, in the order they happened."""
    timings: Timings = field(default_factory=Timings)
    complete: bool = False
    """True when the upstream stream ended cleanly (``[DONE]`` or a finish reason); false
    after a fault that cut the answer, including ``finish_reason: "error"``."""
    reasoning_text: str = ""
    """Choice 0's reasoning deltas joined."""
    tool_calls: list[ToolCall] = field(default_factory=list)
    """Choice 0's tool calls, in ``tool_index`` order."""
    refusal: str | None = None
    """Choice 0's refusal deltas joined, or ``None`` when it did not refuse."""
    references: list[Any] = field(default_factory=list)
    """Mistral ``reference`` content parts of choice 0, as received (plain JSON)."""
    citation_spans: list[CitationSpan] = field(default_factory=list)
    """Spans of ``url_citation`` annotations (see :class:`CitationSpan`)."""
    errors_dropped: int = 0
    """Errors beyond the first 1,000 are counted here, not kept in ``errors``."""
    enrichment_skipped: str | None = None
    """Why post-stream enrichers did not run: ``"refusal"`` or ``"incomplete"``."""
    claims: list[Any] = field(default_factory=list)
    """``ClaimEvent`` objects, in the order they were emitted (every checker's)."""
    skipped_types: dict[str, int] = field(default_factory=dict)
    """Provider event or content types the dialect does not know (a newer API version's),
    skipped without failing the answer: type → how many were skipped (at most 32 types;
    the rest are counted under ``"(other types)"``). Empty when nothing was skipped."""
    provider_tools: list[Any] = field(default_factory=list)
    """``ProviderToolEvent`` objects (the tools the provider ran itself: web search, code
    execution, MCP…), calls and results in the order they came; at most
    ``StreamBounds.max_tool_calls`` tools."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = _plain(self)
        return out

    def raise_for_error(self) -> CitedAnswer:
        """This answer, unless it failed: then raise an
        :class:`~streamcite.core.errors.AnswerError` (a :class:`StreamciteError
        <streamcite.core.errors.StreamciteError>`) carrying the first error's ``code``.

        Failed means cut before its end (``complete`` false) or any error recorded,
        of any stage: connect (:class:`~streamcite.core.errors.ConnectFailed`), HTTP
        (:class:`~streamcite.core.errors.UpstreamRefused`), time limit
        (:class:`~streamcite.core.errors.AnswerTimeout`), a broken stream
        (:class:`~streamcite.core.errors.AnswerIncomplete`), an enricher
        (:class:`~streamcite.core.errors.EnrichmentFailed`).

        >>> CitedAnswer(text="ok", complete=True).raise_for_error().text
        'ok'
        """
        from streamcite.core.errors import answer_error

        error = answer_error(self)
        if error is not None:
            raise error
        return self

    def citation_for(self, number: int) -> Citation | None:
        """The citation a one-based footnote ``[number]`` points at, if any."""
        for c in self.citations:
            if c.document_index == number - 1:
                return c
        return None


class LazyList:
    """A compact stored form of a list field, made into the list on first read
    (``streamcite.core.refs.CitationRefs`` for :attr:`CitedAnswer.citation_refs`)."""

    __slots__ = ()

    def tolist(self) -> list[Any]:
        """The list this stands for, made of new objects."""
        raise NotImplementedError


# CitedAnswer.citation_refs is a plain list to every reader (orjson, ==, repr, pickle,
# dataclasses.replace, mutation), but an answer builder stores it compactly: a
# snapshot of an answer with a marker every few tokens would otherwise make tens of
# thousands of CitationRef objects (about 100 bytes each) that few callers read. The
# slot is read through this property, which makes the list on first read and keeps it.
_REFS_SLOT: Any = CitedAnswer.__dict__["citation_refs"]  # the slot's member descriptor


def _get_citation_refs(answer: CitedAnswer) -> list[CitationRef]:
    value = _REFS_SLOT.__get__(answer, CitedAnswer)
    if type(value) is not list and isinstance(value, LazyList):
        value = value.tolist()
        _REFS_SLOT.__set__(answer, value)
    return cast(list[CitationRef], value)


def _set_citation_refs(answer: CitedAnswer, value: list[CitationRef]) -> None:
    _REFS_SLOT.__set__(answer, value)


setattr(  # noqa: B010  (mypy must keep seeing the declared field, not the property)
    CitedAnswer,
    "citation_refs",
    property(_get_citation_refs, _set_citation_refs, doc="The inline footnote markers seen."),
)


def refs_slot() -> Any:
    """The slot :attr:`CitedAnswer.citation_refs` is stored in (an answer built field by
    field stores a list, or a :class:`LazyList`, there directly)."""
    return _REFS_SLOT


def set_lazy_citation_refs(answer: CitedAnswer, refs: LazyList) -> None:
    """Store ``refs`` as ``answer.citation_refs``, made into a list on first read."""
    _REFS_SLOT.__set__(answer, refs)


# -- building an answer without __init__ (every stream's ``done``) -------------------
# These stay interpreted on purpose (this module is not compiled): in the interpreter
# each store below is one specialised slot store, where compiled code storing into an
# interpreted class goes through the generic setattr (24 of them were most of a compiled
# ``done``). Keyword arguments and ``__init__``'s default factories cost more still.

_new = object.__new__


def answer_of(  # one positional argument per field, in field order
    text: str,
    display_text: str,
    finish_reason: str | None,
    id: str | None,
    model: str | None,
    citations: list[Citation],
    citation_refs: list[CitationRef] | LazyList,
    dangling_refs: list[int],
    uncited_documents: list[int],
    sources: list[QuotedSource],
    grounding: GroundingResult | None,
    usage: Usage | None,
    errors: list[Any],
    timings: Timings | None,
    complete: bool,
    reasoning_text: str,
    tool_calls: list[ToolCall],
    refusal: str | None,
    references: list[Any],
    citation_spans: list[CitationSpan],
    errors_dropped: int,
    enrichment_skipped: str | None,
    claims: list[Any],
    skipped_types: dict[str, int],
    provider_tools: list[Any],
) -> CitedAnswer:
    """A :class:`CitedAnswer` of these fields, stored as given (a :class:`LazyList`
    ``citation_refs`` becomes a list on first read), but ``timings``: a copy of it
    (``None``: new timings, all ``None``), made here too (one call less)."""
    t = _new(Timings)
    if timings is None:
        t.ttft_ms = t.stream_ms = t.citations_ms = t.sources_ms = None
        t.grounding_ms = t.total_ms = t.first_claim_ms = None
    else:
        t.ttft_ms, t.stream_ms = timings.ttft_ms, timings.stream_ms
        t.citations_ms, t.sources_ms = timings.citations_ms, timings.sources_ms
        t.grounding_ms, t.total_ms = timings.grounding_ms, timings.total_ms
        t.first_claim_ms = timings.first_claim_ms
    a = _new(CitedAnswer)
    a.text = text
    a.display_text = display_text
    a.finish_reason = finish_reason
    a.id = id
    a.model = model
    a.citations = citations
    _REFS_SLOT.__set__(a, citation_refs)
    a.dangling_refs = dangling_refs
    a.uncited_documents = uncited_documents
    a.sources = sources
    a.grounding = grounding
    a.usage = usage
    a.errors = errors
    a.timings = t
    a.complete = complete
    a.reasoning_text = reasoning_text
    a.tool_calls = tool_calls
    a.refusal = refusal
    a.references = references
    a.citation_spans = citation_spans
    a.errors_dropped = errors_dropped
    a.enrichment_skipped = enrichment_skipped
    a.claims = claims
    a.skipped_types = skipped_types
    a.provider_tools = provider_tools
    return a


def _check_fields() -> None:
    """Hold the hand-built constructors above to the classes' fields (import time)."""
    from dataclasses import fields
    from inspect import signature

    for cls, built in ((CitedAnswer, answer_of),):
        names = [f.name for f in fields(cls)]
        if list(signature(built).parameters) != names:
            raise ImportError(f"models.py: {built.__name__} must take {cls.__name__}'s fields")
    t = [f.name for f in fields(Timings)]
    if t != ["ttft_ms", "stream_ms", "citations_ms", "sources_ms", "grounding_ms",
             "total_ms", "first_claim_ms"]:  # fmt: skip
        raise ImportError("models.py: answer_of must copy Timings' fields")


_check_fields()
