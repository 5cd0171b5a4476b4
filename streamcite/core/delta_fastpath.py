"""The loop of a refusal or tool-call stream's chunks in their learnt envelope. Sans-I/O.

A tool-call stream is made of chunks that differ only by one argument fragment
(``{"index": N, "function": {"arguments": "…"}}``), a refusal stream of chunks that
differ only by their ``refusal`` text. Once one such chunk was taken in one step
(:mod:`streamcite.core.one_step`, after a full parse), its envelope is learnt
(:class:`~streamcite.core.template.DeltaTemplate`), and :func:`delta_run` takes a
chunk of exactly those bytes with a valid JSON string body between them as that
same shape, without a parse: its event and answer part made as ``one_step`` makes
them. Strict as the content template is (no unescaped quote, valid escapes, no raw
control character, valid UTF-8): the chunk's JSON tokens are the learnt chunk's but
for that one string. The state ``one_step`` reads besides the chunk only moves one
way (meta seen, choice 0's tool placer created, its call started): what it took
once, it takes again. Anything else goes the general way, unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from streamcite.core._fields import expect_fields
from streamcite.core.events import Event, RefusalEvent, ToolCallEvent
from streamcite.core.template import REFUSAL, DeltaTemplate, json_string

if TYPE_CHECKING:
    from streamcite.core.chat_state import ChatState
    from streamcite.core.sse import RawEvent

__all__ = ["delta_run"]

_new = object.__new__

# Built field by field, as chunks.py's tokens are (no __init__ call per event).
expect_fields(RefusalEvent, ["type", "index", "text"], "delta_fastpath.py")
expect_fields(
    ToolCallEvent, ["type", "index", "tool_index", "id", "name", "arguments"], "delta_fastpath.py"
)


def delta_run(ip: ChatState, items: Iterator[RawEvent], out: list[Event]) -> RawEvent | None:
    """Take the chunks of ``items`` that fit the template, as ``one_step`` takes
    them; return the first that does not (None: all were taken)."""
    t = ip._dtpl
    n0 = len(out)
    if t.tidx == REFUSAL:
        stop = _refusal_run(t, ip.builder.refusal_parts.append, items, out)
    else:
        stop = _arguments_run(t, ip.builder.tool_call, items, out)
        if len(out) > n0:
            # As each fragment places its call (an index without id or name: within
            # the limit, ``one_step`` checked); the same call each time, so once.
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
        text = json_string(item[plen:-slen])  # type: ignore[arg-type]
        if text is None:
            return item  # the general way reports it
        if text:  # an empty refusal delta: nothing to say (as one_step)
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
        text = json_string(item[plen:-slen])  # type: ignore[arg-type]
        if text is None:
            return item  # the general way reports it
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
