"""The AI SDK UI message stream's frames and the parts built from plain data: one
``data:`` frame, the finish reason's name, the ``data-citation-spans`` part. Used by
:mod:`streamcite.web.uimessage`'s encoder."""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import orjson

__all__ = ["field", "finish_reason", "frame", "spans_part"]

_FINISH_REASONS = {
    "stop": "stop",
    "length": "length",
    "content_filter": "content-filter",
    "tool_calls": "tool-calls",
    "function_call": "tool-calls",
    "error": "error",
}


def finish_reason(reason: str | None) -> str | None:
    """The AI SDK's finish reason for an OpenAI ``finish_reason`` (None stays None)."""
    if reason is None:
        return None
    return _FINISH_REASONS.get(reason, "other")


def _default(obj: Any) -> Any:
    if isinstance(obj, SimpleNamespace):  # an event given as a mapping
        return vars(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def frame(chunk: Mapping[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(chunk, default=_default) + b"\n\n"


def spans_part(spans: Any, sids: list[str | None]) -> bytes:
    """``data-citation-spans``: each span's ``sourceId`` (``sids``: the event's citations'),
    its UTF-16 offsets into the text and ``citedText``, the passage it quotes (``null``
    where the API sends none). A span without them (the chat dialect's, until
    the text it indexes has arrived) is left out: a later citations event carries it."""
    out = []
    for sp in spans:
        doc = field(sp, "document_index")
        start, end = field(sp, "start_utf16"), field(sp, "end_utf16")
        if type(doc) is int and 0 <= doc < len(sids) and type(start) is int and type(end) is int:
            sid = sids[doc]
            if sid is not None:  # a dropped source (over max_sources) anchors nothing
                text = field(sp, "cited_text")
                cited = text if type(text) is str else None  # the span's own passage
                out.append({"sourceId": sid, "start": start, "end": end, "citedText": cited})
    if not out:
        return b""
    return frame({"type": "data-citation-spans", "id": "citation-spans", "data": {"spans": out}})


def field(obj: Any, name: str) -> Any:
    """A field of a span given as a dataclass or as a mapping (an event's wire form)."""
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)
