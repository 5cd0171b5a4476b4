"""``chat.completion.chunk`` payloads → typed events. Sans-I/O.

Hot path per chunk: ``orjson.loads`` on the data bytes, a few dict lookups, one
slotted :class:`TokenEvent`. Everything rarer (citations, usage, errors, shapes
that are wrong) goes through cold helpers that validate strictly and never lose
what was already delivered.
"""

from __future__ import annotations

from typing import Any

import orjson

from streamcite.core.answer import AnswerBuilder
from streamcite.core.bounds import MAX_CHOICES
from streamcite.core.chunk_surrogates import SurrogateHandling
from streamcite.core.delta_fastpath import delta_run
from streamcite.core.deltas import (
    check_spans,
    check_tool_arguments,
    finish_error,
    interpret_delta,
)
from streamcite.core.errors_payload import error_from_payload
from streamcite.core.events import (
    CitationRefEvent,
    ErrorEvent,
    Event,
    FinishEvent,
    TokenEvent,
    UsageEvent,
)
from streamcite.core.fastpath import feed_keep_mode
from streamcite.core.markers import FootnoteDetector, MarkerMode
from streamcite.core.named_events import named_event
from streamcite.core.one_step import LEARNABLE, take
from streamcite.core.quote import quote
from streamcite.core.sse import OVERFLOW, RawEvent
from streamcite.core.surrogates import SurrogateJoiner, loads_lone_surrogates
from streamcite.core.template import ContentTemplate, DeltaTemplate
from streamcite.core.tokens import emit_token
from streamcite.core.tool_placer import ToolPlacer
from streamcite.core.wrong_dialect import is_foreign

__all__ = ["MAX_CHOICES", "ChunkInterpreter", "error_from_payload"]


_loads = orjson.loads
_new = object.__new__
_JSONDecodeError = orjson.JSONDecodeError
_NO_TEMPLATE = DeltaTemplate()
"""A stream's delta template until its first refusal or argument fragment (never learnt
into: ``_learn`` makes the stream's own first)."""
_EXTRA_KEYS = ("reasoning_content", "reasoning", "refusal", "tool_calls", "annotations")
_ROLE_CONTENT = frozenset({"role", "content"})


def _choice_usage(choices: list[Any]) -> Any:
    """A usage object inside a choice (Moonshot sends it in the finishing choice)."""
    for ch in choices:
        if type(ch) is dict and (usage := ch.get("usage")):
            return usage
    return None


def _has_extra(delta: dict[str, Any]) -> bool:
    """A delta carrying something besides its content string (reasoning, tool calls...)."""
    if delta.keys() <= _ROLE_CONTENT:
        return False  # OpenRouter and Perplexity repeat the role on every chunk
    return any(delta.get(k) for k in _EXTRA_KEYS)


