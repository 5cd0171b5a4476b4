"""The per-event hot loop of the Anthropic and Cohere dialects: text deltas by their bytes. Sans-I/O.

Nearly every event of a stream is a text delta of the block being written, and those
events are byte-identical but for their text: Anthropic's
``{"type":"content_block_delta","index":N,"delta":{"type":"text_delta","text":"…"}}``,
Cohere's ``{"type":"content-delta","index":N,"delta":{"message":{"content":{"text":"…"}}}}``.
Once such an event has been parsed and taken (the dialect then sets :attr:`_pre` to
the bytes before its text, written from the parsed index), an event made of those
bytes, a valid JSON string body and the closing bytes (:attr:`_END`; Anthropic's
padding spaces before the last brace allowed) *is* that event with that text — by
construction, not by inference: so only the text is decoded, with no JSON parse, no
dispatch, no call per event, the footnote detector's offset kept in a local. Anything
else (another event, an escape that is not valid JSON, invalid UTF-8, a raw control
character, a ``[`` the footnote detector must see, a stream with lone surrogates)
goes to the dialect's :meth:`TemplatedState._general`, one event at a time, unchanged.
docs/provider-streams.md ("Dialect speed") has the measurements.
"""

from __future__ import annotations

from typing import Any

from streamcite.core._fields import expect_fields
from streamcite.core.answer import AnswerBuilder
from streamcite.core.dialects.base import StreamState
from streamcite.core.dialects.protocol import Method
from streamcite.core.events import Event, ReasoningEvent, TokenEvent
from streamcite.core.markers import MarkerMode
from streamcite.core.sse import RawEvent
from streamcite.core.template import has_control, json_string, string_body

__all__ = ["NO_TEMPLATE", "TemplatedState", "padded_end"]

expect_fields(TokenEvent, ["type", "index", "text", "display"], "dialects/hotloop.py")
expect_fields(ReasoningEvent, ["type", "index", "text"], "dialects/hotloop.py")
_new = object.__new__
_NO_PADS: frozenset[bytes] = frozenset()  # (a constant: see anthropic._TEXT_PADS)
NO_TEMPLATE = b"\xff"
""":attr:`TemplatedState._pre` before a text delta was parsed: no JSON starts so."""


def padded_end(tail: bytes, end: bytes) -> bool:
    """``tail`` is ``end`` (a string's closing quote and the braces that close its event)
    with spaces or tabs before the last brace, as Anthropic pads its events.

    >>> padded_end(b'"}   }', b'"}}'), padded_end(b'"} x}', b'"}}')
    (True, False)
    """
    return (
        tail[-1:] == b"}"
        and tail.startswith(end[:-1])
        and not tail[len(end) - 1 :][:-1].strip(b" \t")  # (never [k:-1]: see feed_raw)
    )


