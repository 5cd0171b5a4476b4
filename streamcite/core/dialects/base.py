"""What every dialect interpreter is, and the one owner of a stream's shared state. Sans-I/O.

:class:`DialectInterpreter` is the protocol the parser drives (the chat dialect's
``ChunkInterpreter`` and every class here implement it). :class:`StreamState` owns what
the non-chat dialects share — the answer builder, the footnote detectors, the running
character and UTF-16 length of the answer, tool-call placement, the citation registry
(one :class:`~streamcite.core.models.Citation` per distinct source) and the bounds — and
each dialect module (``responses``, ``anthropic``, ``gemini``, ``cohere``) receives it
and turns its provider's events into calls on it. No dialect module imports another.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import orjson

from streamcite.core._fields import expect_fields
from streamcite.core.answer import AnswerBuilder
from streamcite.core.bounds import TOO_MANY_CITATIONS, clip_message
from streamcite.core.events import (
    CitationRefEvent,
    CitationsEvent,
    ErrorEvent,
    Event,
    FinishEvent,
    MetaEvent,
    ReasoningEvent,
    RefusalEvent,
    TokenEvent,
    ToolCallEvent,
    UsageEvent,
)
from streamcite.core.markers import FootnoteDetector, MarkerMode
from streamcite.core.models import Citation, CitationSpan, Usage
from streamcite.core.offsets import OffsetMap
from streamcite.core.sse import OVERFLOW, RawEvent
from streamcite.core.surrogates import SurrogateJoiner, fix_surrogates, loads_lone_surrogates

__all__ = [
    "MAX_SPANS",
    "DialectInterpreter",
    "Handler",
    "JSONDecodeError",
    "StreamState",
    "loads",
    "new",
    "new_token",
    "status_retryable",
]

# The caps shared with the chat dialect (choices, tool calls, cited sources, answer size,
# errors, error messages) are the builder's ``bounds`` (streamcite.core.bounds).
MAX_SPANS = 1024
"""Citation spans per answer: every ``citations`` event carries the whole list so far,
so the events stay bounded whatever a stream anchors (four per cited source)."""
MAX_UNKNOWN = 32
"""Distinct unknown event types reported per stream (each once); the rest are counted."""

_loads = loads = orjson.loads
_new = new = object.__new__
_JSONDecodeError = JSONDecodeError = orjson.JSONDecodeError
expect_fields(
    TokenEvent, ["type", "index", "text", "display"], "dialects/base.py and the dialects' feed_raw"
)


def new_token(text: str) -> TokenEvent:
    """A token of choice 0 whose display is its text, built without ``__init__`` (hot)."""
    ev = _new(TokenEvent)
    ev.type = "token"
    ev.index = 0
    ev.text = ev.display = text
    return ev


_TEXT_KEYS = frozenset(
    {"text", "delta", "thinking", "partial_json", "arguments", "tool_plan", "refusal"}
)
"""Keys whose strings are streamed text: a surrogate half at either end may be joined
with the neighbouring delta's (the other strings are fixed at once)."""

_RETRYABLE = frozenset(
    {
        "rate_limit_exceeded",
        "rate_limit_error",
        "overloaded",
        "overloaded_error",
        "server_error",
        "api_error",
        "timeout",
        "service_unavailable",
        "internal_error",
        "RESOURCE_EXHAUSTED",
        "UNAVAILABLE",
        "INTERNAL",
        "DEADLINE_EXCEEDED",
        "TIMEOUT",
    }
)


def status_retryable(code: str, status: int | None) -> bool:
    """Whether a provider error is worth retrying: by its code, else its HTTP status."""
    return code in _RETRYABLE or (status is not None and (status == 429 or status >= 500))