class ChunkInterpreter(SurrogateHandling):
    """Interprets the data payloads of one chat stream and folds them into an answer.

    The hot path is here; the cold paths are its base classes, one concept each:
    :class:`~streamcite.core.chunk_fields.ChunkFields` (meta, citations, usage),
    :class:`~streamcite.core.chunk_surrogates.SurrogateHandling` (lone surrogates) and
    :class:`~streamcite.core.chunk_faults.ChunkFaults` (errors and faults).
    """

    __slots__ = ()

    def __init__(self, builder: AnswerBuilder | None = None, marker_mode: MarkerMode = "keep"):
        self._builder = builder if builder is not None else AnswerBuilder()
        self._mode = marker_mode
        if marker_mode != "keep":
            FootnoteDetector(marker_mode)  # validate the mode now, not at the first token
        self._detectors: dict[int, FootnoteDetector] = {}
        self._mode_keep = marker_mode == "keep"
        self._builder.display_is_text = self._mode_keep
        self._raw0 = self._builder.text_parts
        self._disp0 = self._builder.display_parts
        self._refs = self._builder.refs
        self._meta_seen = False
        self._last_citations: Any = None
        self._finished: set[int] = set()
        self._usage_pending: UsageEvent | None = None
        self._tools: dict[int, ToolPlacer] = {}
        self._surr: SurrogateJoiner | None = None
        """Choices' content texts ending in a high surrogate (``core.surrogates``)."""
        self._surr_held = False
        """Some high surrogate is held (the template is off meanwhile)."""
        self._tpl_off = False
        """The template was turned off for a held surrogate (back on once released)."""
        """Per choice: which call a tool-call delta continues (``deltas.ToolPlacer``)."""
        self.annotations_dropped = 0
        """``url_citation`` annotations beyond ``deltas.MAX_URL_CITATIONS`` (reported once)."""
        self.citations_dropped = 0
        """Chunks whose citation list went beyond its cap (reported once: ``too_many_citations``)."""
        self.spans_checked = 0
        """``url_citation`` spans already checked against the final text."""
        self.cut = False
        self.foreign_seen = False
        """A chunk of another API's dialect was seen (reported once)."""
        """A provider error cut the answer (``finish_reason: "error"``, an error object)."""
        self._tpl = ContentTemplate()
        self._dtpl = _NO_TEMPLATE
        """The envelope of refusal and tool-argument chunks (``core.delta_fastpath``):
        made at the first such chunk (most streams have none)."""
        self.done = False
        """``[DONE]`` was seen (or a non-streaming body was interpreted)."""

    @property
    def builder(self) -> AnswerBuilder:
        return self._builder

    # -- hot path ------------------------------------------------------------------

    def feed(
        self, payload: bytes, event: bytes = b"", out: list[Event] | None = None
    ) -> list[Event]:
        """Interpret one SSE ``data`` payload (bytes) of event type ``event``."""
        if out is None:
            out = []
        if self.done:
            return out  # nothing after [DONE] is part of the answer, not even errors
        if event and event != b"message":
            named_event(self, event, payload, out)
            return out
        if payload == b"[DONE]":
            self._done(out)
            return out
        try:
            obj = _loads(payload)
        except _JSONDecodeError as exc:
            obj = loads_lone_surrogates(payload)  # JSON but for lone surrogate escapes?
            if type(obj) is dict:
                self._lenient(obj, out)
                return out
            return self._fault(
                out, "invalid_json", f"chunk is not valid JSON ({exc}): {payload[:120]!r}"
            )
        if type(obj) is not dict:
            return self._fault(out, "bad_chunk", f"chunk is not a JSON object: {payload[:120]!r}")
        taken = self._rare_delta(obj, out)
        if not taken:
            self._interpret(obj, "delta", out)
        elif taken == LEARNABLE:
            self._learn(payload, obj)  # the chunks like it: taken from their bytes
        return out

    def feed_raw(self, raw: list[RawEvent], out: list[Event]) -> None:
        """Interpret the decoder's raw events (one read's worth).

        Once choice 0 has a token in keep mode, the per-chunk loop of
        :mod:`streamcite.core.fastpath` runs: content-only chunks in the proven
        envelope are taken there, everything else comes back to :meth:`_chunk`.
        It takes over within the read that brings that first token (a 4 KiB read
        holds some thirty chunks: the general path for them all was most of a short
        stream's fixed cost).
        """
        if self.done:
            return
        if self._mode_keep and 0 in self._detectors:
            feed_keep_mode(self, raw, out)
            return
        items = iter(raw)
        while True:
            # Refusal and tool-argument chunks in a learnt envelope: delta_fastpath.py.
            item = delta_run(self, items, out) if self._dtpl.prefix else next(items, None)
            if item is None:
                return
            if item is OVERFLOW:  # first: see StreamState.feed_raw
                self._overflow(out)
            elif isinstance(item, bytes):
                self.feed(item, b"", out)
            else:
                self.feed(item[1], item[0], out)
            if self.done:
                return  # nothing after [DONE] counts, not even errors
            if self._mode_keep and 0 in self._detectors:
                if rest := list(items):
                    feed_keep_mode(self, rest, out)
                return

    def _chunk(self, item: RawEvent, out: list[Event]) -> None:
        """One raw event the template did not take. A content-only chunk of choice 0
        (the common shape: one choice, a string ``delta.content``, no finish reason,
        no chunk-level citations, usage, ``x_groq`` or error) is parsed and its shape checked
        inline (and shown to the template); anything else goes the general way."""
        if not isinstance(item, bytes) or item == b"[DONE]":
            if item is OVERFLOW:
                self._overflow(out)
            elif isinstance(item, bytes):
                self.feed(item, b"", out)  # [DONE] (not a JSONDecodeError, whose __init__ costs)
            else:
                self.feed(item[1], item[0], out)
            return
        try:
            obj = _loads(item)
            # The shape of nearly every chunk; anything else raises and goes the
            # general way (zero-cost try in CPython 3.11 when nothing is raised).
            (ch,) = obj["choices"]
            delta = ch["delta"]
            content = delta["content"]
        except _JSONDecodeError:
            self.feed(item, b"", out)  # [DONE], or reports the invalid JSON
            return
        except (KeyError, TypeError, ValueError, IndexError):
            taken = self._rare_delta(obj, out)
            if not taken:
                self._general(obj, item, out)
            elif taken == LEARNABLE:
                self._learn(item, obj)
            return
        if (
            type(content) is not str
            or ch.get("finish_reason")
            or type(idx := ch.get("index", 0)) is not int
            or idx
            or "error" in obj
            or "x_groq" in obj  # Groq's first and last chunks: usage may be under it
            or "usage" in ch  # Moonshot puts it in the choice
            or (len(delta) > 1 and (not content or _has_extra(delta)))
        ):
            self._general(obj, item, out)
            return
        usage = obj.get("usage")
        if usage or "citations" in obj or "search_results" in obj:
            self._with_fields(obj, content, usage, out)
            return
        if self._tpl.on:
            self._tpl.observe(item, content)
        if content:
            self._token(0, content, out)

    def _with_fields(self, obj: dict[str, Any], content: str, usage: Any, out: list[Event]) -> None:
        """A content chunk of choice 0 that also carries chunk-level citations or usage
        (Perplexity repeats both on every chunk): what the general way does for it, in
        its order (the token, the citations, the usage kept for the end), without the
        walk over every field. An ``"object": "error"`` chunk goes the general way."""
        if obj.get("object") == "error":
            self._interpret(obj, "delta", out)
            return
        if content:
            self._token(0, content, out)
        if "citations" in obj or "search_results" in obj:
            self._citations(obj, out)
        if usage:
            self._usage(usage, out, final=False)

    def _rare_delta(self, obj: Any, out: list[Event]) -> int:
        """A chunk of choice 0 whose delta has no content text and nothing else the
        general way reads (the first chunk of a tool-call or refusal stream, a call's
        start, an argument fragment, a refusal text): taken in one step, as the general
        way takes it (``core.one_step``: ``TAKEN``, or ``LEARNABLE`` for the shapes
        whose envelope ``core.delta_fastpath`` learns); else ``NOT_TAKEN`` (0)."""
        return take(self, obj, out)

    def _learn(self, payload: bytes, obj: dict[str, Any]) -> None:
        """The envelope of a chunk taken as ``LEARNABLE`` (the template made at the first)."""
        t = self._dtpl
        if t is _NO_TEMPLATE:
            t = self._dtpl = DeltaTemplate()
        if t.on:
            t.learn(payload, obj)

    def _general(self, obj: Any, payload: bytes, out: list[Event]) -> None:
        if type(obj) is not dict:
            self._fault(out, "bad_chunk", f"chunk is not a JSON object: {payload[:120]!r}")
        else:
            self._interpret(obj, "delta", out)

    def _interpret(self, obj: dict[str, Any], key: str, out: list[Event]) -> None:
        if "choices" not in obj and is_foreign(obj):
            self._foreign(obj, out)
            return
        if not self._meta_seen:
            self._meta(obj, out)
        choices = obj.get("choices")
        finishes = self._choices(choices, key, out) if choices else None
        # Cold: chunk-level fields. Citations come before the finish event so that
        # whoever reacts to ``finish`` (enrichers) sees them in the answer.
        if "citations" in obj or "search_results" in obj:
            self._citations(obj, out)
        if finishes:
            self._finish(obj, finishes, out)
        usage = obj.get("usage")
        if not usage and type(xg := obj.get("x_groq")) is dict:
            usage = xg.get("usage")  # Groq: usage only under x_groq
        if not usage and type(choices) is list:
            usage = _choice_usage(choices)  # Moonshot: usage inside the finishing choice
        if usage:
            final = bool(finishes) or not choices or type(choices) is not list
            self._usage(usage, out, final=final)
        err = obj.get("error")
        if not err and obj.get("object") == "error":
            err = obj  # vLLM's older top-level error object
        if err:
            self._provider_error(err, finishes, out)

    def _choices(self, choices: Any, key: str, out: list[Event]) -> list[FinishEvent]:
        """Tokens (and other deltas) of each choice; the finish events, for the caller."""
        finishes: list[FinishEvent] = []
        if type(choices) is not list:
            self._fault(out, "bad_chunk", f"choices is not an array: {quote(choices)}")
            return finishes
        for ch in choices:
            if type(ch) is not dict:
                self._fault(out, "bad_chunk", f"choice is not an object: {quote(ch)}")
                continue
            delta = ch.get(key)
            if delta:
                if type(delta) is not dict:
                    self._fault(out, "bad_chunk", f"{key} is not an object: {quote(delta)}")
                    delta = {}
                content = delta.get("content")
                plain = type(content) is str
                if (content and plain) or (delta and (not plain or len(delta) > 1)):
                    idx = self._index(ch, out)
                    if idx is None:
                        continue
                    if content and plain:
                        self._token(idx, content, out)
                    if not plain or (len(delta) > 1 and not delta.keys() <= _ROLE_CONTENT):
                        interpret_delta(self, idx, delta, out)
            reason = ch.get("finish_reason")
            if reason:
                idx = self._index(ch, out)
                if idx is None:
                    continue
                self._flush(idx, out)
                finishes.append(FinishEvent(index=idx, reason=str(reason)))
        return finishes

    def _index(self, ch: dict[str, Any], out: list[Event]) -> int | None:
        idx = ch.get("index", 0)
        if type(idx) is not int:
            self._fault(out, "bad_chunk", f"choice index is not an integer: {quote(idx, 40)}")
            return None
        limit = self._builder.bounds.max_choices
        if not 0 <= idx < limit:
            msg = f"choice index {idx} is outside 0-{limit - 1}: choice skipped"
            self._fault(out, "bad_chunk", msg)
            return None
        return idx

    def _finish(self, obj: dict[str, Any], finishes: list[FinishEvent], out: list[Event]) -> None:
        self._keep_fields(obj)
        for f in finishes:
            self._finished.add(f.index)
            if f.index == 0:
                self._builder.finish_reason = f.reason
                self._builder.complete = not self.cut
                check_tool_arguments(self, out)
                check_spans(self, out)
        out.extend(finishes)
        for f in finishes:
            if f.reason == "error":
                finish_error(self, obj, f.index, out)

    def _token(self, idx: int, content: str, out: list[Event]) -> None:
        # Meta comes before the first token or not at all: stop looking for it.
        self._meta_seen = True
        if self._surr_held:
            content = self._unhold(idx, out) + content
        det = self._detectors.get(idx)
        if det is None:
            det = self._detectors[idx] = FootnoteDetector(self._mode)
        disp0 = None if self._mode_keep else self._disp0
        refs = emit_token(det, idx, content, out, self._raw0, disp0)
        if refs:
            self._add_refs(idx, refs, out)

    # -- cold paths ----------------------------------------------------------------

    def _add_refs(self, idx: int, refs: list[tuple[int, int]], out: list[Event]) -> None:
        keep = self._refs.add
        for number, offset in refs:
            # Built field by field, as tokens are (fastpath.py guards the fields).
            ev = _new(CitationRefEvent)
            ev.type = "citation_ref"
            ev.index = idx
            ev.number = number
            ev.document_index = number - 1
            ev.offset = offset
            out.append(ev)
            keep(idx, number, number - 1, offset)

    def _flush(self, idx: int, out: list[Event]) -> None:
        if self._surr_held:
            self._release_held(out, idx)
        det = self._detectors.get(idx)
        if det is None or not det.held:
            return
        display, refs = det.flush()
        if display:
            # The tail a strip/render mode held back: no new raw text, only display.
            out.append(TokenEvent(idx, "", display))
            if idx == 0 and not self._mode_keep:
                self._disp0.append(display)
        if refs:
            self._add_refs(idx, refs, out)

    def _done(self, out: list[Event]) -> None:
        """``[DONE]``: the answer is complete unless a provider error cut it."""
        self._release_held(out)
        self.done = True
        self._builder.complete = not self.cut
        check_spans(self, out)
        self._flush_usage(out)

    # -- whole bodies and the end --------------------------------------------------

    def feed_completion(self, obj: Any, out: list[Event] | None = None) -> list[Event]:
        """Interpret a non-streaming ``chat.completion`` body (already parsed)."""
        if out is None:
            out = []
        if type(obj) is not dict:
            return self._fault(out, "bad_chunk", f"response is not a JSON object: {quote(obj)}")
        if not obj.get("choices") and not obj.get("error") and obj.get("object") != "error":
            # Nothing this dialect reads as an answer (not even an error): say so.
            self._fault(out, "bad_chunk", f"response without choices: {quote(obj)}")
        self._interpret(obj, "message", out)
        self.done = True
        return out

    def close(self, *, truncated_block: bool = False) -> list[Event]:
        """End of input: release held markers; report truncation (never a clean stop)."""
        out: list[Event] = []
        if not self.done:
            self._release_held(out)
        for idx in list(self._detectors):
            self._flush(idx, out)
        self._flush_usage(out)
        # A cut after choice 0's finish (inside the final "[DONE]" or the usage
        # chunk) loses nothing of the answer: not reported as truncation.
        if not self.done and not self.finished:
            why = "the stream ended without [DONE]"
            why += " in the middle of an event" if truncated_block else " or a finish_reason"
            ev = ErrorEvent(code="truncated", message=why, retryable=True, stage="sse")
            self._builder.error(ev)
            out.append(ev)
        return out
