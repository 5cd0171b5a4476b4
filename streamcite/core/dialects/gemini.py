"""Gemini ``streamGenerateContent?alt=sse`` → events. Sans-I/O.

Each ``data:`` is a GenerateContentResponse. The first with ``responseId`` /
``modelVersion`` → ``meta``; a candidate's ``text`` part → ``token`` (``thought: true``:
``reasoning``); a ``functionCall`` part → one whole ``tool_call``; ``finishReason`` →
``finish``; ``usageMetadata`` (sent on every chunk) → one ``usage`` at the finish;
``promptFeedback.blockReason`` → ``finish`` ``content_filter``; an ``error`` object →
``error``. Candidate 0's ``groundingMetadata`` accumulates — it may come late or split
across chunks: each new ``groundingChunks`` source is a citation, each
``groundingSupports`` segment a span, its UTF-8 BYTE offsets into the candidate's text
converted to characters (a support whose text has not all arrived waits for it).
"""

from __future__ import annotations

from typing import Any

import orjson

from streamcite.core.answer import AnswerBuilder
from streamcite.core.dialects.base import MAX_SPANS, StreamState
from streamcite.core.events import Event
from streamcite.core.markers import MarkerMode
from streamcite.core.models import Citation

__all__ = ["GeminiInterpreter", "finish_reason"]

_REASONS = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "LANGUAGE": "content_filter",
    "MALFORMED_FUNCTION_CALL": "error",
    "UNEXPECTED_TOOL_CALL": "error",
}
_STATUS_CODES = {"RESOURCE_EXHAUSTED": 429, "UNAVAILABLE": 503, "INTERNAL": 500}


def finish_reason(raw: str) -> str:
    """Gemini's ``finishReason`` in the chat vocabulary (unknown ones: ``stop``)."""
    return _REASONS.get(raw, "stop")


def _source(chunk: Any) -> tuple[Any, Citation] | None:
    """A ``groundingChunks`` entry → its key and citation (``None``: not understood)."""
    if type(chunk) is not dict:
        return None
    for kind in ("web", "retrievedContext", "maps"):
        src = chunk.get(kind)
        if type(src) is dict:
            uri, title, text = src.get("uri"), src.get("title"), src.get("text")
            if any(v is not None and type(v) is not str for v in (uri, title, text)):
                return None
            meta = {k: v for k, v in src.items() if k not in ("uri", "title", "text")}
            if kind != "web":
                meta["kind"] = kind
            key = ("uri", uri) if uri else (kind, title, text)
            cit = Citation(
                cited_text=text,
                document_title=title,
                source_url=uri,
                provider_metadata=meta or None,
            )
            return key, cit
    return None


