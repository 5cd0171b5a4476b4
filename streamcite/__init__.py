"""streamcite: citation-aware streaming of LLM answers.

Bytes in → incremental SSE decode → chunk interpretation → typed events as they
arrive (tokens, reasoning, tool calls, live footnote references) → citations at the
finish chunk → after the stream, quoted sources and grounding checks, concurrently →
one CitedAnswer.

The five that matter::

    stream_chat(request, base_url=..., api=...)  # async iterator of events (stream_chat_sync: sync)
    ChatStream                           # what stream_chat returns: .text_stream, .until_done()
    CitedAnswer                          # the final answer: text, citations, sources, grounding
    iter_events / aiter_events / answer_from_response  # the sans-I/O core: bytes or bodies

Everything else has one home (docs/imports.md): ``streamcite.events`` (event classes),
``streamcite.models`` (citations, sources, grounding), ``streamcite.enrich`` (Wikit,
Google, the offline checker), ``streamcite.local`` (embedded backend),
``streamcite.relay``, ``streamcite.core.*`` (decoder, interpreter, markers). Names load
on first use, so ``import streamcite`` pulls in no I/O library.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streamcite.core.api import aiter_events, answer_from_response, iter_events
    from streamcite.core.errors import StreamciteError
    from streamcite.core.events import Event
    from streamcite.core.models import CitedAnswer
    from streamcite.enrich.base import Enricher
    from streamcite.pipeline import ChatStream, Timeouts, stream_chat
    from streamcite.pipeline.sync import stream_chat_sync

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
    "answer_from_response",
    "iter_events",
    "stream_chat",
    "stream_chat_sync",
]

# Public names -> the module that defines them (the twelve of __all__).
_LAZY: dict[str, str] = {
    "ChatStream": "streamcite.pipeline",
    "Timeouts": "streamcite.pipeline",
    "stream_chat": "streamcite.pipeline",
    "stream_chat_sync": "streamcite.pipeline.sync",
    "CitedAnswer": "streamcite.core.models",
    "Enricher": "streamcite.enrich.base",
    "Event": "streamcite.core.events",
    "StreamciteError": "streamcite.core.errors",
    "aiter_events": "streamcite.core.api",
    "answer_from_response": "streamcite.core.api",
    "iter_events": "streamcite.core.api",
}

# Names of 0.1 that imported from the top level: each has one public path now (the
# table in docs/imports.md). They still work from here, with a DeprecationWarning
# naming that path; they go in 0.3.
_MOVED: dict[str, str] = {
    **dict.fromkeys(
        (
            "CitationRefEvent", "CitationsEvent", "DoneEvent", "ErrorEvent", "FinishEvent",
            "GroundingEvent", "MetaEvent", "SourcesEvent", "TokenEvent", "UsageEvent",
            "ReasoningEvent", "ToolCallEvent", "RefusalEvent", "event_to_json",
        ),
        "streamcite.events",
    ),
    **dict.fromkeys(
        (
            "Citation", "CitationRef", "CitationSpan", "Timings", "Usage", "ToolCall",
            "CitedChunk", "GroundingClaim", "GroundingFact", "GroundingResult",
            "DataSource", "QuotedSource", "SourceChunk", "SourceDocument",
        ),
        "streamcite.models",
    ),
    **dict.fromkeys(("EnrichContext", "WikitSources", "GoogleGrounding", "LocalGrounding"),
                    "streamcite.enrich"),
    **dict.fromkeys(("LocalBackend", "BackendConfig"), "streamcite.local"),
    "AnswerBuilder": "streamcite.core.answer",
    "ChatStreamParser": "streamcite.core.api",
    "ChunkInterpreter": "streamcite.core.chunks",
    "EventTooLarge": "streamcite.core.errors",
    "MalformedResponse": "streamcite.core.errors",
    "UpstreamError": "streamcite.core.errors",
    "FootnoteDetector": "streamcite.core.markers",
    "MarkerMode": "streamcite.core.markers",
    "render_superscript": "streamcite.core.markers",
    "ServerSentEvent": "streamcite.core.sse",
    "SSEDecoder": "streamcite.core.sse",
}  # fmt: skip


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value  # later lookups skip this function
        return value
    moved = _MOVED.get(name)
    if moved is None:
        raise AttributeError(f"module 'streamcite' has no attribute {name!r}")
    if sys._getframe(1).f_code.co_name == "_handle_fromlist":
        # ``from streamcite import X`` asks twice (importlib's hasattr, then the import
        # itself): the warning is given once, for the importing line.
        return getattr(importlib.import_module(moved), name)
    warnings.warn(
        f"'from streamcite import {name}' is deprecated: use 'from {moved} import {name}' "
        "(docs/imports.md); the top-level name goes in 0.3",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(moved), name)  # not cached: each use warns


def __dir__() -> list[str]:
    return sorted(__all__)
