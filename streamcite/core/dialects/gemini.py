"""Gemini ``streamGenerateContent?alt=sse`` → events. Sans-I/O.

Each ``data:`` is a GenerateContentResponse. The first with ``responseId`` /
``modelVersion`` → ``meta``; a candidate's ``text`` part → ``token`` (``thought: true``:
``reasoning``); a ``functionCall`` part → one whole ``tool_call`` (Vertex AI's streamed
arguments, ``willContinue`` + ``partialArgs``, put together first); ``finishReason`` →
``finish``; ``usageMetadata`` (sent on every chunk) → one ``usage`` at the finish;
``promptFeedback.blockReason`` → ``finish`` ``content_filter``; an ``error`` object →
``error``. Candidate 0's ``groundingMetadata`` accumulates — it may come late or split
across chunks: each new ``groundingChunks`` source is a citation, each
``groundingSupports`` segment a span, its UTF-8 BYTE offsets into the candidate's text
converted to characters (a support whose text has not all arrived waits for it), with
the passage of each grounding chunk it names (``retrievedContext.text``; two chunks of
one source keep their own passages) and ``grounding_chunk_index`` in its metadata.
"""

from __future__ import annotations

from typing import Any, TypeGuard

from streamcite.core.answer import AnswerBuilder
from streamcite.core.dialects._gemini_grounding import GroundingState
from streamcite.core.dialects.base import JSONDecodeError, StreamState, loads, new
from streamcite.core.dialects.partial_args import StreamedArgs
from streamcite.core.dialects.provider_tool_shapes import gemini_code_part
from streamcite.core.events import Event, TokenEvent
from streamcite.core.markers import MarkerMode
from streamcite.core.quote import dump_json, quote
from streamcite.core.sse import RawEvent

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
_KNOWN = frozenset(
    {"candidates", "usageMetadata", "promptFeedback", "responseId", "modelVersion", "createTime"}
)
"""The chunk fields the dialect reads (``error`` is looked at first)."""
_STATUS_CODES = {"RESOURCE_EXHAUSTED": 429, "UNAVAILABLE": 503, "INTERNAL": 500}


def _empty(value: Any) -> bool:
    """``value == {}``, without making a dict to compare with."""
    return isinstance(value, dict) and not value


def finish_reason(raw: str) -> str:
    """Gemini's ``finishReason`` in the chat vocabulary (unknown ones: ``stop``)."""
    return _REASONS.get(raw, "stop")


