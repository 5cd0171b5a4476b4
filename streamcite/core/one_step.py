"""The chat chunks taken in one step: choice 0's delta without content text. Sans-I/O.

A tool-call or refusal stream is made of chunks whose only choice is choice 0, with no
finish reason and nothing at the chunk's level that the general way reads (citations,
usage, an error): its first chunk (``role`` and a null ``content``), each call's start
(``id``, ``name``), the argument fragments, the refusal texts. For such a chunk the
general way (``ChunkInterpreter._interpret``) comes down to the meta of a first chunk
and :func:`~streamcite.core.deltas.interpret_delta` of choice 0: :func:`take` does
exactly that, without the general way's walk over every field. Two shapes, nearly every
chunk of such streams, are made here outright, as ``interpret_delta`` makes them: one
refusal text, one argument fragment of a call already started (their envelopes are
then learnt: :mod:`streamcite.core.delta_fastpath`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from streamcite.core.deltas import interpret_delta
from streamcite.core.events import Event, RefusalEvent, ToolCallEvent

if TYPE_CHECKING:
    from streamcite.core.chat_state import ChatState

__all__ = ["LEARNABLE", "NOT_TAKEN", "TAKEN", "take"]

_ROLE_CONTENT = frozenset({"role", "content"})

NOT_TAKEN = 0
"""The chunk is not of the shape: the general way takes it."""
TAKEN = 1
"""Taken here, as the general way takes it."""
LEARNABLE = 2
"""Taken here, and its shape is one a :class:`~streamcite.core.template.DeltaTemplate`
learns: one ``refusal`` string, or one ``arguments`` fragment of a call already started,
with the stream's meta seen."""


def take(ip: ChatState, obj: Any, out: list[Event]) -> int:  # noqa: C901, RUF100
    """Take ``obj`` (a parsed chunk) in one step if it is of the shape (see the module)."""
    if obj.__class__ is not dict:
        return NOT_TAKEN
    choices = obj.get("choices")
    if choices.__class__ is not list or len(choices) != 1:
        return NOT_TAKEN
    ch = choices[0]
    if ch.__class__ is not dict:
        return NOT_TAKEN
    delta = ch.get("delta")
    if (
        delta.__class__ is not dict
        or ((content := delta.get("content")).__class__ is str and content)  # a token
        or ch.get("finish_reason")
        or (idx := ch.get("index", 0)).__class__ is not int
        or idx
        or "usage" in ch
        or "citations" in obj
        or "search_results" in obj
        or "error" in obj
        or "x_groq" in obj
        or obj.get("usage")
        or obj.get("object") == "error"
    ):
        return NOT_TAKEN
    b = ip.builder
    if b.bounds.max_choices < 1:
        return NOT_TAKEN  # choice 0 is beyond the cap: the general way reports it
    if not ip._meta_seen:
        ip._meta(obj, out)  # as the general way reads a first chunk, before its choices
        if not ip._meta_seen:
            if delta:
                interpret_delta(ip, 0, delta, out)
            return TAKEN
    if len(delta) == 1:
        refusal = delta.get("refusal")
        if refusal.__class__ is str:
            if refusal:
                out.append(RefusalEvent(0, refusal))
                b.refusal_parts.append(refusal)
            return LEARNABLE
        if _fragment(ip, delta.get("tool_calls"), out):
            return LEARNABLE
    if delta and not (delta.keys() <= _ROLE_CONTENT and (content is None or content == "")):
        interpret_delta(ip, 0, delta, out)  # (a role and an empty content: nothing to read)
    return TAKEN


def _fragment(ip: ChatState, calls: Any, out: list[Event]) -> bool:
    """One argument fragment of a call of choice 0 already started
    (``[{"index": N, "function": {"arguments": "…"}}]``): its event made (True)."""
    if calls.__class__ is not list or len(calls) != 1:
        return False
    call = calls[0]
    if call.__class__ is not dict or len(call) != 2:
        return False
    tidx, fn = call.get("index"), call.get("function")
    if tidx.__class__ is not int or fn.__class__ is not dict or len(fn) != 1:
        return False
    args = fn.get("arguments")
    placer = ip._tools.get(0)
    b = ip.builder
    if (
        args.__class__ is not str
        or placer is None
        or not 0 <= tidx < placer.limit
        or tidx not in b.tool_calls
    ):
        return False
    placer.place(tidx, None, None)  # an index without id or name: within the limit
    ev = ToolCallEvent(0, tidx, None, None, args)
    out.append(ev)
    b.tool_call(ev)
    return True
