"""The per-chunk hot loop of a keep-mode stream's choice 0. Sans-I/O.

Nearly every chunk of a stream is a content-only delta of choice 0 in the envelope
the :class:`~streamcite.core.template.ContentTemplate` has proven: such a chunk
costs two slice comparisons, one decode and one event, with no JSON parse, no
attribute lookup beyond locals and no call into the interpreter. Anything else
(the first chunks, finish, usage, citations, other choices, errors, other SSE
events) goes to :meth:`ChunkInterpreter._chunk`, the general path, unchanged.
"""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING

from streamcite.core.events import Event, TokenEvent
from streamcite.core.template import has_control, string_body

if TYPE_CHECKING:
    from streamcite.core.chunks import ChunkInterpreter
    from streamcite.core.sse import RawEvent

__all__ = ["feed_keep_mode"]

_new = object.__new__
_QUOTE = 0x22  # ints, not b'"': bytes membership with a bytes operand first tries
_BACKSLASH = 0x5C  # int() of it, raising and catching a TypeError (ten times slower)

# Tokens are built field by field below (no Python __init__ call per token): this
# holds the loop to TokenEvent's fields, at import, if they ever change.
if [f.name for f in fields(TokenEvent)] != ["type", "index", "text", "display"]:
    raise ImportError("fastpath.py builds TokenEvent by hand: update it to the new fields")


def feed_keep_mode(  # noqa: C901, RUF100 - the per-chunk loop, inlined: every call costs
    ip: ChunkInterpreter, raw: list[RawEvent], out: list[Event]
) -> None:
    """Interpret one read's raw events; choice 0's detector must exist (a token was seen)."""
    det = ip._detectors[0]
    offset, held = det.offset, det.held
    append = out.append
    text_append = ip._raw0.append
    token = TokenEvent
    tpl = ip._tpl
    on = tpl.proven and tpl.on
    pre, suf, plen, slen = tpl.prefix, tpl.suffix, tpl.plen, tpl.slen
    ends = plen + slen
    content: str | None
    for item in raw:
        content = None
        if (
            on
            and type(item) is bytes
            and len(item) >= ends
            and item[:plen] == pre
            and item[len(item) - slen :] == suf
        ):
            sl = item[plen : len(item) - slen]
            if _QUOTE in sl or _BACKSLASH in sl:
                content = string_body(sl)  # escapes (or not a string body: None)
            else:
                try:
                    content = sl.decode()
                except UnicodeDecodeError:
                    pass  # the full path reports it
                else:
                    if not content.isprintable() and has_control(content):
                        content = None  # raw control characters: invalid JSON
        if content is None:
            det.offset = offset
            content = ip._chunk(item, out)
            if ip.done:
                return  # [DONE]: nothing after it in this read counts
            offset, held = det.offset, det.held
            on = tpl.proven and tpl.on
            pre, suf, plen, slen = tpl.prefix, tpl.suffix, tpl.plen, tpl.slen
            ends = plen + slen
            if content is None:
                continue
        if content:
            ev = _new(token)
            ev.type = "token"
            ev.index = 0
            ev.text = content
            ev.display = content
            append(ev)
            text_append(content)
            if held or "[" in content:
                det.offset = offset
                refs = det.feed(content)[1]
                offset, held = det.offset, det.held
                if refs:
                    ip._add_refs(0, refs, out)
            else:
                offset += len(content)
    det.offset = offset