class TemplatedState(StreamState):
    """A dialect whose text deltas the hot loop of :meth:`feed_raw` takes by their bytes,
    and its reasoning deltas likewise when the dialect wrote their template
    (:attr:`_rpre`, :attr:`_rend`: Anthropic's ``thinking_delta``, Cohere's thinking and
    tool plan)."""

    __slots__ = ("_pre", "_rend", "_rpre")

    _END = b'"}'
    """The bytes after a text delta's text (the dialect's own)."""
    _PADS: frozenset[bytes] = _NO_PADS
    """The commonest paddings of :attr:`_END` (the bytes after its quote) a dialect sends:
    known without a call (any other is checked by :func:`padded_end`)."""

    def __init__(self, builder: AnswerBuilder | None = None, marker_mode: MarkerMode = "keep"):
        super().__init__(builder, marker_mode)
        self._pre = NO_TEMPLATE
        """The bytes before the text of the last text delta taken (the dialect sets it)."""
        self._rpre = NO_TEMPLATE
        """The bytes before the text of the last reasoning delta taken (the dialect sets it)."""
        self._rend = self._END
        """The bytes after that reasoning text."""

    def _general(self, item: RawEvent, out: list[Event]) -> None:
        """One event the template did not take (the dialect's general way)."""
        raise NotImplementedError

    def _typed(
        self,
        table: dict[str, Method],
        ignored: frozenset[str],
        name: bytes,
        obj: dict[str, Any],
        out: list[Event],
    ) -> None:
        """The end of a dialect's :meth:`_general`: ``obj`` to its type's handler (what
        :meth:`event` would call for a typed event, with no other check), an ignored type
        passed, anything else to :meth:`event`."""
        handler = table.get(kind) if (kind := obj.get("type")).__class__ is str else None
        if handler is not None:
            handler(self, obj, out)
        elif kind.__class__ is not str or kind not in ignored:
            self.event(name, obj, out)

    def feed_raw(self, raw: list[RawEvent], out: list[Event]) -> None:  # noqa: C901, RUF100
        """The hot loop: template text and reasoning deltas inline, every other event to
        :meth:`_general` (the detector's offset handed over around it)."""
        if self.done:
            return
        append, text_append, det = out.append, self._raw0.append, self._det0
        keep, offset = det.keep, det.offset
        fast = keep and not det.held and self._surr is None
        pre, plen, rpre = self._pre, len(self._pre), self._rpre
        end = self._END
        elen, pads = len(end), self._PADS
        make, token, length = _new, TokenEvent, len  # locals: no global lookups per event
        for item in raw:
            # A tuple item is a named event (OVERFLOW's data is empty: it never matches).
            # (A slice compared: a fifth cheaper than startswith/endswith, slow to parse args.)
            if item.__class__ is tuple and (data := item[1])[:plen] == pre:
                if data[-elen:] == end:
                    # Quotes that overlap (shorter than both: not JSON) give b"", as CPython
                    # slices it; spelt out, since mypyc's slice that starts past its end is
                    # an error. The length check below then hands the event on.
                    body: bytes | None = data[plen:-elen] if length(data) >= plen + elen else b""
                else:  # padded (as padded_end allows: spaces or tabs), or not the template
                    head, _, tail = data.rpartition(b'"')  # (end has no other quote)
                    ok = len(head) >= plen and (tail in pads or padded_end(b'"' + tail, end))
                    body = head[plen:] if ok else None
                t: str | None
                if body is None:
                    t = None
                elif 0x22 in body or 0x5C in body:  # ints: ten times faster than bytes
                    t = string_body(body)  # escapes (None: not a JSON string body)
                else:
                    try:
                        t = body.decode()
                    except UnicodeDecodeError:
                        t = None  # the general way reports it
                    else:
                        if not t.isprintable() and has_control(t):
                            t = None  # raw control characters: invalid JSON
                if t:
                    if fast and "[" not in t:
                        offset += length(t)
                        ev = make(token)  # built as new_token does, inline
                        ev.type = "token"
                        ev.index = 0
                        ev.text = ev.display = t
                        append(ev)
                        text_append(t)
                        continue
                    det.offset = offset
                    self.token(0, t, out)
                    offset = det.offset
                    fast = keep and not det.held and self._surr is None
                    continue
                if t is not None and length(data) >= plen + elen:
                    continue  # an empty text (shorter: the quotes overlap, not JSON)
            elif (
                item.__class__ is tuple
                and item[1][: len(rpre)] == rpre
                and self._reasoned(item[1], out)
            ):
                continue
            det.offset = offset
            self._general(item, out)
            if self.done:
                return
            offset = det.offset
            fast = keep and not det.held and self._surr is None
            pre, plen, rpre = self._pre, len(self._pre), self._rpre
        det.offset = offset

    def _reasoned(self, data: bytes, out: list[Event]) -> bool:
        """``data`` is the reasoning template's event: its text taken (True), or not."""
        p, e = len(self._rpre), self._rend
        if len(data) < p + len(e):
            return False  # (shorter: the quotes overlap, not JSON)
        if data[-len(e) :] == e:
            body = data[p : -len(e)]
        else:  # padded, or not the template
            q = data.rfind(0x22)
            if q < p or not padded_end(data[q:], e):
                return False
            body = data[p:q]
        t = json_string(body)
        if t is None:
            return False
        if t and self._surr is None:
            ev = _new(ReasoningEvent)  # built as StreamState.reasoning does, inline
            ev.type = "reasoning"
            ev.index = 0
            ev.text = t
            out.append(ev)
            self.builder.reasoning_parts.append(t)
        elif t:
            self.reasoning(0, t, out)
        return True