class GeminiInterpreter(StreamState):
    """Interprets one Gemini stream (``:streamGenerateContent?alt=sse``)."""

    __slots__ = ("_docs", "_pending", "_seen_supports", "_sources_seen")

    dialect = "gemini"

    def __init__(self, builder: AnswerBuilder | None = None, marker_mode: MarkerMode = "keep"):
        super().__init__(builder, marker_mode)
        self._docs: list[int | None] = []
        """Accumulated ``groundingChunks`` of candidate 0 → their ``document_index``."""
        self._sources_seen: list[Any] = []
        self._pending: list[dict[str, Any]] = []
        """Supports whose segment has not all arrived, or whose sources have not."""
        self._seen_supports: set[tuple[Any, ...]] = set()

    def event(self, name: bytes, obj: dict[str, Any], out: list[Event]) -> None:
        err = obj.get("error")
        if err is not None:
            self._error(err, out)
            return
        self.meta(obj.get("responseId"), obj.get("modelVersion"), None, out)
        usage = obj.get("usageMetadata")
        if type(usage) is dict:
            p, c = usage.get("promptTokenCount"), usage.get("candidatesTokenCount")
            self.usage(p, c, usage.get("totalTokenCount"), out, final=False)
        elif usage is not None:
            self.fault(out, "bad_chunk", f"usageMetadata is not an object: {usage!r:.120}")
        candidates = obj.get("candidates")
        if type(candidates) is list:
            for cand in candidates:
                self._candidate(cand, out)
        elif candidates is not None:
            self.fault(out, "bad_chunk", f"candidates is not an array: {candidates!r:.120}")
        feedback = obj.get("promptFeedback")
        if type(feedback) is dict and type(block := feedback.get("blockReason")) is str:
            self.finish(0, "content_filter", block, out)
            self.flush_usage(out)

    def _candidate(self, cand: Any, out: list[Event]) -> None:
        idx = cand.get("index", 0) if type(cand) is dict else None
        if type(idx) is not int or not 0 <= idx < self.builder.bounds.max_choices:
            self.fault(out, "bad_chunk", f"candidate not understood: {cand!r:.120}")
            return
        content = cand.get("content")
        if type(content) is dict:
            parts = content.get("parts")
            if type(parts) is list:
                for part in parts:
                    self._part(idx, part, out)
            elif parts is not None:
                self.fault(out, "bad_chunk", f"parts is not an array: {parts!r:.120}")
        if idx == 0:
            meta = cand.get("groundingMetadata")
            if type(meta) is dict:
                self._grounding(meta, out)
            elif meta is not None:
                self.fault(out, "bad_citations", f"groundingMetadata: {meta!r:.120}")
            if self._pending:
                self._resolve(out, final=False)
        reason = cand.get("finishReason")
        if type(reason) is str:
            if idx == 0:
                self._resolve(out, final=True)
            mapped = finish_reason(reason)
            if mapped == "stop" and idx == 0 and self.has_tools:
                mapped = "tool_calls"
            if mapped == "error" and idx == 0:
                msg = cand.get("finishMessage")
                message = msg if type(msg) is str else f"the candidate finished with {reason}"
                self.provider_error(reason.lower(), message, None, out, retryable=True)
            self.finish(idx, mapped, reason, out)
            if idx == 0:
                self.flush_usage(out)

    def _part(self, idx: int, part: Any, out: list[Event]) -> None:
        if type(part) is not dict:
            self.fault(out, "bad_chunk", f"part is not an object: {part!r:.120}")
            return
        text = part.get("text")
        if text is not None:
            if type(text) is not str:
                self.fault(out, "bad_chunk", f"part text is not a string: {part!r:.120}")
            elif text:
                if part.get("thought") is True:
                    self.reasoning(idx, text, out)
                else:
                    self.token(idx, text, out)
            return
        call = part.get("functionCall")
        if call is not None:
            name = call.get("name") if type(call) is dict else None
            if type(name) is not str:
                self.fault(out, "bad_tool_call", f"functionCall not understood: {call!r:.120}")
                return
            assert type(call) is dict
            cid = call.get("id")
            args = call.get("args")
            arguments = orjson.dumps(args).decode() if args is not None else ""
            key = object()  # every functionCall part is a whole call of its own
            self.tool(key, cid if type(cid) is str else None, name, arguments, out, idx)
        # thoughtSignature alone, executableCode, codeExecutionResult, inlineData,
        # fileData: ignored (docs/provider-streams.md)

    def _grounding(self, meta: dict[str, Any], out: list[Event]) -> None:
        chunks = meta.get("groundingChunks")
        added = False
        if type(chunks) is list:
            seen = self._sources_seen
            # Cumulative (the whole list again) or split (only the new ones): a list that
            # starts with what is known adds its tail; another adds all of itself.
            fresh = chunks[len(seen) :] if chunks[: len(seen)] == seen else chunks
            for ch in fresh:
                if len(self._docs) >= 4 * MAX_SPANS:
                    break
                seen.append(ch)
                got = _source(ch)
                if got is None:
                    self.fault(out, "bad_citations", f"grounding chunk: {ch!r:.120}")
                    self._docs.append(None)
                    continue
                before = len(self.builder.citations)
                self._docs.append(self.cite(got[0], got[1], out))
                added = added or len(self.builder.citations) > before
        supports = meta.get("groundingSupports")
        if type(supports) is list:
            for sup in supports:
                if type(sup) is not dict:
                    self.fault(out, "bad_citations", f"grounding support: {sup!r:.120}")
                    continue
                key = (orjson.dumps(sup, option=orjson.OPT_SORT_KEYS),)
                if key in self._seen_supports or len(self._seen_supports) >= MAX_SPANS:
                    continue
                self._seen_supports.add(key)
                self._pending.append(sup)
        if added:
            self.emit_citations(out)

    def _resolve(self, out: list[Event], *, final: bool) -> None:
        """Pending supports whose bytes and sources have arrived become spans."""
        keep: list[dict[str, Any]] = []
        added = False
        m = self.text_map() if self._pending else None
        for sup in self._pending:
            assert m is not None
            seg, ids = sup.get("segment"), sup.get("groundingChunkIndices")
            if type(seg) is not dict or type(ids) is not list:
                self.fault(out, "bad_citations", f"grounding support: {sup!r:.120}")
                continue
            start, end = seg.get("startIndex", 0), seg.get("endIndex")
            if type(start) is not int or type(end) is not int or not 0 <= start <= end:
                self.fault(out, "bad_citation_span", f"segment offsets: {seg!r:.120}")
                continue
            waiting = end > m.byte_length or any(
                type(i) is not int or i >= len(self._docs) for i in ids
            )
            if waiting:
                if final:
                    msg = f"grounding segment {start}-{end} (bytes) of {seg.get('text')!r:.60}"
                    msg += f" beyond the answer ({m.byte_length} bytes) or its sources"
                    self.fault(out, "bad_citation_span", msg)
                else:
                    keep.append(sup)
                continue
            c0, c1 = m.byte_to_char(start), m.byte_to_char_end(end)
            text = seg.get("text")
            if type(text) is str and m.text[c0:c1] != text:
                msg = f"grounding segment {start}-{end} (bytes) does not hold its text {text!r:.60}"
                self.fault(out, "bad_citation_span", msg)
                continue
            for i in ids:
                doc = self._docs[i]
                if doc is None:
                    continue
                c = self.builder.citations[doc]
                if c.cited_text is None and type(text) is str:
                    c.cited_text = text
                added = self.span(doc, c0, c1, out) or added
        self._pending = keep
        if added:
            self.emit_citations(out)

    def _error(self, err: Any, out: list[Event]) -> None:
        if type(err) is not dict:
            self.provider_error("upstream_error", str(err)[:300], None, out)
            return
        status, code = err.get("status"), err.get("code")
        name = status if type(status) is str else "upstream_error"
        http = code if type(code) is int else _STATUS_CODES.get(name)
        self.provider_error(name, err.get("message"), http, out)

    def close_extra(self, out: list[Event]) -> None:
        if self._pending:
            self._resolve(out, final=True)

    # -- a whole body --------------------------------------------------------------

    def feed_completion(self, obj: Any, out: list[Event] | None = None) -> list[Event]:
        """A non-streaming ``generateContent`` body: one chunk that is the whole answer."""
        if out is None:
            out = []
        if type(obj) is not dict:
            self.fault(out, "bad_chunk", f"response is not a JSON object: {obj!r:.120}")
            return out
        self.event(b"", obj, out)
        self.flush_usage(out)
        self.done = True
        return out
