"""The rarer parts of a ``delta``: reasoning, tool calls, refusals, content parts,
``url_citation`` annotations — and the provider errors and endings around them. Sans-I/O.

Called from the chunk interpreter's general path only: a chunk whose delta is a plain
``content`` string never reaches this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from streamcite.core.events import (
    CitationsEvent,
    ErrorEvent,
    Event,
    ReasoningEvent,
    RefusalEvent,
    ToolCallEvent,
)
from streamcite.core.models import Citation, CitationSpan

if TYPE_CHECKING:
    from streamcite.core.chunks import ChunkInterpreter

__all__ = ["check_tool_arguments", "http_status", "interpret_delta"]


def http_status(code: Any) -> int | None:
    """An ``error.code`` that is an HTTP status (``502`` or ``"502"``), else ``None``."""
    if type(code) is int:
        n = code
    elif type(code) is str and code.isascii() and code.isdigit() and len(code) == 3:
        n = int(code)
    else:
        return None
    return n if 100 <= n <= 599 else None


def interpret_delta(
    it: ChunkInterpreter, idx: int, delta: dict[str, Any], out: list[Event]
) -> None:
    """Everything of one choice's delta except a plain ``content`` string."""
    content = delta.get("content")
    if content is not None and type(content) is not str:
        if type(content) is list:
            _content_parts(it, idx, content, out)
        else:
            it._fault(out, "bad_chunk", f"content is not a string: {content!r:.120}")
    for key in ("reasoning_content", "reasoning"):
        text = delta.get(key)
        if text:
            _reasoning(it, idx, text, key, out)
    refusal = delta.get("refusal")
    if refusal:
        if type(refusal) is str:
            out.append(RefusalEvent(idx, refusal))
            if idx == 0:
                it.builder.refusal_parts.append(refusal)
        else:
            it._fault(out, "bad_chunk", f"refusal is not a string: {refusal!r:.120}")
    calls = delta.get("tool_calls")
    if calls:
        _tool_calls(it, idx, calls, out)
    notes = delta.get("annotations")
    if notes:
        _annotations(it, notes, out)


def _reasoning(it: ChunkInterpreter, idx: int, text: Any, key: str, out: list[Event]) -> None:
    if type(text) is not str:
        it._fault(out, "bad_chunk", f"{key} is not a string: {text!r:.120}")
        return
    out.append(ReasoningEvent(idx, text))
    if idx == 0:
        it.builder.reasoning_parts.append(text)


def _content_parts(it: ChunkInterpreter, idx: int, parts: list[Any], out: list[Event]) -> None:
    """Mistral: ``text`` parts are tokens, ``thinking`` parts reasoning, ``reference`` kept."""
    for part in parts:
        kind = part.get("type") if type(part) is dict else None
        if kind == "text":
            text = part.get("text")
            if type(text) is str:
                if text:
                    it._token(idx, text, out)
                continue
        elif kind == "thinking":
            inner = part.get("thinking")
            if type(inner) is str:
                inner = [{"type": "text", "text": inner}]
            if type(inner) is list:
                for sub in inner:
                    text = sub.get("text") if type(sub) is dict else None
                    if type(text) is str:
                        if text:
                            _reasoning(it, idx, text, "thinking", out)
                    else:
                        it._fault(out, "bad_chunk", f"thinking part is not text: {sub!r:.120}")
                continue
        elif kind == "reference":
            if idx == 0:
                it.builder.references.append(part)
            continue
        it._fault(out, "bad_content_part", f"content part not understood: {part!r:.120}")


def _tool_calls(it: ChunkInterpreter, idx: int, calls: Any, out: list[Event]) -> None:
    if type(calls) is not list:
        it._fault(out, "bad_chunk", f"tool_calls is not an array: {calls!r:.120}")
        return
    for pos, call in enumerate(calls):
        if type(call) is not dict:
            it._fault(out, "bad_chunk", f"tool call is not an object: {call!r:.120}")
            continue
        tidx = call.get("index", pos)
        fn = call.get("function")
        fn = fn if type(fn) is dict else {}
        cid, name, args = call.get("id"), fn.get("name"), fn.get("arguments")
        if type(args) is dict:  # some servers send the arguments already parsed
            args = orjson.dumps(args).decode()
        if (
            type(tidx) is not int
            or (cid is not None and type(cid) is not str)
            or (name is not None and type(name) is not str)
            or (args is not None and type(args) is not str)
        ):
            it._fault(out, "bad_chunk", f"tool call not understood: {call!r:.120}")
            continue
        ev = ToolCallEvent(idx, tidx, cid or None, name or None, args or "")
        out.append(ev)
        if idx == 0:
            it.builder.tool_call(ev)
            if type(kind := call.get("type")) is str and kind:
                it.builder.tool_calls[tidx].type = kind


def _annotations(it: ChunkInterpreter, notes: Any, out: list[Event]) -> None:
    """OpenAI search models: ``url_citation`` annotations become Citations with a span."""
    if type(notes) is not list:
        it._fault(out, "bad_chunk", f"annotations is not an array: {notes!r:.120}")
        return
    b = it.builder
    added = False
    for note in notes:
        uc = note.get("url_citation") if type(note) is dict else None
        if type(note) is not dict or note.get("type") != "url_citation" or type(uc) is not dict:
            it._fault(out, "bad_annotation", f"annotation not understood: {note!r:.120}")
            continue
        url, title = uc.get("url"), uc.get("title")
        start, end = uc.get("start_index"), uc.get("end_index")
        n = len(b.citations)
        b.citations = [
            *b.citations,
            Citation(
                document_title=title if type(title) is str else None,
                document_index=n,
                source_url=url if type(url) is str else None,
            ),
        ]
        b.citation_spans = [
            *b.citation_spans,
            CitationSpan(
                n, start if type(start) is int else None, end if type(end) is int else None
            ),
        ]
        added = True
    if added:
        out.append(CitationsEvent(citations=b.citations, spans=b.citation_spans))


def check_tool_arguments(it: ChunkInterpreter, out: list[Event]) -> None:
    """At choice 0's finish: tool arguments that are not valid JSON are an error (kept)."""
    for tidx, tc in sorted(it.builder.tool_calls.items()):
        if not tc.arguments:
            continue  # a call without parameters
        try:
            orjson.loads(tc.arguments)
        except orjson.JSONDecodeError as exc:
            it._fault(
                out,
                "bad_tool_arguments",
                f"tool call {tidx} ({tc.name}) arguments are not valid JSON: {exc}",
            )


def finish_error(it: ChunkInterpreter, obj: dict[str, Any], idx: int, out: list[Event]) -> None:
    """``finish_reason: "error"`` (OpenRouter): the answer was cut."""
    if idx == 0:
        it.cut = True
        it.builder.complete = False
    if not obj.get("error"):  # the chunk's own error object is reported already
        ev = ErrorEvent(
            code="finish_error",
            message=f"choice {idx} finished with reason 'error'",
            retryable=True,
            stage="chunk",
        )
        it.builder.error(ev)
        out.append(ev)