class DialectInterpreter(Protocol):
    """What :class:`~streamcite.core.api.ChatStreamParser` drives, in every dialect."""

    @property
    def builder(self) -> AnswerBuilder:
        """The answer the interpreter folds its events into."""
        ...

    @property
    def finished(self) -> bool:
        """Choice 0 has finished (its finish event was emitted)."""
        ...

    @property
    def done(self) -> bool:
        """The stream's own end marker (or a whole body) was seen: nothing after counts."""
        ...

    def feed_raw(self, raw: list[RawEvent], out: list[Event]) -> None:
        """Interpret the SSE decoder's raw events of one read, appending to ``out``."""
        ...

    def feed_completion(self, obj: Any, out: list[Event] | None = None) -> list[Event]:
        """Interpret the API's non-streaming JSON body (already parsed)."""
        ...

    def close(self, *, truncated_block: bool = False) -> list[Event]:
        """End of input: held markers released, a cut stream reported."""
        ...

    def cut_for_size(self, ev: ErrorEvent, out: list[Event]) -> None:
        """The builder's ``answer_too_large`` (recorded already): emit it, read no more."""
        ...


Handler = Callable[[dict[str, Any], list[Event]], None]
"""A dialect's handler of one event type: the parsed data object and the output list."""


class StreamState:
    """The shared state of one non-chat stream, and the operations every dialect uses.

    A dialect subclasses it and implements :meth:`event` (one parsed data object) and
    :meth:`feed_completion`; everything that touches the answer goes through here, so
    the bounds and the offsets hold in every dialect alike.
    """

    __slots__ = (
        "_astral",
        "_astral_upto",
        "_cit_sent",
        "_cite_keys",
        "_det",
        "_det0",
        "_disp0",
        "_map",
        "_mode",
        "_mode_keep",
        "_raw0",
        "_surr",
        "_tool_keys",
        "_unknown",
        "builder",
        "citations_dropped",
        "cut",
        "done",
        "failed",
        "finished",
        "meta_seen",
        "spans_dropped",
        "usage_pending",
    )

    dialect = "?"
    """The dialect's name, in messages."""

    def __init__(self, builder: AnswerBuilder | None = None, marker_mode: MarkerMode = "keep"):
        self.builder = builder if builder is not None else AnswerBuilder()
        FootnoteDetector(marker_mode)  # validate the mode now, not at the first token
        self._mode = marker_mode
        self._mode_keep = marker_mode == "keep"
        self.builder.display_is_text = self._mode_keep
        self._raw0 = self.builder.text_parts
        self._disp0 = self.builder.display_parts
        self._det0 = FootnoteDetector(marker_mode)
        self._det: dict[int, FootnoteDetector] = {0: self._det0}
        self._astral = 0
        self._astral_upto = 0
        """Characters beyond the BMP (two UTF-16 units) in choice 0's text before
        ``_astral_upto``: counted when a span asks, never per token."""
        self._map: OffsetMap | None = None
        self._tool_keys: dict[Any, int] = {}
        self._cite_keys: dict[Any, int] = {}
        self._cit_sent = (0, 0)
        """(citations, spans) the last ``citations`` event carried: both lists only grow,
        so an event with the same counts would repeat the last one."""
        self._unknown: set[str] = set()
        self._surr: SurrogateJoiner | None = None
        """Set once an event held escaped lone surrogates (``core.surrogates``): the
        streamed texts are joined through it from then on."""
        self.citations_dropped = 0
        self.spans_dropped = 0
        self.usage_pending: UsageEvent | None = None
        self.meta_seen = False
        self.cut = False
        """A provider error or a failed status cut the answer."""
        self.failed = False
        """The provider reported a fault that ends the stream (no truncation report)."""
        self.finished = False
        self.done = False

    # -- input ---------------------------------------------------------------------

    def feed_raw(self, raw: list[RawEvent], out: list[Event]) -> None:
        """The general way, one event at a time. Each dialect's own ``feed_raw`` takes its
        commonest event (a plain text delta of choice 0) inline and hands every other
        item here."""
        for item in raw:
            if self.done:
                return
            if isinstance(item, bytes):
                self.payload(b"", item, out)
            elif item is OVERFLOW:
                self.fault(out, "event_too_large", "an SSE event exceeded max_event_size", "sse")
            else:
                self.payload(item[0], item[1], out)

    def payload(self, name: bytes, data: bytes, out: list[Event]) -> None:
        """One SSE event's data: parsed and handed to :meth:`event`."""
        if data == b"[DONE]":
            self.end_marker(out)
            return
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            if not data.strip():
                return  # an event with an empty data field carries nothing
            obj = loads_lone_surrogates(data)  # JSON but for lone surrogate escapes?
            if type(obj) is not dict:
                msg = f"event is not valid JSON ({exc}): {data[:120]!r}"
                self.fault(out, "invalid_json", msg)
                return
            if self._surr is None:
                self._surr = SurrogateJoiner()
            self._lone(_fix_strings(obj), out)
        if type(obj) is not dict:
            self.fault(out, "bad_chunk", f"event is not a JSON object: {data[:120]!r}")
            return
        self.event(name, obj, out)

    def event(self, name: bytes, obj: dict[str, Any], out: list[Event]) -> None:
        """One parsed event of the dialect (``name``: its SSE ``event:`` field, or empty)."""
        raise NotImplementedError

    def end_marker(self, out: list[Event]) -> None:
        """A ``[DONE]`` data line (Cohere sends one; the others never do)."""
        self.fault(out, "bad_chunk", f"unexpected [DONE] in a {self.dialect} stream")

    def feed_completion(self, obj: Any, out: list[Event] | None = None) -> list[Event]:
        raise NotImplementedError

    def dispatch(
        self,
        table: dict[str, Handler],
        ignored: frozenset[str],
        obj: dict[str, Any],
        out: list[Event],
    ) -> None:
        """Hand ``obj`` to its ``type``'s handler; ignored types pass; others are reported."""
        kind = obj.get("type")
        handler = table.get(kind) if type(kind) is str else None
        if handler is not None:
            handler(obj, out)
        elif type(kind) is not str or kind not in ignored:
            self.unknown(repr(kind)[:60] if type(kind) is not str else kind, obj, out)

    def unknown(self, kind: str, obj: Any, out: list[Event]) -> None:
        """An event type the dialect does not know: reported once per type (bounded)."""
        if kind in self._unknown or len(self._unknown) >= MAX_UNKNOWN:
            return
        self._unknown.add(kind)
        msg = f"{self.dialect} event type {kind[:60]!r} not understood: {obj!r:.120}"
        self.fault(out, "unknown_event", msg)

    # -- what every dialect emits ----------------------------------------------------

    def meta(self, cid: Any, model: Any, created: Any, out: list[Event]) -> None:
        if self.meta_seen:
            return
        self.meta_seen = True
        ev = MetaEvent(
            id=cid if isinstance(cid, str) else None,
            model=model if isinstance(model, str) else None,
            created=created if type(created) is int else None,
        )
        self.builder.id = ev.id
        self.builder.model = ev.model
        out.append(ev)

    def _join(self, key: Any, text: str, out: list[Event]) -> str:
        """``text`` with a surrogate pair split from its neighbour joined (cold: only in a
        stream that sent an escaped lone surrogate)."""
        assert self._surr is not None
        text, lone = self._surr.join(key, text)
        self._lone(lone, out)
        return text

    def _lone(self, count: int, out: list[Event]) -> None:
        if count:
            msg = f"{count} lone UTF-16 surrogate(s) replaced by U+FFFD"
            self.fault(out, "lone_surrogate", msg)

    def token(self, idx: int, text: str, out: list[Event]) -> None:
        """A non-empty text delta of choice ``idx`` (footnote markers detected)."""
        if self._surr is not None and not (text := self._join(("t", idx), text, out)):
            return
        det = self._det.get(idx)
        if det is None:
            det = self._det[idx] = FootnoteDetector(self._mode)
        if det.keep and not det.held and "[" not in text:
            det.offset += len(text)
            out.append(TokenEvent(idx, text, text))
            if idx == 0:
                self._raw0.append(text)
            return
        display, refs = det.feed(text)
        out.append(TokenEvent(idx, text, display))
        if idx == 0:
            self._raw0.append(text)
            if not self._mode_keep:
                self._disp0.append(display)
        if refs:
            self._refs(idx, refs, out)

    def _refs(self, idx: int, refs: list[tuple[int, int]], out: list[Event]) -> None:
        for number, offset in refs:
            out.append(CitationRefEvent(idx, number, number - 1, offset))
            self.builder.refs.add(idx, number, number - 1, offset)

    def _flush(self, idx: int, out: list[Event]) -> None:
        det = self._det.get(idx)
        if det is None or not det.held:
            return
        display, refs = det.flush()
        if display:
            out.append(TokenEvent(idx, "", display))
            if idx == 0 and not self._mode_keep:
                self._disp0.append(display)
        if refs:
            self._refs(idx, refs, out)

    def reasoning(self, idx: int, text: str, out: list[Event]) -> None:
        if self._surr is not None and not (text := self._join(("r", idx), text, out)):
            return
        out.append(ReasoningEvent(idx, text))
        if idx == 0:
            self.builder.reasoning_parts.append(text)

    def refusal(self, idx: int, text: str, out: list[Event]) -> None:
        if self._surr is not None and not (text := self._join(("x", idx), text, out)):
            return
        out.append(RefusalEvent(idx, text))
        if idx == 0:
            self.builder.refusal_parts.append(text)

    def tool(
        self,
        key: Any,
        cid: str | None,
        name: str | None,
        arguments: str,
        out: list[Event],
        idx: int = 0,
    ) -> None:
        """A tool-call fragment of the call known by ``key`` (a new key starts a call)."""
        if self._surr is not None and arguments:
            arguments = self._join(("a", idx, key), arguments, out)
        tidx = self._tool_keys.get((idx, key))
        if tidx is None:
            tidx = sum(1 for k in self._tool_keys if k[0] == idx)
            cap = self.builder.bounds.max_tool_calls
            if tidx >= cap:
                msg = f"tool call beyond the {cap:,} of a choice: dropped"
                self.fault(out, "bad_tool_call", msg)
                return
            self._tool_keys[(idx, key)] = tidx
        ev = ToolCallEvent(idx, tidx, cid or None, name or None, arguments)
        out.append(ev)
        if idx == 0:
            self.builder.tool_call(ev)

    @property
    def has_tools(self) -> bool:
        return any(k[0] == 0 for k in self._tool_keys)

    def usage(
        self, prompt: Any, completion: Any, total: Any, out: list[Event], *, final: bool = True
    ) -> None:
        vals = [v if type(v) is int else None for v in (prompt, completion, total)]
        if vals[2] is None and vals[0] is not None and vals[1] is not None:
            vals[2] = vals[0] + vals[1]
        self.builder.usage = Usage(*vals)
        ev = UsageEvent(prompt_tokens=vals[0], completion_tokens=vals[1], total_tokens=vals[2])
        if final:
            self.usage_pending = None
            out.append(ev)
        else:
            self.usage_pending = ev

    def flush_usage(self, out: list[Event]) -> None:
        if self.usage_pending is not None:
            out.append(self.usage_pending)
            self.usage_pending = None

    def finish(self, idx: int, reason: str, raw: str | None, out: list[Event]) -> None:
        """Choice ``idx`` finished: ``reason`` in the chat vocabulary, ``raw`` as sent."""
        self._flush(idx, out)
        if idx == 0:
            if self.finished:
                return
            self.finished = True
            self.builder.finish_reason = reason
            if reason == "error":
                self.cut = True
            self.builder.complete = not self.cut
            self._check_tool_arguments(out)
        out.append(FinishEvent(index=idx, reason=reason, raw_reason=raw))

    def _check_tool_arguments(self, out: list[Event]) -> None:
        for tidx, tc in sorted(self.builder.tool_calls.items()):
            if not tc.arguments:
                continue
            try:
                orjson.loads(tc.arguments)
            except orjson.JSONDecodeError as exc:
                msg = f"tool call {tidx} ({tc.name}) arguments are not valid JSON: {exc}"
                self.fault(out, "bad_tool_arguments", msg)

    def provider_error(
        self,
        code: Any,
        message: Any,
        status: Any,
        out: list[Event],
        *,
        retryable: bool | None = None,
        stage: str = "chunk",
    ) -> ErrorEvent:
        """A provider's own error report: the answer is cut (``complete: false``)."""
        code_s = str(code) if code not in (None, "") else "upstream_error"
        st = status if type(status) is int else None
        if retryable is None:
            retryable = status_retryable(code_s, st)
        msg = message if isinstance(message, str) else ("" if message is None else str(message))
        limit = self.builder.bounds.max_error_message
        ev = ErrorEvent(
            code=clip_message(code_s, 100),
            message=clip_message(msg, limit),
            retryable=retryable,
            stage=stage,
            status=st,
        )
        self.builder.error(ev)
        out.append(ev)
        if not self.finished:
            self.cut = True
            self.builder.complete = False
        self.failed = True
        return ev

    def fault(self, out: list[Event], code: str, message: str, stage: str = "chunk") -> None:
        """A shape the dialect did not expect: a typed error, the stream goes on."""
        ev = ErrorEvent(code=code, message=message, retryable=False, stage=stage)
        self.builder.error(ev)
        out.append(ev)

    def end(self, out: list[Event]) -> None:
        """The stream's own end marker: complete unless something cut it."""
        self.done = True
        self.builder.complete = self.finished and not self.cut
        self.flush_usage(out)

    def close(self, *, truncated_block: bool = False) -> list[Event]:
        out: list[Event] = []
        if self._surr is not None and self._surr.held:
            # High halves still awaiting their low one: alone, so U+FFFD (reported).
            for key in list(self._surr.held):
                self._surr.held.pop(key)
                self._lone(1, out)
                if key[0] == "t":
                    self.token(key[1], "\ufffd", out)
                elif key[0] == "r":
                    self.reasoning(key[1], "\ufffd", out)
                elif key[0] == "x":
                    self.refusal(key[1], "\ufffd", out)
        for idx in list(self._det):
            self._flush(idx, out)
        self.close_extra(out)
        self.flush_usage(out)
        if not self.done and not self.finished and not self.failed:
            why = f"the {self.dialect} stream ended before its end event"
            if truncated_block:
                why += ", in the middle of an event"
            ev = ErrorEvent(code="truncated", message=why, retryable=True, stage="sse")
            self.builder.error(ev)
            out.append(ev)
            self.builder.complete = False
        return out

    def cut_for_size(self, ev: ErrorEvent, out: list[Event]) -> None:
        out.append(ev)
        self.cut = True
        self.failed = True
        self.done = True
        self.builder.complete = False
        self.usage_pending = None

    def close_extra(self, out: list[Event]) -> None:
        """A dialect's own end-of-input checks (pending spans...)."""

    # -- citations -----------------------------------------------------------------

    def cite(self, key: Any, citation: Citation, out: list[Event]) -> int | None:
        """The ``document_index`` of the source known by ``key``; a new source is added
        (``citation`` gets its index). ``None`` beyond ``bounds.max_citations``."""
        known = self._cite_keys.get(key)
        if known is not None:
            return known
        n, cap = len(self.builder.citations), self.builder.bounds.max_citations
        if n >= cap:
            if not self.citations_dropped:
                msg = f"more than {cap} cited sources: the rest dropped"
                self.fault(out, TOO_MANY_CITATIONS, msg)
            self.citations_dropped += 1
            return None
        citation.document_index = n
        self._cite_keys[key] = n
        self.builder.citations = [*self.builder.citations, citation]
        return n

    def span(self, doc: int, start: int, end: int, out: list[Event]) -> bool:
        """Add the span ``start:end`` (characters of choice 0's text) of citation ``doc``.
        False (and reported) when it is not within the text so far or over the bound."""
        if not 0 <= start <= end <= self.chars0:
            msg = (
                f"citation span {start}-{end} of citation {doc} is not within the answer"
                f" text ({self.chars0} characters)"
            )
            self.fault(out, "bad_citation_span", msg)
            return False
        if len(self.builder.citation_spans) >= MAX_SPANS:
            if not self.spans_dropped:
                msg = f"more than {MAX_SPANS} citation spans: the rest dropped"
                self.fault(out, TOO_MANY_CITATIONS, msg)
            self.spans_dropped += 1
            return False
        sp = CitationSpan(doc, start, end, self.utf16_at(start), self.utf16_at(end))
        self.builder.citation_spans = [*self.builder.citation_spans, sp]
        return True

    def emit_citations(self, out: list[Event]) -> None:
        """A ``citations`` event with every citation and span so far (consumers replace),
        only when a citation or a span was added since the last one: a citation of a
        known source, or a span beyond :data:`MAX_SPANS`, emits nothing (each event
        carries the whole lists: repeating them would amplify the input)."""
        b = self.builder
        counts = (len(b.citations), len(b.citation_spans))
        if counts == self._cit_sent:
            return
        self._cit_sent = counts
        out.append(CitationsEvent(citations=b.citations, spans=b.citation_spans))

    def malformed(self, out: list[Event], message: str) -> None:
        """A whole body that holds no answer the dialect can read: a ``bad_chunk``
        error, and the answer is incomplete whatever finish the body claims."""
        self.fault(out, "bad_chunk", message)
        self.cut = True
        self.builder.complete = False

    def text_map(self) -> OffsetMap:
        """An offset map of choice 0's text so far (cold path: citations, spans)."""
        m = self._map
        if m is None or len(m.text) != self.chars0:
            m = self._map = OffsetMap(self.builder.text_so_far())
        return m

    @property
    def chars0(self) -> int:
        """Characters of choice 0's text so far."""
        return self._det0.offset

    def utf16_at(self, char: int) -> int:
        """UTF-16 offset of character ``char`` of choice 0's text so far. The characters
        beyond the BMP are counted up to the furthest offset asked (spans come mostly in
        text order: each part of the text is looked at about once)."""
        text = self.builder.text_so_far()
        if char < self._astral_upto:
            return char + _astral(text[:char])
        self._astral += _astral(text[self._astral_upto : char])
        self._astral_upto = char
        return char + self._astral

    def text_slice(self, start: int, end: int) -> str:
        return self.builder.text_so_far()[start:end]


