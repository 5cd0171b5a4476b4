"""The rarer parts of a ``delta``: reasoning, tool calls, refusals, content parts,
``url_citation`` annotations — and the provider errors and endings around them. Sans-I/O.

Called from the chunk interpreter's general path only: a chunk whose delta is a plain
``content`` string never reaches this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from streamcite.core.bounds import MAX_CITATIONS, MAX_TOOL_CALLS, TOO_MANY_CITATIONS
from streamcite.core.errors_payload import http_status
from streamcite.core.events import (
    CitationsEvent,
    ErrorEvent,
    Event,
    ReasoningEvent,
    RefusalEvent,
    ToolCallEvent,
)
from streamcite.core.models import Citation, CitationSpan
from streamcite.core.offsets import OffsetMap
from streamcite.core.quote import dump_json, quote
from streamcite.core.tool_placer import ToolPlacer

if TYPE_CHECKING:
    from streamcite.core.chat_state import ChatState

__all__ = [
    "MAX_TOOL_CALLS",
    "MAX_URL_CITATIONS",
    "ToolPlacer",
    "check_spans",
    "check_tool_arguments",
    "http_status",
    "interpret_delta",
]


def interpret_delta(it: ChatState, idx: int, delta: dict[str, Any], out: list[Event]) -> None:
    """Everything of one choice's delta except a plain ``content`` string."""
    content = delta.get("content")
    if content is not None and type(content) is not str:
        if type(content) is list:
            _content_parts(it, idx, content, out)
        else:
            it._fault(out, "bad_chunk", f"content is not a string: {quote(content)}")
    rc, rs = delta.get("reasoning_content"), delta.get("reasoning")
    if rc:
        _reasoning(it, idx, rc, "reasoning_content", out)
    # vLLM (and servers copying it) fill both fields with the same text: one event.
    # Two different texts are both kept, reasoning_content first.
    if rs and rs != rc:
        _reasoning(it, idx, rs, "reasoning", out)
    refusal = delta.get("refusal")
    if refusal:
        if type(refusal) is str:
            out.append(RefusalEvent(idx, refusal))
            if idx == 0:
                it.builder.refusal_parts.append(refusal)
        else:
            it._fault(out, "bad_chunk", f"refusal is not a string: {quote(refusal)}")
    calls = delta.get("tool_calls")
    if calls:
        _tool_calls(it, idx, calls, out)
    notes = delta.get("annotations")
    if notes and idx == 0:  # the answer's citations are choice 0's (others: ignored)
        _annotations(it, notes, out)


def _reasoning(it: ChatState, idx: int, text: Any, key: str, out: list[Event]) -> None:
    if type(text) is not str:
        it._fault(out, "bad_chunk", f"{key} is not a string: {quote(text)}")
        return
    out.append(ReasoningEvent(idx, text))
    if idx == 0:
        it.builder.reasoning_parts.append(text)


def _content_parts(it: ChatState, idx: int, parts: list[Any], out: list[Event]) -> None:
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
                        it._fault(out, "bad_chunk", f"thinking part is not text: {quote(sub)}")
                continue
        elif kind == "reference":
            if idx == 0:
                it.builder.references.append(part)
            continue
        it._fault(out, "bad_content_part", f"content part not understood: {quote(part)}")


MAX_URL_CITATIONS = MAX_CITATIONS
"""``url_citation`` citations per answer (``bounds.max_citations``). Each annotation
chunk's ``citations`` event carries the whole list so far (consumers replace theirs), so
a flood of one-annotation chunks would grow the events quadratically; beyond this,
annotations are reported once (``too_many_citations``) and dropped."""


_STR_OR_NONE = frozenset({str, type(None)})
_ToolEntry = tuple["int | None", "str | None", "str | None", "str | None", "str | None"]
"""One tool-call delta, checked: index, id, type, name, arguments."""


def _tool_entry(call: Any) -> _ToolEntry | str:
    """The fields of one ``tool_calls`` entry, or what is wrong with it."""
    if type(call) is not dict:
        return "not an object"
    tidx, cid, kind, fn = call.get("index"), call.get("id"), call.get("type"), call.get("function")
    if tidx is not None and (type(tidx) is not int or tidx < 0):
        return "index is not an integer >= 0"
    if fn is None:
        fn = {}
    elif type(fn) is not dict:
        return "function is not an object"
    name, args = fn.get("name"), fn.get("arguments")
    if type(args) is dict:  # some servers send the arguments already parsed
        args = dump_json(args)
        if args is None:
            return "arguments nested too deeply"
    if not _STR_OR_NONE.issuperset((type(cid), type(kind), type(name), type(args))):
        for field, v in (("id", cid), ("type", kind), ("name", name), ("arguments", args)):
            if v is not None and type(v) is not str:
                return f"{field} is not a string"
    return tidx, cid, kind, name, args


