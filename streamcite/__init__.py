"""streamcite: citation-aware streaming of LLM answers.

Bytes in → incremental SSE decode → chunk interpretation → typed events as they
arrive (tokens, live footnote references) → citations at the finish chunk → after
the stream, quoted sources and grounding checks, concurrently → one CitedAnswer.
"""

from streamcite.core.answer import AnswerBuilder
from streamcite.core.api import ChatStreamParser, aiter_events, iter_events
from streamcite.core.chunks import ChunkInterpreter
from streamcite.core.errors import EventTooLarge, MalformedResponse, StreamciteError, UpstreamError
from streamcite.core.events import (
    CitationRefEvent,
    CitationsEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    FinishEvent,
    GroundingEvent,
    MetaEvent,
    ReasoningEvent,
    RefusalEvent,
    SourcesEvent,
    TokenEvent,
    ToolCallEvent,
    UsageEvent,
    event_to_json,
)
from streamcite.core.grounding import CitedChunk, GroundingClaim, GroundingFact, GroundingResult
from streamcite.core.markers import FootnoteDetector, MarkerMode, render_superscript
from streamcite.core.models import (
    Citation,
    CitationRef,
    CitationSpan,
    CitedAnswer,
    Timings,
    ToolCall,
    Usage,
)
from streamcite.core.sources import DataSource, QuotedSource, SourceChunk, SourceDocument
from streamcite.core.sse import ServerSentEvent, SSEDecoder
from streamcite.enrich.base import EnrichContext, Enricher
from streamcite.pipeline import ChatStream, Timeouts, stream_chat

__version__ = "0.1.0"

# Clients and apps load on first use, so `import streamcite` (and the CLI) stays light.
_LAZY = {
    "WikitSources": "streamcite.enrich.wikit",
    "GoogleGrounding": "streamcite.enrich.google",
    "LocalGrounding": "streamcite.local.checker",
    "LocalBackend": "streamcite.local.server",
    "BackendConfig": "streamcite.local.server",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'streamcite' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "AnswerBuilder",
    "BackendConfig",
    "ChatStream",
    "ChatStreamParser",
    "ChunkInterpreter",
    "Citation",
    "CitationRef",
    "CitationRefEvent",
    "CitationSpan",
    "CitationsEvent",
    "CitedAnswer",
    "CitedChunk",
    "DataSource",
    "DoneEvent",
    "EnrichContext",
    "Enricher",
    "ErrorEvent",
    "Event",
    "EventTooLarge",
    "FinishEvent",
    "FootnoteDetector",
    "GoogleGrounding",
    "GroundingClaim",
    "GroundingEvent",
    "GroundingFact",
    "GroundingResult",
    "LocalBackend",
    "LocalGrounding",
    "MalformedResponse",
    "MarkerMode",
    "MetaEvent",
    "QuotedSource",
    "ReasoningEvent",
    "RefusalEvent",
    "SSEDecoder",
    "ServerSentEvent",
    "SourceChunk",
    "SourceDocument",
    "SourcesEvent",
    "StreamciteError",
    "Timeouts",
    "Timings",
    "TokenEvent",
    "ToolCall",
    "ToolCallEvent",
    "UpstreamError",
    "Usage",
    "UsageEvent",
    "WikitSources",
    "aiter_events",
    "event_to_json",
    "iter_events",
    "render_superscript",
    "stream_chat",
]
