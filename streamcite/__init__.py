"""streamcite: citation-aware streaming of LLM answers.

Bytes in → incremental SSE decode → chunk interpretation → typed events as they
arrive (tokens, reasoning, tool calls, live footnote references) → citations at the
finish chunk → after the stream, quoted sources and grounding checks, concurrently →
one CitedAnswer.

The five that matter::

    stream_chat(request, base_url=...)   # async context manager + async iterator of events
    ChatStream                           # what stream_chat returns: .text_stream, .until_done()
    CitedAnswer                          # the final answer: text, citations, sources, grounding
    iter_events / aiter_events           # the sans-I/O core over recorded (async) byte chunks

Everything else lives in its module: ``streamcite.events`` (event classes),
``streamcite.enrich`` (Wikit, Google), ``streamcite.local`` (embedded backend, offline
checker), ``streamcite.relay``, ``streamcite.core`` (decoder, interpreter, markers).
Names load on first use, so ``import streamcite`` pulls in no I/O library.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streamcite.core.api import aiter_events, iter_events
    from streamcite.core.errors import StreamciteError
    from streamcite.core.events import Event
    from streamcite.core.models import CitedAnswer
    from streamcite.enrich.base import Enricher
    from streamcite.pipeline import ChatStream, Timeouts, stream_chat

try:
    __version__ = version("streamcite")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "ChatStream",
    "CitedAnswer",
    "Enricher",
    "Event",
    "StreamciteError",
    "Timeouts",
    "__version__",
    "aiter_events",
    "iter_events",
    "stream_chat",
]

# Public names -> the module that defines them. The first block is __all__; the rest
# stay importable from the top level for code written against 0.1 (not in dir()).
_LAZY: dict[str, str] = {
    "ChatStream": "streamcite.pipeline",
    "Timeouts": "streamcite.pipeline",
    "stream_chat": "streamcite.pipeline",
    "CitedAnswer": "streamcite.core.models",
    "Enricher": "streamcite.enrich.base",
    "Event": "streamcite.core.events",
    "StreamciteError": "streamcite.core.errors",
    "aiter_events": "streamcite.core.api",
    "iter_events": "streamcite.core.api",
    # 0.1 names
    "AnswerBuilder": "streamcite.core.answer",
    "ChatStreamParser": "streamcite.core.api",
    "ChunkInterpreter": "streamcite.core.chunks",
    "EventTooLarge": "streamcite.core.errors",
    "MalformedResponse": "streamcite.core.errors",
    "UpstreamError": "streamcite.core.errors",
    "CitationRefEvent": "streamcite.core.events",
    "CitationsEvent": "streamcite.core.events",
    "DoneEvent": "streamcite.core.events",
    "ErrorEvent": "streamcite.core.events",
    "FinishEvent": "streamcite.core.events",
    "GroundingEvent": "streamcite.core.events",
    "MetaEvent": "streamcite.core.events",
    "SourcesEvent": "streamcite.core.events",
    "TokenEvent": "streamcite.core.events",
    "UsageEvent": "streamcite.core.events",
    "ReasoningEvent": "streamcite.core.events",
    "ToolCallEvent": "streamcite.core.events",
    "RefusalEvent": "streamcite.core.events",
    "event_to_json": "streamcite.core.events",
    "CitedChunk": "streamcite.core.grounding",
    "GroundingClaim": "streamcite.core.grounding",
    "GroundingFact": "streamcite.core.grounding",
    "GroundingResult": "streamcite.core.grounding",
    "FootnoteDetector": "streamcite.core.markers",
    "MarkerMode": "streamcite.core.markers",
    "render_superscript": "streamcite.core.markers",
    "Citation": "streamcite.core.models",
    "CitationRef": "streamcite.core.models",
    "Timings": "streamcite.core.models",
    "Usage": "streamcite.core.models",
    "CitationSpan": "streamcite.core.models",
    "ToolCall": "streamcite.core.models",
    "DataSource": "streamcite.core.sources",
    "QuotedSource": "streamcite.core.sources",
    "SourceChunk": "streamcite.core.sources",
    "SourceDocument": "streamcite.core.sources",
    "ServerSentEvent": "streamcite.core.sse",
    "SSEDecoder": "streamcite.core.sse",
    "EnrichContext": "streamcite.enrich.base",
    "WikitSources": "streamcite.enrich.wikit",
    "GoogleGrounding": "streamcite.enrich.google",
    "LocalGrounding": "streamcite.local.checker",
    "LocalBackend": "streamcite.local.server",
    "BackendConfig": "streamcite.local.server",
    # turn 3: dialects
    "answer_from_response": "streamcite.core.api",
    "Dialect": "streamcite.core.dialects",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'streamcite' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