def _tool_calls(it: ChatState, idx: int, calls: Any, out: list[Event]) -> None:
    if type(calls) is not list:
        it._fault(out, "bad_chunk", f"tool_calls is not an array: {quote(calls)}")
        return
    placer = it._tools.get(idx)
    if placer is None:
        placer = it._tools[idx] = ToolPlacer(it.builder.bounds.max_tool_calls)
    several = len(calls) > 1
    for pos, call in enumerate(calls):
        entry = _tool_entry(call)
        if isinstance(entry, str):
            # Not folded into any call: a wrong type is never taken for a missing field.
            it._fault(out, "bad_tool_call", f"tool call {entry}: {quote(call)}")
            continue
        tidx, cid, kind, name, args = entry
        tool_index = placer.place(tidx, cid, name, pos if several else -1)
        if tool_index < 0:
            msg = f"tool call beyond the {placer.limit:,} of a choice: {quote(call)}"
            it._fault(out, "bad_tool_call", msg)
            continue
        ev = ToolCallEvent(idx, tool_index, cid or None, name or None, args or "")
        out.append(ev)
        if idx == 0:
            it.builder.tool_call(ev)
            if kind:
                it.builder.tool_calls[ev.tool_index].type = kind


def _url_citation(note: Any) -> tuple[str, str | None, int | None, int | None] | str:
    """An annotation's url, title and span, or what is wrong with it."""
    uc = note.get("url_citation") if type(note) is dict else None
    if type(note) is not dict or note.get("type") != "url_citation" or type(uc) is not dict:
        return "not understood"
    url, title = uc.get("url"), uc.get("title")
    start, end = uc.get("start_index"), uc.get("end_index")
    if type(url) is not str:
        return "url is not a string"
    if title is not None and type(title) is not str:
        return "title is not a string"
    if start is None and end is None:
        return url, title, None, None  # no span sent: the citation alone
    if type(start) is not int or type(end) is not int or not 0 <= start <= end:
        return "span is not 0 <= start_index <= end_index (integers)"
    return url, title, start, end


def _annotations(it: ChatState, notes: Any, out: list[Event]) -> None:
    """OpenAI search models: ``url_citation`` annotations become Citations with a span."""
    if type(notes) is not list:
        it._fault(out, "bad_chunk", f"annotations is not an array: {quote(notes)}")
        return
    b = it.builder
    n, cap = len(b.citations), b.bounds.max_citations
    # The event holds the lists it was given (events are never changed afterwards), so
    # the new ones are built once per chunk, not once per annotation (that was quadratic).
    citations, spans = list(b.citations), list(b.citation_spans)
    for note in notes:
        got = _url_citation(note)
        if isinstance(got, str):
            it._fault(out, "bad_annotation", f"annotation {got}: {quote(note)}")
            continue
        if n >= cap:
            if not it.annotations_dropped:  # reported once per stream, then counted
                msg = f"more than {cap} url_citation annotations: the rest dropped"
                it._fault(out, TOO_MANY_CITATIONS, msg)
            it.annotations_dropped += 1
            continue
        url, title, start, end = got
        citations.append(Citation(document_title=title, document_index=n, source_url=url))
        s16, e16 = _utf16(it, start, end)
        spans.append(CitationSpan(n, start, end, s16, e16))  # url_citation: no passage
        n += 1
    if n > len(b.citations):
        b.citations, b.citation_spans = citations, spans
        out.append(CitationsEvent(citations=citations, spans=spans))
        if it.finished or it.done:
            check_spans(it, out)  # the text is final already


def _utf16(it: ChatState, start: int | None, end: int | None) -> tuple[int | None, int | None]:
    """A span's offsets in UTF-16 units, when the text it indexes has arrived (else None)."""
    if start is None or end is None or end > it.builder.text_length():
        return (None, None)
    text = it.builder.text_so_far()
    if text.isascii():
        return (start, end)
    m = OffsetMap(text)
    return (m.char_to_utf16(start), m.char_to_utf16(end))


def check_spans(it: ChatState, out: list[Event]) -> None:
    """Spans not checked yet that end beyond choice 0's text: reported, citation kept.

    OpenAI's spans index the final message text, so they are checked once the text is
    final (choice 0's finish, ``[DONE]``), not as they arrive."""
    spans = it.builder.citation_spans
    if it.spans_checked >= len(spans):
        return
    size = it.builder.text_length()
    for sp in spans[it.spans_checked :]:
        if sp.end is not None and sp.end > size:
            it._fault(
                out,
                "bad_annotation",
                f"url_citation span {sp.start}-{sp.end} of citation {sp.document_index}"
                f" is beyond the answer text ({size} characters)",
            )
    it.spans_checked = len(spans)


def check_tool_arguments(it: ChatState, out: list[Event]) -> None:
    """At choice 0's finish: tool arguments that are not valid JSON are an error (kept)."""
    it.builder.compact()  # the arguments' fragments joined
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


def finish_error(it: ChatState, obj: dict[str, Any], idx: int, out: list[Event]) -> None:
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