class GeminiInterpreter(GroundingState):
    """Interprets one Gemini stream (``:streamGenerateContent?alt=sse``)."""

    __slots__ = ("_reads0", "_streamed", "_usage_raw")

    dialect = "gemini"

    def __init__(self, builder: AnswerBuilder | None = None, marker_mode: MarkerMode = "keep"):
        super().__init__(builder, marker_mode)
        self._usage_raw: Any = None
        self._streamed: dict[int, tuple[object, StreamedArgs]] = {}
        """Per choice: the call whose arguments Vertex AI is streaming (its tool key)."""
        self._reads0 = self._reads(0)
        """Candidate 0 is read (not with ``max_choices`` 0: the general way reports it)."""

    def event(self, name: bytes, obj: dict[str, Any], out: list[Event]) -> None:
        err = obj.get("error")
        if err is not None:
            self._error(err, out)
            return
        if _KNOWN.isdisjoint(obj):
            # ``data: {}`` or another shape: no empty ``meta`` for it, an error.
            self.fault(out, "bad_chunk", f"gemini chunk with no field known: {quote(obj)}")
            return
        if not self.meta_seen:
            self.meta(obj.get("responseId"), obj.get("modelVersion"), None, out)
        usage = obj.get("usageMetadata")
        if usage is not None:
            self._usage_raw = usage  # sent on every chunk: the last one is read at the end
        candidates = obj.get("candidates")
        if type(candidates) is list:
            for cand in candidates:
                self._candidate(cand, out)
        elif candidates is not None:
            self.fault(out, "bad_chunk", f"candidates is not an array: {quote(candidates)}")
        feedback = obj.get("promptFeedback")
        if type(feedback) is dict and type(block := feedback.get("blockReason")) is str:
            self.finish(0, "content_filter", block, out)
            self._usage_out(out)

    def feed_raw(self, raw: list[RawEvent], out: list[Event]) -> None:
        """The hot path, for a chunk of one candidate 0 text part and nothing else but usage and ids (most chunks): parsed once, checked inline,
        its token made here; every other event (and what orjson refused) goes the general
        way of :class:`StreamState`."""
        append, raw0, det, keep = out.append, self._raw0, self._det0, self._det0.keep

        for item in raw:
            if self.done:
                return
            if item.__class__ is not bytes:  # OVERFLOW (a tuple) or a named event
                StreamState.feed_raw(self, [item], out)
                continue
            data = item
            try:
                obj = loads(data)
            except JSONDecodeError:
                StreamState.feed_raw(self, [item], out)
                continue
            if obj.__class__ is dict:
                t = self._plain_text(obj, out)
                if t is not None:
                    if t:
                        if keep and not det.held and "[" not in t and self._surr is None:
                            det.offset += len(t)
                            ev = new(TokenEvent)  # built as new_token does, inline
                            ev.type = "token"
                            ev.index = 0
                            ev.text = ev.display = t
                            append(ev)
                            raw0.append(t)
                        else:
                            self.token(0, t, out)
                    continue
                self.event(b"", obj, out)
            else:
                self.fault(out, "bad_chunk", f"event is not a JSON object: {data[:120]!r}")

    def _plain_text(self, obj: dict[str, Any], out: list[Event]) -> str | None:
        """The text of a plain chunk — one candidate 0 text part and nothing else but
        usage and ids (most chunks) — else None. The first chunk's ``meta``, a thought
        part (as ``reasoning``) and a finish (after the text) are emitted here, as
        :meth:`event` would (then "")."""
        # The plain shape: ``candidates`` a list of one object whose ``content`` is an
        # object whose ``parts`` is a list of one object with a string ``text``. Each
        # step narrowed by its type (compiled, the dict and list reads that follow are
        # direct; a chunk of another shape costs no exception).
        cands = obj.get("candidates")
        if not isinstance(cands, list) or len(cands) != 1:
            return None
        cand = cands[0]
        if not isinstance(cand, dict):
            return None
        content = cand.get("content")
        if not isinstance(content, dict):
            return None
        parts = content.get("parts")
        if not isinstance(parts, list) or len(parts) != 1:
            return None
        part = parts[0]
        if not isinstance(part, dict):
            return None
        t = part.get("text")
        # (Supports waiting for their text: each chunk of candidate 0 makes a pass.)
        if (
            t.__class__ is not str
            or (i := cand.get("index", 0)).__class__ is not int
            or i
            or not self._reads0
            or self._pending
            or "promptFeedback" in obj
            or "error" in obj
        ):
            return None
        # Only "content", "index": 0, a "finishReason" and an empty "groundingMetadata"
        # (search grounding sends one on every chunk): grounding, safety ratings, a
        # finish message or anything else take the general way.
        reason = cand.get("finishReason")
        extra = len(cand) - 1 - ("index" in cand) - (reason is not None)
        if (extra and (extra != 1 or not _empty(cand.get("groundingMetadata")))) or (
            reason is not None and reason.__class__ is not str
        ):
            return None
        if len(part) != 1 and (
            len(part) != 2 or ("thoughtSignature" not in part and part.get("thought") is not True)
        ):
            return None  # (a thought signature is not read)
        if not self.meta_seen:  # the stream's first chunk: its meta first, as event() does
            self.meta(obj.get("responseId"), obj.get("modelVersion"), None, out)
        usage = obj.get("usageMetadata")
        if usage is not None:
            self._usage_raw = usage
        if part.get("thought") is True:
            if t:
                self.reasoning(0, t, out)
            t = ""
        if reason is None:
            return t
        if t:
            self.token(0, t, out)
        self._candidate_finish(0, cand, reason, out)
        return ""

    def _usage_out(self, out: list[Event]) -> None:
        """The last ``usageMetadata`` seen, as one ``usage`` event (once)."""
        usage, self._usage_raw = self._usage_raw, None
        if usage is None:
            return
        if type(usage) is not dict:
            self.fault(out, "bad_chunk", f"usageMetadata is not an object: {quote(usage)}")
            return
        p, c = usage.get("promptTokenCount"), usage.get("candidatesTokenCount")
        self.usage(p, c, usage.get("totalTokenCount"), out)

    def _reads(self, idx: Any) -> TypeGuard[int]:
        """Candidate ``idx`` is read (an index within ``bounds.max_choices``): the one
        check of the general way (:meth:`_candidate`) and the plain path (``_reads0``)."""
        return type(idx) is int and 0 <= idx < self.builder.bounds.max_choices

    def _candidate(self, cand: Any, out: list[Event]) -> None:
        # (The type check narrows: compiled, the reads of ``cand`` below are direct.)
        if type(cand) is not dict or not self._reads(idx := cand.get("index", 0)):
            self.fault(out, "bad_chunk", f"candidate not understood: {quote(cand)}")
            return
        content = cand.get("content")
        if type(content) is dict:
            parts = content.get("parts")
            if type(parts) is list:
                for part in parts:
                    self._part(idx, part, out)
            elif parts is not None:
                self.fault(out, "bad_chunk", f"parts is not an array: {quote(parts)}")
        if idx == 0:
            meta = cand.get("groundingMetadata")
            if type(meta) is dict:
                self._grounding(meta, out)
            elif meta is not None:
                self.fault(out, "bad_citations", f"groundingMetadata: {quote(meta)}")
            if self._pending:
                self._resolve(out, final=False)
        reason = cand.get("finishReason")
        if type(reason) is str:
            self._candidate_finish(idx, cand, reason, out)

    def _candidate_finish(
        self, idx: int, cand: dict[str, Any], reason: str, out: list[Event]
    ) -> None:
        if idx in self._streamed:
            self._unended(idx, out)
        if idx == 0:
            self._resolve_final(out)
        mapped = finish_reason(reason)
        if mapped == "stop" and idx == 0 and self.has_tools:
            mapped = "tool_calls"
        if mapped == "error" and idx == 0:
            msg = cand.get("finishMessage")
            message = msg if type(msg) is str else f"the candidate finished with {reason}"
            self.provider_error(reason.lower(), message, None, out, retryable=True)
        self.finish(idx, mapped, reason, out)
        if idx == 0:
            self._usage_out(out)

    def _part(self, idx: int, part: Any, out: list[Event]) -> None:
        if type(part) is not dict:
            self.fault(out, "bad_chunk", f"part is not an object: {quote(part)}")
            return
        text = part.get("text")
        if text is not None:
            if type(text) is not str:
                self.fault(out, "bad_chunk", f"part text is not a string: {quote(part)}")
            elif text:
                if part.get("thought") is True:
                    self.reasoning(idx, text, out)
                else:
                    self.token(idx, text, out)
            return
        call = part.get("functionCall")
        if call is not None:
            if type(call) is dict and (idx in self._streamed or call.get("willContinue")):
                self._streamed_call(idx, call, out)
                return
            name = call.get("name") if type(call) is dict else None
            if type(name) is not str:
                self.fault(out, "bad_tool_call", f"functionCall not understood: {quote(call)}")
                return
            assert type(call) is dict
            cid = call.get("id")
            args = call.get("args")
            # A call without arguments has an empty object of them (never "").
            arguments = dump_json(args) if args is not None else "{}"
            if arguments is None:
                self.fault(
                    out, "bad_tool_call", f"functionCall args nested too deeply: {quote(call)}"
                )
                return
            key = object()  # every functionCall part is a whole call of its own
            self.tool(key, cid if type(cid) is str else None, name, arguments, out, idx)
        elif idx == 0 and ("executableCode" in part or "codeExecutionResult" in part):
            gemini_code_part(self.ptools(), part, out)  # code execution: provider_tool
        # thoughtSignature alone, inlineData, fileData: ignored (docs/provider-streams.md)

    def _streamed_call(self, idx: int, call: dict[str, Any], out: list[Event]) -> None:
        """One part of a call whose arguments Vertex AI streams (``willContinue``,
        ``partialArgs``): the call is announced with its name, its arguments are sent
        whole when its last part came (:mod:`.partial_args`)."""
        open_call = self._streamed.get(idx)
        name = call.get("name")
        if open_call is not None and name is not None:  # a new call before the end of this
            self._unended(idx, out)
            open_call = None
        if open_call is None:
            if type(name) is not str:
                self.fault(out, "bad_tool_call", f"functionCall not understood: {quote(call)}")
                return
            cid = call.get("id")
            key = object()
            self.tool(key, cid if type(cid) is str else None, name, "", out, idx)
            open_call = self._streamed[idx] = (key, StreamedArgs())
        key, args = open_call
        if "partialArgs" in call:
            args.add(call["partialArgs"])
        if call.get("willContinue") is True:
            return
        del self._streamed[idx]
        if args.error is None:
            self.tool(key, None, None, args.json(), out, idx)
        else:
            self._bad_call(f"streamed function call arguments: {args.error}", out)

    def _unended(self, idx: int, out: list[Event]) -> None:
        """Choice ``idx``'s streamed call never got its last part: its arguments are
        unknown (a typed error, the answer incomplete), never sent as they are."""
        self._streamed.pop(idx, None)
        self._bad_call("a streamed function call ended before its last part", out)

    def _bad_call(self, message: str, out: list[Event]) -> None:
        self.fault(out, "bad_tool_call", message)
        self.cut = True
        self.builder.complete = False

    def _error(self, err: Any, out: list[Event]) -> None:
        if type(err) is not dict:
            self.provider_error("upstream_error", quote(err, 300), None, out)
            return
        status, code = err.get("status"), err.get("code")
        name = status if type(status) is str else "upstream_error"
        http = code if type(code) is int else _STATUS_CODES.get(name)
        self.provider_error(name, err.get("message"), http, out)

    def close_extra(self, out: list[Event]) -> None:
        for idx in list(self._streamed):
            self._unended(idx, out)
        self._resolve_final(out)
        self._usage_out(out)

    # -- a whole body --------------------------------------------------------------

    def feed_completion(self, obj: Any, out: list[Event] | None = None) -> list[Event]:
        """A non-streaming ``generateContent`` body: one chunk that is the whole answer."""
        if out is None:
            out = []
        if type(obj) is not dict:
            self.fault(out, "bad_chunk", f"response is not a JSON object: {quote(obj)}")
            return out
        cands = obj.get("candidates")
        if obj.get("error") is None and obj.get("promptFeedback") is None and not cands:
            self.malformed(out, f"gemini response without candidates: {quote(obj)}")
            self.done = True
            return out
        self.event(b"", obj, out)
        if type(cands) is not list:
            self.cut = True  # reported by event(): not an answer
            self.builder.complete = False
        self._usage_out(out)
        self.done = True
        return out
