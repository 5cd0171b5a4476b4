"""Cohere v2 chat SSE → events. Sans-I/O.

``message-start`` → ``meta`` (its ``id``); ``content-delta`` → ``token`` (a ``thinking``
content block: ``reasoning``); ``tool-plan-delta`` → ``reasoning`` (the model's plan, as
it streams); ``tool-call-start`` / ``tool-call-delta`` → ``tool_call``; ``citation-start``
→ a ``citations`` event at once, its span ``start:end`` (characters of the content block
it names, placed in the answer text); ``message-end`` → ``usage`` (``tokens``) and
``finish`` (``ERROR``: an ``error`` first); ``[DONE]`` ends the stream. Ignored:
``content-start`` (empty text), ``content-end``, ``tool-call-end``, ``citation-end``,
``debug``, ``usage.billed_units``.
"""

from __future__ import annotations

from typing import Any

from streamcite.core.answer import AnswerBuilder
from streamcite.core.citation_caps import CITATION_TOO_LARGE
from streamcite.core.dialects._cohere_loop import CohereLoop, args_prefix
from streamcite.core.dialects.base import (
    MAX_SPANS,
    JSONDecodeError,
    StreamState,
    loads,
    status_retryable,
)
from streamcite.core.dialects.protocol import Method
from streamcite.core.events import Event
from streamcite.core.markers import MarkerMode
from streamcite.core.models import Citation
from streamcite.core.quote import quote
from streamcite.core.sse import OVERFLOW, RawEvent

__all__ = ["CohereInterpreter", "finish_reason"]

_REASONS = {
    "COMPLETE": "stop",
    "STOP_SEQUENCE": "stop",
    "MAX_TOKENS": "length",
    "TOOL_CALL": "tool_calls",
    "ERROR": "error",
    "TIMEOUT": "error",
}
_HEAD = b'{"type":"content-delta","index":'
_MID = b',"delta":{"message":{"content":{"text":"'
_THINK = b',"delta":{"message":{"content":{"thinking":"'
_PLAN = b'{"type":"tool-plan-delta","delta":{"message":{"tool_plan":"'
_PLAN_END = b'"}}}'
"""A text delta's bytes, as Cohere sends them: ``_HEAD``, the content index, ``_MID``,
the text, ``"}}}}`` (dialects/hotloop.py)."""
_IGNORED = frozenset({"content-end", "tool-call-end", "citation-end", "debug"})


def finish_reason(raw: str) -> str:
    """Cohere's ``finish_reason`` in the chat vocabulary (unknown ones: ``stop``)."""
    return _REASONS.get(raw, "stop")


def _message(obj: dict[str, Any]) -> dict[str, Any] | None:
    delta = obj.get("delta")
    msg = delta.get("message") if type(delta) is dict else None
    return msg if type(msg) is dict else None


def _source(src: Any) -> tuple[Any, Citation] | None:
    """A citation source (``document`` or ``tool``) → its key and citation."""
    if src.__class__ is not dict:
        return None
    sid, kind = src.get("id"), src.get("type")
    doc = src.get("document")
    if doc.__class__ is dict:
        title, url, text = doc.get("title"), doc.get("url"), doc.get("text")
        if (
            (title is not None and title.__class__ is not str)
            or (url is not None and url.__class__ is not str)
            or (text is not None and text.__class__ is not str)
        ):
            return None
        meta = doc.copy()  # the document's other fields, in its order
        for field in ("title", "url", "text"):
            meta.pop(field, None)
        meta["source_type"] = kind
        if sid is not None:
            meta["source_id"] = sid
        key = ("url", url) if url else ("doc", sid if sid is not None else doc.get("id"))
        return key, Citation(
            cited_text=text, document_title=title, source_url=url, provider_metadata=meta
        )
    if sid.__class__ is str:
        meta = src.copy()
        del meta["id"]
        meta["source_id"] = sid
        return ("tool", sid), Citation(provider_metadata=meta)
    return None


