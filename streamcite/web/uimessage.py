"""streamcite events → the Vercel AI SDK UI message stream (protocol v1), sans-I/O.

:class:`UIMessageEncoder` turns each event into the SSE bytes of zero or more UI
message chunks (``data: {json}\\n\\n``), one ``orjson.dumps`` per chunk. The chunks
carry exactly the fields of the AI SDK's chunk schemas (``ai`` 5.x,
``ui-message-chunks.ts``): nothing extra, optional fields left out rather than
``null``. The mapping (DESIGN.md, "Browser protocols"):

============== ==============================================================
event          chunks
============== ==============================================================
(begin)        ``start`` (``messageId``), ``start-step``
meta           ``message-metadata`` ``{"meta": {id, model, created}}``
token          ``text-start`` (first of a block), ``text-delta`` (raw text)
reasoning      ``reasoning-start`` (first of a block), ``reasoning-delta``
tool_call      ``tool-input-start`` (once id and name are known),
               ``tool-input-delta``; at the choice's finish
               ``tool-input-available`` (or ``tool-input-error`` for bad JSON)
provider_tool  ``tool-input-available`` (``tool-input-start`` for a call whose input
               comes with its result), ``tool-output-available`` (``output``:
               ``{status, summary}``) or ``tool-output-error``; all
               ``providerExecuted: true``
refusal        ``data-refusal`` (id ``refusal-<index>``, the text so far: sent when it
               has doubled since the last one, and at the choice's finish)
citation_ref   nothing: the marker is in the ``text-delta``
finish         ``reasoning-end`` / ``text-end`` of the choice, its tool inputs
citations      ``source-url`` per citation with a URL, else ``source-document``;
               ``sourceId`` ``cite-<n>`` for footnote ``n = document_index + 1``
               (a citation an earlier event already sent is not sent again);
               at most ``max_sources`` per message, then one
               ``data-sources-truncated`` (``{limit, dropped}``, replaced in place);
               then, when the event has spans, ``data-citation-spans`` (id
               ``citation-spans``, so a later one replaces it): ``{"spans":
               [{"sourceId", "start", "end"}]}``, offsets in UTF-16 code units
               (spans whose UTF-16 offsets are not known yet are left out;
               written for each of the first 16 spans, then on growth by an
               eighth, the rest at the end: linear bytes, not quadratic)
usage          ``message-metadata`` ``{"usage": {...}}``
sources        ``data-sources`` (``data``: the event's wire form)
grounding      ``data-grounding`` (``data``: the event's wire form)
claim          ``data-claim`` (id ``claim-<checker>-<index>``, ``data``: the wire form;
               offsets ``start_utf16``/``end_utf16`` index the JavaScript text)
error          ``error`` (``errorText`` = ``"<code>: <message>"``)
done           what is still open, ``finish-step``, ``finish``, ``[DONE]``
============== ==============================================================

Linear in its input: every id is found in O(1) and every output is joined once, so
a hostile finish chunk (10,000 citations of one document, 40,000 distinct ones) costs
milliseconds, and at most :data:`MAX_SOURCE_PARTS` source parts are written per message.

Events are told apart by their ``type`` string, so event kinds this module has
no class for (or plain mappings in the wire form) map by their documented fields.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import orjson

from streamcite.core.events import TokenEvent
from streamcite.web.uiparts import finish_reason, frame, provider_tool_parts, spans_part

__all__ = ["MAX_SOURCE_PARTS", "UI_MESSAGE_STREAM_HEADERS", "UIMessageEncoder", "finish_reason"]

MAX_SOURCE_PARTS = 1000
"""Default cap on ``source-url`` / ``source-document`` parts in one message; the citations
beyond it are counted in one ``data-sources-truncated`` part instead."""

UI_MESSAGE_STREAM_HEADERS: Mapping[str, str] = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "Connection": "keep-alive",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}

_DONE = b"data: [DONE]\n\n"
_DELTA_HEAD = b'data: {"type":"text-delta","id":"'


class _Refusal:
    __slots__ = ("parts", "sent", "size")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.sent = 0
        """Characters in the last ``data-refusal`` written."""


class _Tool:
    __slots__ = ("args", "id", "name", "started")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name: str | None = None
        self.args: list[str] = []
        self.started = False


class UIMessageEncoder:
    """One UI message: ``start()``, then ``feed(event)`` per event, then ``close()``.

    Each method returns the bytes to write (possibly empty). ``close()`` after ``done``
    returns nothing; without ``done`` (the upstream iterator ended early) it closes
    what is open and finishes the message, so the client always sees ``[DONE]``.
    """

    __slots__ = (
        "_blocks",
        "_cited",
        "_closed",
        "_ptools",
        "_reason",
        "_reasoning",
        "_refusals",
        "_sids",
        "_source_counts",
        "_sources",
        "_sources_dropped",
        "_spans_pending",
        "_spans_sent",
        "_text",
        "_tools",
        "max_sources",
        "message_id",
    )

    def __init__(
        self, message_id: str | None = None, *, max_sources: int = MAX_SOURCE_PARTS
    ) -> None:
        """``max_sources``: source parts written at most in this message (the rest are
        counted in ``data-sources-truncated``)."""
        self.message_id = message_id or f"msg-{secrets.token_urlsafe(12)}"
        self._text: dict[int, bytes] = {}  # choice -> id of its open text block (JSON-ready)
        self._reasoning: dict[int, str] = {}
        self._blocks = 0
        self._tools: dict[tuple[int, int], _Tool] = {}
        self._ptools: dict[str, bool] = {}  # provider tools: toolCallId -> input part written
        self._refusals: dict[int, _Refusal] = {}
        self._source_counts: dict[int, int] = {}  # footnote n -> source parts written for it
        self._sources = 0
        self._sources_dropped = 0
        self.max_sources = max_sources
        self._cited: Sequence[Any] = ()
        """The last citations list (the reference a live stream's next one continues)."""
        self._sids: list[str | None] = []
        """The ``sourceId`` each of its citations was sent as (None: over ``max_sources``)."""
        self._spans_sent = 0
        """Spans in the last ``data-citation-spans`` part written."""
        self._spans_pending: Sequence[Any] | None = None
        """The latest spans, when they have not been written yet (see :meth:`_spans_part`)."""
        self._reason: str | None = None
        self._closed = False

    def start(self) -> bytes:
        return (
            frame({"type": "start", "messageId": self.message_id})
            + b'data: {"type":"start-step"}\n\n'
        )

    # -- the hot path -----------------------------------------------------------------

    def feed(self, event: Any) -> bytes:
        if type(event) is TokenEvent:
            head = self._text.get(event.index)
            if head is not None:  # an open text block: no reasoning block of that choice
                return _DELTA_HEAD + head + b'","delta":' + orjson.dumps(event.text) + b"}\n\n"
            return self._token(event.index, event.text)
        if self._closed:
            return b""
        if isinstance(event, Mapping):
            event = SimpleNamespace(**event)
        kind = getattr(event, "type", None)
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            return self._error("unknown_event", f"an event of unknown type {kind!r}")
        out: bytes = handler(self, event)
        return out

    # -- blocks -----------------------------------------------------------------------

    def _new_id(self, prefix: str, index: int) -> str:
        self._blocks += 1
        return f"{prefix}-{index}" if self._blocks == 1 else f"{prefix}-{index}-{self._blocks}"

    def _token(self, index: int, text: str) -> bytes:
        if self._closed:
            return b""
        out = self._end_reasoning(index)
        head = self._text.get(index)
        if head is None:
            tid = self._new_id("text", index)
            head = self._text[index] = tid.encode()
            out += frame({"type": "text-start", "id": tid})
        return out + _DELTA_HEAD + head + b'","delta":' + orjson.dumps(text) + b"}\n\n"

    def _end_text(self, index: int) -> bytes:
        head = self._text.pop(index, None)
        return b"" if head is None else frame({"type": "text-end", "id": head.decode()})

    def _end_reasoning(self, index: int) -> bytes:
        rid = self._reasoning.pop(index, None)
        return b"" if rid is None else frame({"type": "reasoning-end", "id": rid})

    def _on_reasoning(self, ev: Any) -> bytes:
        index, text = int(ev.index or 0), ev.text or ""
        if not text:
            return b""
        out = b""
        rid = self._reasoning.get(index)
        if rid is None:
            out = self._end_text(index)
            rid = self._reasoning[index] = self._new_id("reasoning", index)
            out += frame({"type": "reasoning-start", "id": rid})
        return out + frame({"type": "reasoning-delta", "id": rid, "delta": text})

    def _close_choice(self, index: int) -> bytes:
        out = [self._end_reasoning(index), self._end_text(index)]
        for key in sorted(k for k in self._tools if k[0] == index):
            out.append(self._tool_done(key, self._tools.pop(key)))
        refusal = self._refusals.get(index)
        if refusal is not None and refusal.sent < refusal.size:
            out.append(self._refusalframe(index, refusal))
        return b"".join(out)

    # -- tool calls -------------------------------------------------------------------

    def _on_tool_call(self, ev: Any) -> bytes:
        key = (int(ev.index or 0), int(ev.tool_index or 0))
        tool = self._tools.get(key)
        if tool is None:
            tool = self._tools[key] = _Tool()
        if ev.id and tool.id is None:
            tool.id = str(ev.id)
        if ev.name and tool.name is None:
            tool.name = str(ev.name)
        fragment = ev.arguments or ""
        if fragment:
            tool.args.append(fragment)
        if tool.started:
            if not fragment:
                return b""
            return frame(
                {"type": "tool-input-delta", "toolCallId": tool.id, "inputTextDelta": fragment}
            )
        if tool.id is None or tool.name is None:
            return b""  # held until the fragment that names the call
        return self._tool_start(tool)

    def _tool_start(self, tool: _Tool) -> bytes:
        tool.started = True
        out = frame({"type": "tool-input-start", "toolCallId": tool.id, "toolName": tool.name})
        so_far = "".join(tool.args)
        if so_far:
            out += frame(
                {"type": "tool-input-delta", "toolCallId": tool.id, "inputTextDelta": so_far}
            )
        return out

    def _tool_done(self, key: tuple[int, int], tool: _Tool) -> bytes:
        out = b""
        if not tool.started:
            tool.id = tool.id or f"call-{key[0]}-{key[1]}"
            tool.name = tool.name or "unknown"
            out = self._tool_start(tool)
        raw = "".join(tool.args)
        try:
            value = orjson.loads(raw) if raw.strip() else {}
        except orjson.JSONDecodeError as exc:
            return out + frame(
                {
                    "type": "tool-input-error",
                    "toolCallId": tool.id,
                    "toolName": tool.name,
                    "input": raw,
                    "errorText": f"the tool call's arguments are not JSON: {exc}",
                }
            )
        return out + frame(
            {
                "type": "tool-input-available",
                "toolCallId": tool.id,
                "toolName": tool.name,
                "input": value,
            }
        )

    # -- the other events ----------------------------------------------------------------

    def _on_refusal(self, ev: Any) -> bytes:
        index, text = int(ev.index or 0), ev.text or ""
        if not text:
            return b""
        refusal = self._refusals.get(index)
        if refusal is None:
            refusal = self._refusals[index] = _Refusal()
        refusal.parts.append(text)
        refusal.size += len(text)
        # Each part carries the whole text so far (the SDK replaces it): written when the
        # text doubled, the bytes sent stay linear in the text (the rest at the finish).
        if refusal.size < 2 * refusal.sent:
            return b""
        return self._refusalframe(index, refusal)

    def _refusalframe(self, index: int, refusal: _Refusal) -> bytes:
        so_far = "".join(refusal.parts)
        refusal.parts = [so_far]
        refusal.sent = refusal.size
        return frame(
            {
                "type": "data-refusal",
                "id": f"refusal-{index}",
                "data": {"index": index, "text": so_far},
            }
        )

    def _on_meta(self, ev: Any) -> bytes:
        meta = {"id": ev.id, "model": ev.model, "created": ev.created}
        return frame({"type": "message-metadata", "messageMetadata": {"meta": meta}})

    def _on_usage(self, ev: Any) -> bytes:
        usage = {
            "prompt_tokens": ev.prompt_tokens,
            "completion_tokens": ev.completion_tokens,
            "total_tokens": ev.total_tokens,
        }
        return frame({"type": "message-metadata", "messageMetadata": {"usage": usage}})

    def _on_finish(self, ev: Any) -> bytes:
        index = int(ev.index or 0)
        if self._reason is None or index == 0:
            self._reason = ev.reason
        return self._close_choice(index)

    def _on_citations(self, ev: Any) -> bytes:
        citations = ev.citations or ()
        if not isinstance(citations, list | tuple):
            citations = list(citations)
        sids = self._sids
        # A live stream's citations events each carry the list so far: those already
        # handled are not sent again (a list that is not a continuation is sent whole,
        # and becomes the reference). Identity first: the core re-sends the same objects.
        known = len(sids)
        prev = self._cited
        if known > len(citations) or (
            citations is not prev
            and any(a is not b and a != b for a, b in zip(prev, citations, strict=False))
        ):
            known = 0
            sids = self._sids = []
        self._cited = citations
        room = max(self.max_sources - self._sources, 0)
        new = citations[known:] if known else citations
        sent = new[:room] if len(new) > room else new
        source = self._source
        out = [source(c, i, sids) for i, c in enumerate(sent, known)]
        if len(new) > len(sent):
            sids.extend([None] * (len(new) - len(sent)))
        self._sources += len(out)
        dropped = len(citations) - known - len(out)
        if dropped > 0:
            self._sources_dropped += dropped
            out.append(
                frame(
                    {
                        "type": "data-sources-truncated",
                        "id": "sources-truncated",
                        "data": {"limit": self.max_sources, "dropped": self._sources_dropped},
                    }
                )
            )
        spans = getattr(ev, "spans", None)
        if spans:
            out.append(self._spans_part(spans))
        return b"".join(out)

    def _spans_part(self, spans: Sequence[Any]) -> bytes:
        """The ``data-citation-spans`` part, each part carrying every span so far (a later
        one replaces it). Written when the spans grew by an eighth since the last one
        (each of the first 16 at once), else kept for the next or for the end: a stream
        of n spans writes O(n) bytes of them, not O(n²) (1024 spans, one citations event
        each: 25.6 MB before)."""
        n = len(spans)
        if n < self._spans_sent + max(1, self._spans_sent // 8):
            self._spans_pending = spans
            return b""
        self._spans_pending = None
        self._spans_sent = n
        return spans_part(spans, self._sids)

    def _source(self, c: Any, position: int, sids: list[str | None]) -> bytes:
        """The source part of ``c``; its ``sourceId`` is appended to ``sids``."""
        doc = getattr(c, "document_index", None)
        n = doc + 1 if isinstance(doc, int) and doc >= 0 else position + 1
        # Two citations of one document: both kept, the second as cite-<n>-2. Ids of one
        # n never meet another n's ("cite-1-2" is n=1 only): one counter per n is enough.
        k = self._source_counts.get(n, 0) + 1
        self._source_counts[n] = k
        sid = f"cite-{n}" if k == 1 else f"cite-{n}-{k}"
        title = getattr(c, "document_title", None) or getattr(c, "cited_text_heading", None)
        url = getattr(c, "source_url", None)
        meta = {"streamcite": {"document_index": doc, "cited_text": getattr(c, "cited_text", None)}}
        if url:
            chunk: dict[str, Any] = {"type": "source-url", "sourceId": sid, "url": str(url)}
            if title:
                chunk["title"] = str(title)
        else:
            chunk = {
                "type": "source-document",
                "sourceId": sid,
                "mediaType": "text/plain",
                "title": str(title or f"Document {n}"),
            }
        chunk["providerMetadata"] = meta
        sids.append(sid)
        return frame(chunk)

    def _on_data(self, ev: Any) -> bytes:
        return frame({"type": f"data-{ev.type}", "data": ev})

    def _on_claim(self, ev: Any) -> bytes:
        return frame({"type": "data-claim", "id": f"claim-{ev.checker}-{ev.index}", "data": ev})

    def _on_error(self, ev: Any) -> bytes:
        return self._error(str(ev.code), str(ev.message))

    def _error(self, code: str, message: str) -> bytes:
        return frame({"type": "error", "errorText": f"{code}: {message}" if message else code})

    def _on_citation_ref(self, ev: Any) -> bytes:
        return b""

    def _on_done(self, ev: Any) -> bytes:
        answer = getattr(ev, "answer", None)
        reason = getattr(answer, "finish_reason", None) or self._reason
        if reason is None and getattr(answer, "errors", None):
            reason = "error"
        return self._finish(reason)

    def _finish(self, reason: str | None) -> bytes:
        open_choices = {*self._text, *self._reasoning, *(k[0] for k in self._tools)}
        open_choices.update(i for i, r in self._refusals.items() if r.sent < r.size)
        out = [self._close_choice(index) for index in sorted(open_choices)]
        if self._spans_pending is not None:  # the spans not written yet
            out.append(spans_part(self._spans_pending, self._sids))
            self._spans_pending = None
        self._closed = True
        finish: dict[str, Any] = {"type": "finish"}
        mapped = finish_reason(reason)
        if mapped is not None:
            finish["finishReason"] = mapped
        out += (b'data: {"type":"finish-step"}\n\n', frame(finish), _DONE)
        return b"".join(out)

    def close(self) -> bytes:
        """End the message if ``done`` never came (the events ended or failed early)."""
        if self._closed:
            return b""
        return self._finish(self._reason or "error")

    def fail(self, code: str, message: str) -> bytes:
        """An ``error`` chunk, then the end of the message (the event source raised)."""
        if self._closed:
            return b""
        return self._error(code, message) + self._finish("error")


_HANDLERS = {
    "token": lambda self, ev: self._token(int(ev.index or 0), ev.text or ""),
    "reasoning": UIMessageEncoder._on_reasoning,
    "tool_call": UIMessageEncoder._on_tool_call,
    "provider_tool": lambda self, ev: provider_tool_parts(ev, self._ptools),
    "refusal": UIMessageEncoder._on_refusal,
    "meta": UIMessageEncoder._on_meta,
    "usage": UIMessageEncoder._on_usage,
    "finish": UIMessageEncoder._on_finish,
    "citations": UIMessageEncoder._on_citations,
    "citation_ref": UIMessageEncoder._on_citation_ref,
    "sources": UIMessageEncoder._on_data,
    "grounding": UIMessageEncoder._on_data,
    "claim": UIMessageEncoder._on_claim,
    "error": UIMessageEncoder._on_error,
    "done": UIMessageEncoder._on_done,
}
