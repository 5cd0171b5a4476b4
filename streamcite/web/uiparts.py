"""The AI SDK UI message stream's frames and the parts built from plain data: one
``data:`` frame, the finish reason's name, the ``data-citation-spans`` part, a provider-run
tool's parts. Used by :mod:`streamcite.web.uimessage`'s encoder."""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import orjson

__all__ = ["field", "finish_reason", "frame", "provider_tool_parts", "spans_part"]

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


MAX_PROVIDER_TOOLS = 4096
"""Provider-run tools whose parts' state one message tracks (the dialects hold an answer
to far fewer); beyond, a tool's input part is written again with its output."""
_FAILED = frozenset({"error", "failed", "incomplete"})


def provider_tool_parts(ev: Any, inputs: dict[str, bool]) -> bytes:
    """A ``provider_tool`` event → the AI SDK's tool parts with ``providerExecuted: true``.

    A call with its input: ``tool-input-available``; a call without (the Responses API
    sends some inputs only with the result): ``tool-input-start``. A result:
    ``tool-input-available`` first if it was not written (the input, else ``{}``), then
    ``tool-output-available`` (``output``: ``{"status", "summary"}``), or
    ``tool-output-error`` for a failed or errored tool. ``inputs``: toolCallId → its
    input part was written (the encoder's, one per message)."""
    tid = field(ev, "id")
    index = field(ev, "tool_index")
    call_id = tid if type(tid) is str and tid else f"provider-tool-{index}"
    name = field(ev, "name")
    head = {"toolCallId": call_id, "toolName": name if type(name) is str and name else "tool"}
    raw = field(ev, "input")
    try:
        value = orjson.loads(raw) if type(raw) is str else None
    except orjson.JSONDecodeError:
        value = raw
    out = b""
    if field(ev, "phase") == "call" and value is None:
        if call_id not in inputs:
            out = frame({"type": "tool-input-start", **head, "providerExecuted": True})
            if len(inputs) < MAX_PROVIDER_TOOLS:
                inputs[call_id] = False
        return out
    if not inputs.get(call_id):
        input_value = value if value is not None else {}
        out = frame(
            {"type": "tool-input-available", **head, "input": input_value, "providerExecuted": True}
        )
        if len(inputs) < MAX_PROVIDER_TOOLS or call_id in inputs:
            inputs[call_id] = True
    if field(ev, "phase") != "result":
        return out
    status, summary = field(ev, "status"), field(ev, "summary")
    if status in _FAILED:
        code = summary.get("error_code") if isinstance(summary, Mapping) else None
        text = f"{head['toolName']}: {status}" + (f" ({code})" if isinstance(code, str) else "")
        part: dict[str, Any] = {
            "type": "tool-output-error",
            "toolCallId": call_id,
            "errorText": text,
        }
    else:
        output = {"status": status, "summary": summary}
        part = {"type": "tool-output-available", "toolCallId": call_id, "output": output}
    return out + frame({**part, "providerExecuted": True})
