"""How :meth:`~streamcite.core.answer.AnswerBuilder.add` folds each event type into the
builder (by exact type; events the interpreters fold themselves need not be passed).
Sans-I/O. Each function takes the builder as ``b`` (typed ``Any``: this module cannot
import :mod:`~streamcite.core.answer`, which imports it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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

__all__ = ["FOLD", "MAX_CLAIMS"]

MAX_CLAIMS = 10_000
"""At most this many claims are kept on an answer (a capped answer has far fewer
sentences); beyond, they are still emitted as events but not kept."""


def _token(b: Any, ev: TokenEvent) -> None:
    if ev.index == 0:
        b.text_parts.append(ev.text)
        if not b.display_is_text:
            b.display_parts.append(ev.display)


def _citations(b: Any, ev: CitationsEvent) -> None:
    if ev.citations:
        b.citations = ev.citations
    if ev.spans:
        b.citation_spans = ev.spans


def _finish(b: Any, ev: FinishEvent) -> None:
    if ev.index == 0:
        b.finish_reason = ev.reason
        b.complete = True


def _meta(b: Any, ev: MetaEvent) -> None:
    b.id = b.id or ev.id
    b.model = b.model or ev.model


def _reasoning(b: Any, ev: ReasoningEvent) -> None:
    if ev.index == 0:
        b.reasoning_parts.append(ev.text)


def _refusal(b: Any, ev: RefusalEvent) -> None:
    if ev.index == 0:
        b.refusal_parts.append(ev.text)


def _tool_call(b: Any, ev: ToolCallEvent) -> None:
    if ev.index == 0:
        b.tool_call(ev)


def _sources(b: Any, ev: SourcesEvent) -> None:
    b.sources = ev.sources


def _claim(b: Any, ev: ClaimEvent) -> None:
    if len(b.claims) < MAX_CLAIMS:
        b.claims.append(ev)


def _provider_tool(b: Any, ev: ProviderToolEvent) -> None:
    if len(b.provider_tools) < 2 * b.bounds.max_tool_calls:  # a call, a result
        b.provider_tools.append(ev)


def _grounding(b: Any, ev: GroundingEvent) -> None:
    b.grounding = ev.to_result()


def _usage(b: Any, ev: UsageEvent) -> None:
    b.usage = ev.to_usage()


def _error(b: Any, ev: ErrorEvent) -> None:
    b.error(ev)


def _citation_ref(b: Any, ev: CitationRefEvent) -> None:
    b.refs.add_event(ev)


FOLD: dict[type, Callable[[Any, Any], None]] = {
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