class CohereInterpreter(CohereLoop):
    """Interprets one Cohere v2 chat stream (``/v2/chat``, ``stream: true``)."""

    __slots__ = ("_blocks",)

    dialect = "cohere"
    _END = b'"}}}}'

    def __init__(self, builder: AnswerBuilder | None = None, marker_mode: MarkerMode = "keep"):
        super().__init__(builder, marker_mode)
        self._blocks: dict[int, list[Any]] = {}
        """Per content index: [type, start character]."""

    def event(self, name: bytes, obj: dict[str, Any], out: list[Event]) -> None:
        if "type" not in obj and "message" in obj:
            # An error body sent as an event: {"message": "..."} (HTTP-style).
            self.provider_error("upstream_error", obj.get("message"), None, out)
            return
        self.dispatch(_TABLE, _IGNORED, obj, out)

    def _general(self, item: RawEvent, out: list[Event]) -> None:
        """An event the hot loop did not take: a text block's ``content-delta`` parsed and
        checked inline (the template of that block's deltas then written), anything else
        the general way of :class:`StreamState`."""
        if item is OVERFLOW or item.__class__ is not tuple:  # (identity first: base.py)
            StreamState.feed_raw(self, [item], out)
            return
        data = item[1]
        try:
            obj = loads(data)
        except JSONDecodeError:
            StreamState.feed_raw(self, [item], out)
            return
        if obj.__class__ is not dict:
            self.fault(out, "bad_chunk", f"event is not a JSON object: {data[:120]!r}")
            return
        kind = obj.get("type")
        if (kind == "content-delta" or kind == "tool-plan-delta") and self._template(
            kind, obj, out
        ):
            return
        # The rest as StreamState.event would have it (TemplatedState._typed, inline).
        handler = _TABLE.get(kind) if kind.__class__ is str else None
        if handler is not None:
            handler(self, obj, out)
        elif kind.__class__ is not str or kind not in _IGNORED:
            self.event(item[0], obj, out)

    def _template(self, kind: str, obj: dict[str, Any], out: list[Event]) -> bool:
        """A text or thinking ``content-delta`` of a known block, or a ``tool-plan-delta``:
        taken (a token or a reasoning delta) and the template of the next ones written
        (dialects/_cohere_loop.py). False: the general way reads it."""
        msg = _message(obj)
        if kind == "tool-plan-delta":
            t = msg.get("tool_plan") if msg is not None else None
            if t.__class__ is not str:
                return False
            self._rpre, self._rend = _PLAN, _PLAN_END
            if t:
                self.reasoning(0, t, out)
            return True
        c = msg.get("content") if msg is not None else None
        idx = obj.get("index", 0)
        if c.__class__ is not dict or len(c) != 1 or idx.__class__ in (list, dict):
            return False
        block = self._blocks.get(idx)
        if block is None:
            return False
        if (t := c.get("text")).__class__ is str:
            if block[0] != "text":
                return False  # text in a thinking block: reasoning, the general way
            if idx.__class__ is int:
                self._pre = b"%s%d%s" % (_HEAD, idx, _MID)
            if t:
                self.token(0, t, out)
            return True
        if (t := c.get("thinking")).__class__ is str and idx.__class__ is int:
            self._rpre, self._rend = b"%s%d%s" % (_HEAD, idx, _THINK), self._END
            if t:
                self.reasoning(0, t, out)
            return True
        return False

    def end_marker(self, out: list[Event]) -> None:
        self.end(out)

    def _start(self, obj: dict[str, Any], out: list[Event]) -> None:
        self.meta(obj.get("id"), None, None, out)

    def _block(self, obj: dict[str, Any], kind: Any) -> list[Any]:
        idx = obj.get("index", 0)
        if idx.__class__ in (list, dict):
            return [kind, self.chars0]  # an index that names no block (and no key)
        block = self._blocks.get(idx)
        if block is None:
            block = [kind, self.chars0]
            if len(self._blocks) < 4096:
                self._blocks[idx] = block
        return block

    def _content_start(self, obj: dict[str, Any], out: list[Event]) -> None:
        msg = _message(obj)
        content = msg.get("content") if msg is not None else None
        if type(content) is not dict:
            self.fault(out, "bad_chunk", f"content-start not understood: {quote(obj)}")
            return
        block = self._block(obj, content.get("type"))
        idx = obj.get("index", 0)
        if idx.__class__ is int and self._blocks.get(idx) is block:
            # The template of its deltas written now (as _template would at the first
            # one): its first delta is taken by the hot loop too.
            if block[0] == "text":
                self._pre = b"%s%d%s" % (_HEAD, idx, _MID)
            elif block[0] == "thinking":
                self._rpre, self._rend = b"%s%d%s" % (_HEAD, idx, _THINK), self._END
        self._content_delta(obj, out)

    def _content_delta(self, obj: dict[str, Any], out: list[Event]) -> None:
        msg = _message(obj)
        content = msg.get("content") if msg is not None else None
        if type(content) is not dict:
            self.fault(out, "bad_chunk", f"content-delta not understood: {quote(obj)}")
            return
        text, thinking = content.get("text"), content.get("thinking")
        block = self._block(obj, "thinking" if thinking is not None else "text")
        if type(thinking) is str:
            if thinking:
                self.reasoning(0, thinking, out)
        elif type(text) is str:
            if text:
                if block[0] == "thinking":
                    self.reasoning(0, text, out)
                else:
                    self.token(0, text, out)
        elif text is not None or thinking is not None:
            self.fault(out, "bad_chunk", f"content text is not a string: {quote(obj)}")

    def _plan(self, obj: dict[str, Any], out: list[Event]) -> None:
        msg = _message(obj)
        plan = msg.get("tool_plan") if msg is not None else None
        if type(plan) is not str:
            self.fault(out, "bad_chunk", f"tool-plan-delta not understood: {quote(obj)}")
        elif plan:
            self.reasoning(0, plan, out)

    def _tool_call(self, obj: dict[str, Any], out: list[Event]) -> None:
        msg = _message(obj)
        call = msg.get("tool_calls") if msg is not None else None
        if type(call) is list and len(call) == 1:
            call = call[0]
        idx = obj.get("index", 0)
        fn = call.get("function") if type(call) is dict else None
        if type(call) is not dict or type(fn) is not dict or type(idx) is not int:
            self.fault(out, "bad_tool_call", f"{obj.get('type')} not understood: {quote(obj)}")
            return
        cid, name, args = call.get("id"), fn.get("name"), fn.get("arguments")
        if (
            (cid is not None and type(cid) is not str)
            or (name is not None and type(name) is not str)
            or (args is not None and type(args) is not str)
        ):
            self.fault(out, "bad_tool_call", f"tool call fields not strings: {quote(obj)}")
            return
        if obj.get("type") == "tool-call-delta" and not args:
            return
        if self.tool(idx, cid, name, args or "", out):
            # This call's next fragments by their bytes (dialects/_cohere_loop.py).
            self._apre, self._atool = args_prefix(idx), self._tool_keys[(0, idx)]

    def _citation(self, obj: dict[str, Any], out: list[Event]) -> None:
        msg = _message(obj)
        cit = msg.get("citations") if msg is not None else None
        if type(cit) is list and len(cit) == 1:
            cit = cit[0]
        if type(cit) is not dict:
            self.fault(out, "bad_citations", f"citation-start not understood: {quote(obj)}")
            return
        self._cite(cit, out)

    def _cite(self, cit: dict[str, Any], out: list[Event]) -> None:
        start, end, text, sources = (
            cit.get("start"),
            cit.get("end"),
            cit.get("text"),
            cit.get("sources"),
        )
        if type(start) is not int or type(end) is not int or type(sources) is not list:
            self.fault(out, "bad_citations", f"citation not understood: {quote(cit)}")
            return
        if cit.get("type") == "THINKING_CONTENT":
            return  # cites the reasoning, not the answer text: no span in answer.text
        ci = cit.get("content_index")
        block = self._blocks.get(ci if type(ci) is int else -1)
        if block is None:
            # No content index (older servers): the first text block.
            texts = (b for b in self._blocks.values() if b[0] == "text")
            first: list[Any] = ["text", 0]
            block = next(texts, first)
        base: int = block[1]
        if not sources:
            # A span cited to nothing: no citation to hang it on (reported, not kept).
            self.fault(out, "bad_citations", f"citation {start}-{end} without sources")
            return
        cap = self.builder.bounds.max_citation_sources
        if len(sources) > cap:
            msg = f"citation {start}-{end} with {len(sources):,} sources: the first {cap} kept"
            self.fault(out, CITATION_TOO_LARGE, msg)
            sources = sources[:cap]
        docs: list[tuple[int, str | None, dict[str, Any] | None]] = []
        seen: set[tuple[int, str | None]] = set()
        for src in sources:
            got = _source(src)
            if got is None:
                self.fault(out, "bad_citations", f"citation source: {quote(src)}")
                continue
            passage, meta = got[1].cited_text, got[1].provider_metadata
            doc = self.cite(got[0], got[1], out)
            if doc is None or (doc, passage) in seen:
                continue
            if len(docs) >= MAX_SPANS:
                self.span_over(out)
                continue
            seen.add((doc, passage))
            docs.append((doc, passage, meta))  # each source's own passage
        for doc, passage, meta in docs:
            if type(text) is str and self.text_slice(base + start, base + end) != text:
                msg = f"citation {start}-{end} does not hold its text {quote(text, 60)}"
                self.fault(out, "bad_citation_span", msg)
                break
            self.span(doc, base + start, base + end, out, passage, meta)
        if docs:
            self.emit_citations(out)

    def _end(self, obj: dict[str, Any], out: list[Event]) -> None:
        delta = obj.get("delta")
        if type(delta) is not dict:
            self.fault(out, "bad_chunk", f"message-end without a delta: {quote(obj)}")
            delta = {}
        usage = delta.get("usage")
        tokens = usage.get("tokens") if type(usage) is dict else None
        if type(tokens) is dict:
            self.usage(tokens.get("input_tokens"), tokens.get("output_tokens"), None, out)
        reason = delta.get("finish_reason")
        raw = reason if type(reason) is str else "COMPLETE"
        mapped = finish_reason(raw)
        err = delta.get("error")
        if mapped == "error" or err:
            etype = delta.get("error_type")
            kind = etype if type(etype) is str else raw
            message = err if type(err) is str else f"the message ended with {raw}"
            again = raw == "TIMEOUT" or status_retryable(kind, None)
            self.provider_error(kind.lower(), message, None, out, retryable=again)
        self.finish(0, mapped, raw, out)

    # -- a whole body --------------------------------------------------------------

    def feed_completion(self, obj: Any, out: list[Event] | None = None) -> list[Event]:
        """A non-streaming ``/v2/chat`` body, read as the stream it would have been."""
        if out is None:
            out = []
        if type(obj) is not dict:
            self.fault(out, "bad_chunk", f"response is not a JSON object: {quote(obj)}")
            return out
        msg = obj.get("message")
        if type(msg) is not dict:
            if "type" in obj and obj.get("type") not in _TABLE:
                # A body is no stream event: an unknown type here is not a newer event.
                self.malformed(out, f"cohere response without a message: {quote(obj)}")
            else:
                self.event(b"", obj, out)
            self.done = True
            return out
        self._start(obj, out)
        plan = msg.get("tool_plan")
        if type(plan) is str and plan:
            self.reasoning(0, plan, out)
        content = msg.get("content")
        if content is not None and type(content) is not list:
            self.malformed(out, f"message content is not an array: {quote(content)}")
            content = []
        for i, part in enumerate(content if type(content) is list else ()):
            wrap = {"index": i, "delta": {"message": {"content": part}}}
            self._content_start(wrap, out)
        for i, call in enumerate(msg.get("tool_calls") or ()):
            self._tool_call({"index": i, "delta": {"message": {"tool_calls": call}}}, out)
        cites = msg.get("citations")
        for cit in cites if type(cites) is list else ():
            if type(cit) is dict:
                self._cite(cit, out)
        end = {"finish_reason": obj.get("finish_reason"), "usage": obj.get("usage")}
        self._end({"delta": end}, out)
        self.end(out)
        return out


_TABLE: dict[str, Method] = {
    "message-start": CohereInterpreter._start,
    "content-start": CohereInterpreter._content_start,
    "content-delta": CohereInterpreter._content_delta,
    "tool-plan-delta": CohereInterpreter._plan,
    "tool-call-start": CohereInterpreter._tool_call,
    "tool-call-delta": CohereInterpreter._tool_call,
    "citation-start": CohereInterpreter._citation,
    "message-end": CohereInterpreter._end,
}
"""Each event type's handler (built once: a per-stream table of bound methods cost
more than a short stream's text deltas)."""
