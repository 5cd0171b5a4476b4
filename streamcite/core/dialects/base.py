"""The one owner of a non-chat stream's shared state. Sans-I/O.

The protocol the parser drives is :mod:`.protocol`'s; the citation registry is the
:mod:`.citing` mixin; payload strings and error codes are read by :mod:`.payloads`.
:class:`StreamState` owns what
the non-chat dialects share — the answer builder, the footnote detectors, the running
character and UTF-16 length of the answer, tool-call placement, the citation registry
(one :class:`~streamcite.core.models.Citation` per distinct source) and the bounds — and
each dialect module (``responses``, ``anthropic``, ``gemini``, ``cohere``) receives it
and turns its provider's events into calls on it. No dialect module imports another.
"""

from __future__ import annotations

from typing import Any

import orjson

from streamcite.core._fields import expect_fields
from streamcite.core.answer import AnswerBuilder
from streamcite.core.bounds import clip_message
from streamcite.core.dialects.citing import MAX_SPANS, Citing
from streamcite.core.dialects.payloads import fix_strings, status_retryable
from streamcite.core.dialects.protocol import DialectInterpreter, Handler, Method
from streamcite.core.dialects.provider_tools import ProviderTools
from streamcite.core.events import (
    CitationRefEvent,
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
from streamcite.core.models import Usage
from streamcite.core.quote import quote
from streamcite.core.sse import OVERFLOW, RawEvent
from streamcite.core.surrogates import SurrogateJoiner, loads_lone_surrogates
from streamcite.core.tokens import emit_token

__all__ = [
    "MAX_SPANS",
    "MAX_UNKNOWN",
    "OTHER_TYPES",
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
MAX_UNKNOWN = 32
"""Distinct unknown types counted by name per stream; the rest are counted together."""
OTHER_TYPES = "(other types)"
"""The :attr:`~streamcite.core.models.CitedAnswer.skipped_types` key of the types beyond
:data:`MAX_UNKNOWN`."""

_loads = loads = orjson.loads
_new = new = object.__new__
_JSONDecodeError = JSONDecodeError = orjson.JSONDecodeError
expect_fields(
    TokenEvent, ["type", "index", "text", "display"], "dialects/base.py and the dialects' feed_raw"
)
_USAGE = ["prompt_tokens", "completion_tokens", "total_tokens"]
expect_fields(UsageEvent, ["type", *_USAGE], "dialects/base.py (StreamState.usage)")
expect_fields(Usage, _USAGE, "dialects/base.py (StreamState.usage)")


def new_token(text: str) -> TokenEvent:
    """A token of choice 0 whose display is its text, built without ``__init__`` (hot)."""
    ev = _new(TokenEvent)
    ev.type = "token"
    ev.index = 0
    ev.text = ev.display = text
    return ev


class StreamState(Citing):
    """The shared state of one non-chat stream, and the operations every dialect uses.

    A dialect subclasses it and implements :meth:`event` (one parsed data object) and
    :meth:`feed_completion`; everything that touches the answer goes through here, so
    the bounds and the offsets hold in every dialect alike.
    """

    __slots__ = (
        "_det",
        "_det0",
        "_disp0",
        "_mode",
        "_mode_keep",
        "_ptools",
        "_raw0",
        "_surr",
        "_tool_count",
        "_tool_keys",
        "builder",
        "cut",
        "done",
        "failed",
        "finished",
        "meta_seen",
        "tools_dropped",
        "usage_pending",
    )

    dialect = "?"
    """The dialect's name, in messages."""

    def __init__(self, builder: AnswerBuilder | None = None, marker_mode: MarkerMode = "keep"):
        b = self.builder = builder if builder is not None else AnswerBuilder()
        det0 = self._det0 = FootnoteDetector(marker_mode)  # (checks the mode: now)
        self._mode = marker_mode
        b.display_is_text = self._mode_keep = det0.keep
        self._raw0 = b.text_parts
        self._disp0 = b.display_parts
        self._det: dict[int, FootnoteDetector] = {0: det0}
        self._astral = 0
        self._astral_upto = 0
        """Characters beyond the BMP (two UTF-16 units) in choice 0's text before
        ``_astral_upto``: counted when a span asks, never per token."""
        self._tool_keys: dict[Any, int] = {}
        self._tool_count: dict[int, int] = {}
        """Tool calls per choice (their keys' count, kept: never counted by a scan)."""
        self.tools_dropped = 0
        self.init_citing()
        self._surr: SurrogateJoiner | None = None
        """Set once an event held escaped lone surrogates (``core.surrogates``): the
        streamed texts are joined through it from then on."""
        self.usage_pending: UsageEvent | None = None
        self._ptools: ProviderTools | None = None
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
            if item is OVERFLOW:  # first: narrowed to a tuple, mypyc boxes a new one for ``is``
                self.fault(out, "event_too_large", "an SSE event exceeded max_event_size", "sse")
                self.cut = True  # something of the answer may be lost
            elif isinstance(item, bytes):
                self.payload(b"", item, out)
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
            self._lone(fix_strings(obj), out)
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
        table: dict[str, Method],
        ignored: frozenset[str],
        obj: dict[str, Any],
        out: list[Event],
    ) -> None:
        """Hand ``obj`` to its ``type``'s handler; ignored types pass; others are reported."""
        kind = obj.get("type")
        handler = table.get(kind) if type(kind) is str else None
        if handler is not None:
            handler(self, obj, out)
        elif type(kind) is not str:
            self.fault(out, "bad_chunk", f"{self.dialect} event without a type: {quote(obj)}")
        elif kind not in ignored:
            self.unknown(kind[:60], obj, out)

    def unknown(self, kind: str, obj: Any, out: list[Event]) -> None:
        """An event (or content block, delta, part) type the dialect does not know: a
        newer API version's, skipped without an error and counted on the answer
        (:attr:`~streamcite.core.models.CitedAnswer.skipped_types`; at most
        :data:`MAX_UNKNOWN` types, the rest under ``"(other types)"``)."""
        if not kind.isprintable():  # a provider's string, shown in logs: inert
            kind = "".join(c if c.isprintable() else "?" for c in kind)
        skipped = self.builder.skipped_types
        if kind not in skipped and len(skipped) >= MAX_UNKNOWN:
            kind = OTHER_TYPES
        skipped[kind] = skipped.get(kind, 0) + 1

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
        refs = emit_token(det, idx, text, out, self._raw0, None if self._mode_keep else self._disp0)
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
    ) -> bool:
        """A tool-call fragment of the call known by ``key`` (a new key starts a call).
        False when the call is beyond a cap (reported once, then counted)."""
        if self._surr is not None and arguments:
            arguments = self._join(("a", idx, key), arguments, out)
        tidx = self._tool_keys.get((idx, key))
        if tidx is None:
            tidx = self._tool_count.get(idx, 0)
            bounds = self.builder.bounds
            if (
                tidx >= bounds.max_tool_calls
                or len(self._tool_keys) >= bounds.max_answer_tool_calls
            ):
                if not self.tools_dropped:
                    msg = (
                        f"tool call beyond the {bounds.max_tool_calls:,} of a choice or the"
                        f" {bounds.max_answer_tool_calls:,} of the answer: dropped"
                    )
                    self.fault(out, "bad_tool_call", msg)
                self.tools_dropped += 1
                return False
            self._tool_keys[(idx, key)] = tidx
            self._tool_count[idx] = tidx + 1
        ev = ToolCallEvent(idx, tidx, cid or None, name or None, arguments)
        out.append(ev)
        if idx == 0:
            self.builder.tool_call(ev)
        return True

    def ptools(self) -> ProviderTools:
        """The provider-run tools of this answer (made at the first one)."""
        if self._ptools is None:
            self._ptools = ProviderTools(self.builder, self.fault)
        return self._ptools

    @property
    def has_tools(self) -> bool:
        return 0 in self._tool_count

    def usage(
        self, prompt: Any, completion: Any, total: Any, out: list[Event], *, final: bool = True
    ) -> None:
        # (built without the dataclasses' keyword __init__: four stores each)
        p = prompt if type(prompt) is int else None
        c = completion if type(completion) is int else None
        t = total if type(total) is int else None
        if t is None and p is not None and c is not None:
            t = p + c
        u = self.builder.usage = _new(Usage)
        u.prompt_tokens, u.completion_tokens, u.total_tokens = p, c, t
        ev = _new(UsageEvent)
        ev.type = "usage"
        ev.prompt_tokens, ev.completion_tokens, ev.total_tokens = p, c, t
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
            self.flush_citations(out)
            self.finished = True
            self.builder.finish_reason = reason
            if reason == "error":
                self.cut = True
            self.builder.complete = not self.cut
            self._check_tool_arguments(out)
        out.append(FinishEvent(index=idx, reason=reason, raw_reason=raw))

    def _check_tool_arguments(self, out: list[Event]) -> None:
        """Each call's arguments are JSON; a call that got none (a function without
        parameters) gets an empty object, never ``""`` (unless the answer was cut)."""
        self.builder.compact()
        for tidx, tc in sorted(self.builder.tool_calls.items()):
            if not tc.arguments:
                if not self.cut:
                    ev = ToolCallEvent(0, tidx, None, None, "{}")
                    out.append(ev)
                    self.builder.tool_call(ev)
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
        msg = (
            message
            if isinstance(message, str)
            else ("" if message is None else quote(message, 300))
        )
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
            self._release_surrogates(out)
        for idx, det in list(self._det.items()):
            if det.held:
                self._flush(idx, out)
        self.close_extra(out)
        self.flush_citations(out)
        self.flush_usage(out)
        if not self.done and not self.finished and not self.failed:
            why = f"the {self.dialect} stream ended before its end event"
            if truncated_block:
                why += ", in the middle of an event"
            ev = ErrorEvent("truncated", why, True, "sse")  # code, message, retryable, stage
            self.builder.error(ev)
            out.append(ev)
            self.builder.complete = False
        return out

    def _release_surrogates(self, out: list[Event]) -> None:
        """High halves still awaiting their low one at the end: alone, so U+FFFD (reported)."""
        assert self._surr is not None
        for key in list(self._surr.held):
            self._surr.held.pop(key)
            self._lone(1, out)
            if key[0] == "t":
                self.token(key[1], "\ufffd", out)
            elif key[0] == "r":
                self.reasoning(key[1], "\ufffd", out)
            elif key[0] == "x":
                self.refusal(key[1], "\ufffd", out)

    def cut_for_size(self, ev: ErrorEvent, out: list[Event]) -> None:
        out.append(ev)
        self.cut = True
        self.failed = True
        self.done = True
        self.builder.complete = False
        self.usage_pending = None

    def close_extra(self, out: list[Event]) -> None:
        """A dialect's own end-of-input checks (pending spans...)."""

    def malformed(self, out: list[Event], message: str) -> None:
        """A whole body that holds no answer the dialect can read: a ``bad_chunk``
        error, and the answer is incomplete whatever finish the body claims."""
        self.fault(out, "bad_chunk", message)
        self.cut = True
        self.builder.complete = False
