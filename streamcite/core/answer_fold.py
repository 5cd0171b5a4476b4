"""How :meth:`~streamcite.core.answer.AnswerBuilder.add` folds each event type into the
builder (by exact type; events the interpreters fold themselves need not be passed).
Sans-I/O. Each function takes the builder as ``b``, typed by :class:`Folded` (the fields
these functions touch): this module cannot import :mod:`~streamcite.core.answer`, which
imports it, and mypy still checks every field read and written here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from streamcite.core.bounds import StreamBounds
from streamcite.core.events import (
    CitationRefEvent,
    CitationsEvent,
    ClaimEvent,
    ErrorEvent,
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
from streamcite.core.models import Citation, CitationSpan, Usage
from streamcite.core.refs import RefStore
from streamcite.core.sources import QuotedSource

__all__ = ["FOLD", "MAX_CLAIMS", "Folded"]

MAX_CLAIMS = 10_000
"""At most this many claims are kept on an answer (a capped answer has far fewer
sentences); beyond, they are still emitted as events but not kept."""


class Folded(Protocol):
    """What the fold functions touch of an :class:`~streamcite.core.answer.AnswerBuilder`."""

    bounds: StreamBounds
    text_parts: list[str]
    display_parts: list[str]
    display_is_text: bool
    reasoning_parts: list[str]
    refusal_parts: list[str]
    citations: list[Citation]
    citation_spans: list[CitationSpan]
    finish_reason: str | None
    complete: bool
    id: str | None
    model: str | None
    sources: list[QuotedSource]
    claims: list[ClaimEvent]
    provider_tools: list[ProviderToolEvent]
    grounding: GroundingResult | None
    usage: Usage | None

    @property
    def refs(self) -> RefStore: ...

    def tool_call(self, ev: ToolCallEvent) -> None: ...

    def error(self, ev: ErrorEvent) -> None: ...


def _token(b: Folded, ev: TokenEvent) -> None:
    if ev.index == 0:
        b.text_parts.append(ev.text)
        if not b.display_is_text:
            b.display_parts.append(ev.display)


def _citations(b: Folded, ev: CitationsEvent) -> None:
    if ev.citations:
        b.citations = ev.citations
    if ev.spans:
        b.citation_spans = ev.spans


def _finish(b: Folded, ev: FinishEvent) -> None:
    if ev.index == 0:
        b.finish_reason = ev.reason
        b.complete = True


def _meta(b: Folded, ev: MetaEvent) -> None:
    b.id = b.id or ev.id
    b.model = b.model or ev.model


def _reasoning(b: Folded, ev: ReasoningEvent) -> None:
    if ev.index == 0:
        b.reasoning_parts.append(ev.text)


def _refusal(b: Folded, ev: RefusalEvent) -> None:
    if ev.index == 0:
        b.refusal_parts.append(ev.text)


def _tool_call(b: Folded, ev: ToolCallEvent) -> None:
    if ev.index == 0:
        b.tool_call(ev)


def _sources(b: Folded, ev: SourcesEvent) -> None:
    b.sources = ev.sources


def _claim(b: Folded, ev: ClaimEvent) -> None:
    if len(b.claims) < MAX_CLAIMS:
        b.claims.append(ev)


def _provider_tool(b: Folded, ev: ProviderToolEvent) -> None:
    if len(b.provider_tools) < 2 * b.bounds.max_tool_calls:  # a call, a result
        b.provider_tools.append(ev)


def _grounding(b: Folded, ev: GroundingEvent) -> None:
    b.grounding = ev.to_result()


def _usage(b: Folded, ev: UsageEvent) -> None:
    b.usage = ev.to_usage()


def _error(b: Folded, ev: ErrorEvent) -> None:
    b.error(ev)


def _citation_ref(b: Folded, ev: CitationRefEvent) -> None:
    b.refs.add_event(ev)


FOLD: dict[type, Callable[[Folded, Any], None]] = {
    TokenEvent: _token,
    CitationRefEvent: _citation_ref,
    CitationsEvent: _citations,
    FinishEvent: _finish,
    UsageEvent: _usage,
    MetaEvent: _meta,
    ErrorEvent: _error,
    ReasoningEvent: _reasoning,
    RefusalEvent: _refusal,
    ToolCallEvent: _tool_call,
    SourcesEvent: _sources,
    GroundingEvent: _grounding,
    ClaimEvent: _claim,
    ProviderToolEvent: _provider_tool,
}
