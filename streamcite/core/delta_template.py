"""Byte template of a refusal or tool-argument chunk of choice 0. Sans-I/O.

A tool-call stream is made of chunks that differ only by one argument fragment
(``{"index": N, "function": {"arguments": "…"}}``), a refusal stream of chunks that
differ only by their ``refusal`` text. The chunk interpreter's one-step way
(``ChunkInterpreter._rare_delta``) takes such a chunk after a full parse; once it
has, :meth:`DeltaTemplate.learn` locates that string in the chunk's bytes and keeps
the bytes around it, and :func:`delta_run` then takes a chunk of exactly those bytes
with a valid JSON string body between them as that same shape, without a parse.

Strict, as :mod:`streamcite.core.template` is: the slice must be a JSON string body
by itself (no unescaped quote, valid escapes, no raw control character, valid
UTF-8), so the chunk's JSON tokens are the learnt chunk's but for that one string.
The string's place is proven at learning, not guessed from a key: the learnt chunk
with another body in that place must parse to the same object but for that field
(``refusal``, or the ``arguments`` of its one call). The state ``_rare_delta`` reads
besides the chunk only moves one way (meta seen, choice 0's tool placer created,
its call started): what it took once, it takes again. Anything else goes the
general way, unchanged; a stream whose envelope varies chunk to chunk stops
learning after a few tries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import orjson

from streamcite.core._fields import expect_fields
from streamcite.core.events import Event, RefusalEvent, ToolCallEvent
from streamcite.core.template import has_control, string_body, string_end

if TYPE_CHECKING:
    from streamcite.core.chat_state import ChatState
    from streamcite.core.sse import RawEvent

__all__ = ["DeltaTemplate", "delta_run"]

_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError
_new = object.__new__
_REFUSAL_KEY = b'"refusal":"'
_ARGS_KEY = b'"arguments":"'
_IDLE_LEARNS = 8
"""Learnings beyond the hits after which a stream's envelope is taken as varying."""
REFUSAL = -1
""":attr:`DeltaTemplate.tidx` of a refusal template (else: the call's ``index``)."""

# Built field by field, as chunks.py's tokens are (no __init__ call per event).
expect_fields(RefusalEvent, ["type", "index", "text"], "delta_template.py")
expect_fields(
    ToolCallEvent, ["type", "index", "tool_index", "id", "name", "arguments"], "delta_template.py"
)


class DeltaTemplate:
    """The envelope of the last refusal or tool-argument chunk taken in one step."""

    __slots__ = ("hits", "learns", "on", "plen", "prefix", "slen", "suffix", "tidx")

    def __init__(self) -> None:
        self.prefix = b""
        """The bytes up to the string's body (empty: no template)."""
        self.suffix = b""
        """The bytes from the string's closing quote."""
        self.plen = 0
        self.slen = 0
        self.tidx = REFUSAL
        """The call's ``index`` of a tool-argument template, :data:`REFUSAL` for a refusal."""
        self.on = True
        self.hits = 0
        self.learns = 0

    def learn(self, payload: bytes, obj: dict[str, Any]) -> None:
        """``obj`` (parsed from ``payload``) was just taken by ``_rare_delta``: a
        ``refusal`` delta or one call's ``arguments`` fragment (its shape checked there)."""
        self.prefix = b""
        self.learns += 1
        if self.learns > self.hits + _IDLE_LEARNS:
            self.on = False  # the envelope varies chunk to chunk: stop paying for this
            return
        delta = obj["choices"][0]["delta"]
        if "refusal" in delta:
            holder, field, key, tidx = delta, "refusal", _REFUSAL_KEY, REFUSAL
        else:
            call = delta["tool_calls"][0]
            holder, field, key, tidx = call["function"], "arguments", _ARGS_KEY, call["index"]
        if payload.count(key) != 1:
            return
        start = payload.index(key) + len(key)
        end = string_end(payload, start)
        value = holder[field]
        if end < 0 or string_body(payload[start:end]) != value:
            return
        # The proof that this string is that field (not a look-alike elsewhere): with
        # another body there, the chunk parses to the same object but for the field.
        holder[field] = value + "x"
        try:
            same = _loads(payload[:end] + b"x" + payload[end:]) == obj
        except _JSONDecodeError:
            same = False
        holder[field] = value
        if same:
            self.prefix, self.suffix = payload[:start], payload[end:]
            self.plen, self.slen = start, len(payload) - end
            self.tidx = tidx


def delta_run(ip: ChatState, items: Iterator[RawEvent], out: list[Event]) -> RawEvent | None:
    """Take the chunks of ``items`` that fit the template, as ``_rare_delta`` takes
    them; return the first that does not (None: all were taken)."""
    t = ip._dtpl
    n0 = len(out)
    if t.tidx == REFUSAL:
        stop = _refusal_run(t, ip.builder.refusal_parts.append, items, out)
    else:
        stop = _arguments_run(t, ip.builder.tool_call, items, out)
        if len(out) > n0:
            # As each fragment places its call (an index without id or name: within
            # the limit, ``_rare_delta`` checked); the same call each time, so once.
            ip._tools[0].place(t.tidx, None, None)
    t.hits += len(out) - n0
    return stop


def _refusal_run(
    t: DeltaTemplate, keep: Callable[[str], None], items: Iterator[RawEvent], out: list[Event]
) -> RawEvent | None:
    pre, suf, plen, slen = t.prefix, t.suffix, t.plen, t.slen
    ends, append, new = plen + slen, out.append, _new
    for item in items:
        # A tuple item (an SSE event with fields) is 4 long: never ``>= ends``.
        if not (len(item) >= ends and item[:plen] == pre and item[-slen:] == suf):
            return item
        sl: bytes = item[plen:-slen]  # type: ignore[assignment]
        if 0x22 in sl or 0x5C in sl:  # a quote or a backslash (ints: see fastpath.py)
            text = string_body(sl)  # escapes (or not a string body: None)
            if text is None:
                return item
        else:
            try:
                text = sl.decode()
            except UnicodeDecodeError:
                return item  # the general way reports it
            if not text.isprintable() and has_control(text):
                return item  # raw control characters: invalid JSON
        if text:  # an empty refusal delta: nothing to say (as _rare_delta)
            ev = new(RefusalEvent)
            ev.type = "refusal"
            ev.index = 0
            ev.text = text
            append(ev)
            keep(text)
    return None


def _arguments_run(
    t: DeltaTemplate,
    fold: Callable[[ToolCallEvent], None],
    items: Iterator[RawEvent],
    out: list[Event],
) -> RawEvent | None:
    pre, suf, plen, slen, tidx = t.prefix, t.suffix, t.plen, t.slen, t.tidx
    ends, append, new = plen + slen, out.append, _new
    for item in items:
        if not (len(item) >= ends and item[:plen] == pre and item[-slen:] == suf):
            return item
        sl: bytes = item[plen:-slen]  # type: ignore[assignment]
        if 0x22 in sl or 0x5C in sl:  # a quote or a backslash (ints: see fastpath.py)
            text = string_body(sl)  # escapes (or not a string body: None)
            if text is None:
                return item
        else:
            try:
                text = sl.decode()
            except UnicodeDecodeError:
                return item  # the general way reports it
            if not text.isprintable() and has_control(text):
                return item  # raw control characters: invalid JSON
        ev = new(ToolCallEvent)
        ev.type = "tool_call"
        ev.index = 0
        ev.tool_index = tidx
        ev.id = None
        ev.name = None
        ev.arguments = text
        append(ev)
        fold(ev)
    return None