def _astral(s: str) -> int:
    """Characters of ``s`` beyond the BMP (each two UTF-16 units)."""
    return 0 if s.isascii() else (len(s.encode("utf-16-le", "surrogatepass")) >> 1) - len(s)


def _fix_strings(obj: dict[str, Any]) -> int:
    """Fix the surrogates of every string of ``obj`` in place (pairs joined, lone ones
    U+FFFD), but a high half ending or a low half starting a streamed text (under
    :data:`_TEXT_KEYS`): the dialect joins those with the neighbouring delta. Returns the
    number of lone surrogates replaced."""
    lone = 0
    stack: list[Any] = [obj]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for k, v in list(items):
            if isinstance(v, dict | list):
                stack.append(v)
            elif isinstance(v, str):
                if k in _TEXT_KEYS and isinstance(node, dict):
                    head = v[:1] if v[:1] and "\udc00" <= v[0] <= "\udfff" else ""
                    tail = v[-1:] if len(v) > len(head) and "\ud800" <= v[-1] <= "\udbff" else ""
                    inner, n = fix_surrogates(v[len(head) : len(v) - len(tail)])
                    node[k] = head + inner + tail
                else:
                    node[k], n = fix_surrogates(v)
                lone += n
        if isinstance(node, dict):
            for k in [k for k in node if isinstance(k, str) and fix_surrogates(k)[1]]:
                node[fix_surrogates(k)[0]] = node.pop(k)
    return lone
