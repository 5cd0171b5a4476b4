"""The Cohere dialect's hot loop: every delta kind by its bytes, and the ignored ends. Sans-I/O.

A Cohere stream is almost entirely deltas that are byte-identical but for their string:
text and thinking (``content-delta``), the tool plan (``tool-plan-delta``) and a tool
call's argument fragments (``tool-call-delta``), each
``{"type":"…","index":N,"delta":{"message":{…:"…"}}}`` with the string last. As in
:mod:`.hotloop`, once such an event has been parsed and taken, the dialect writes the
bytes before its string from the parsed values (:attr:`CohereLoop._pre`, ``_rpre``,
``_apre``): an event made of those bytes, a valid JSON string body and the closing
bytes *is* that delta with that string, so only the string is decoded (no JSON parse,
no dispatch, no call per event). The argument template is written only for a call the
answer holds (within the tool-call caps), so its fragments are that call's.

``content-end``, ``tool-call-end`` and ``citation-end`` are ignored whatever they hold
(the stream says nothing with them that the starts and deltas did not): one of their
exact shapes (:data:`_ENDS`) is passed without a parse. Anything else (another event,
an escape that is not valid JSON, invalid UTF-8, a raw control character, a ``[`` the
footnote detector must see, a stream with lone surrogates) goes to the dialect's
:meth:`~.hotloop.TemplatedState._general`, one event at a time, unchanged.
"""

from __future__ import annotations

from streamcite.core._fields import expect_fields
from streamcite.core.answer import AnswerBuilder
from streamcite.core.dialects.hotloop import NO_TEMPLATE, TemplatedState
from streamcite.core.events import Event, ReasoningEvent, TokenEvent, ToolCallEvent
from streamcite.core.markers import MarkerMode
from streamcite.core.sse import RawEvent
from streamcite.core.template import has_control, json_string, string_body

__all__ = ["ARGS_END", "CohereLoop", "args_prefix", "json_string"]

expect_fields(TokenEvent, ["type", "index", "text", "display"], "dialects/_cohere_loop.py")
expect_fields(ReasoningEvent, ["type", "index", "text"], "dialects/_cohere_loop.py")
expect_fields(
    ToolCallEvent,
    ["type", "index", "tool_index", "id", "name", "arguments"],
    "dialects/_cohere_loop.py",
)
_new = object.__new__

_ARGS_HEAD = b'{"type":"tool-call-delta","index":'
_ARGS_MID = b',"delta":{"message":{"tool_calls":{"function":{"arguments":"'
ARGS_END = b'"}}}}}'
"""The bytes after an argument fragment (``function``, ``tool_calls``, ``message``,
``delta`` and the event closed)."""
_ENDS = frozenset(
    b'{"type":"%s","index":%d}' % (kind, i)
    for kind in (b"content-end", b"tool-call-end", b"citation-end")
    for i in range(64)
)
"""The ignored end events as Cohere sends them (a higher index: parsed, and ignored)."""


def args_prefix(index: int) -> bytes:
    """The bytes before the arguments of a ``tool-call-delta`` of call ``index``.

    >>> args_prefix(1)
    b'{"type":"tool-call-delta","index":1,"delta":{"message":{"tool_calls":{"function":{"arguments":"'
    """
    return b"%s%d%s" % (_ARGS_HEAD, index, _ARGS_MID)


class CohereLoop(TemplatedState):
    """:class:`~.hotloop.TemplatedState` with Cohere's argument fragments and ignored
    ends taken in the loop too, and its reasoning deltas inline."""

    __slots__ = ("_apre", "_atool")

    def __init__(self, builder: AnswerBuilder | None = None, marker_mode: MarkerMode = "keep"):
        super().__init__(builder, marker_mode)
        self._apre = NO_TEMPLATE
        """The bytes before the arguments of the last tool call's fragment taken."""
        self._atool = 0
        """That call's tool index in the answer."""

    def feed_raw(self, raw: list[RawEvent], out: list[Event]) -> None:  # noqa: C901, RUF100
        """The hot loop: template deltas inline, ignored ends passed, every other event to
        :meth:`_general` (the detector's offset handed over around it)."""
        if self.done:
            return
        append, text_append, det = out.append, self._raw0.append, self._det0
        reasoning_append = self.builder.reasoning_parts.append
        keep, offset = det.keep, det.offset
        plain = self._surr is None
        fast = keep and not det.held and plain
        pre, rpre, apre, rend = self._pre, self._rpre, self._apre, self._rend
        end, ends = self._END, _ENDS
        make, length = _new, len  # locals: no global lookups per event
        plen, elen, rplen, aplen = length(pre), length(end), length(rpre), length(apre)
        t: str | None
        for item in raw:
            # A tuple item is a named event (OVERFLOW's data is empty: it never matches).
            if item.__class__ is not tuple:
                pass
            elif (data := item[1])[:plen] == pre:
                # A text delta: the commonest event, so the shortest way (slices: hotloop.py).
                if data[-elen:] == end:  # (quotes that overlap give b"": hotloop.py)
                    body = data[plen:-elen] if length(data) >= plen + elen else b""
                    if 0x22 in body or 0x5C in body:  # ints: ten times faster than bytes
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
                            ev = make(TokenEvent)  # built as new_token does, inline
                            ev.type = "token"
                            ev.index = 0
                            ev.text = ev.display = t
                            append(ev)
                            text_append(t)
                            continue
                        det.offset = offset
                        self.token(0, t, out)
                        offset = det.offset
                        fast = keep and not det.held and plain
                        continue
                    if t is not None and length(data) >= plen + elen:
                        continue  # an empty text (shorter: the quotes overlap, not JSON)
            elif data in ends:
                continue  # ignored, whatever the state
            elif plain and ((reason := data[:rplen] == rpre) or data[:aplen] == apre):
                # A reasoning delta or an argument fragment (lone surrogates: the general way).
                p, e = (rplen, rend) if reason else (aplen, ARGS_END)
                if data[-length(e) :] == e:  # (n < p: the quotes overlap, b"" as above)
                    t = json_string(data[p:n] if (n := length(data) - length(e)) >= p else b"")
                    if t:
                        if reason:
                            rev = make(ReasoningEvent)  # built as StreamState.reasoning does
                            rev.type = "reasoning"
                            rev.index = 0
                            rev.text = t
                            append(rev)
                            reasoning_append(t)
                        else:
                            self._fragment(t, out)
                        continue
                    if t is not None and n >= p:
                        continue  # an empty delta: nothing
            det.offset = offset
            self._general(item, out)
            if self.done:
                return
            offset = det.offset
            plain = self._surr is None
            fast = keep and not det.held and plain
            pre, rpre, apre, rend = self._pre, self._rpre, self._apre, self._rend
            plen, rplen, aplen = length(pre), length(rpre), length(apre)
        det.offset = offset

    def _fragment(self, arguments: str, out: list[Event]) -> None:
        """An argument fragment of the template's call, as :meth:`StreamState.tool` takes
        a fragment of a call the answer holds."""
        ev = _new(ToolCallEvent)  # built as StreamState.tool does, inline
        ev.type = "tool_call"
        ev.index = 0
        ev.tool_index = self._atool
        ev.id = ev.name = None
        ev.arguments = arguments
        out.append(ev)
        self.builder.tool_call(ev)
