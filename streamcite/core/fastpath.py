"""The per-chunk hot loop of a keep-mode stream's choice 0. Sans-I/O.

Nearly every chunk of a stream is a content-only delta of choice 0 in the envelope
the :class:`~streamcite.core.template.ContentTemplate` has proven: such a chunk
costs two slice comparisons, one decode and one event, with no JSON parse, no
attribute lookup beyond locals and no call into the interpreter. Anything else
(the first chunks, finish, usage, citations, other choices, errors, other SSE
events) goes to :meth:`ChunkInterpreter._chunk`, the general path, unchanged; so
does every chunk of a stream whose envelope varies (the template is off).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields
from typing import TYPE_CHECKING

from streamcite.core.events import CitationRefEvent, Event, TokenEvent
from streamcite.core.template import has_control, string_body

if TYPE_CHECKING:
    from streamcite.core.chunks import ChunkInterpreter
    from streamcite.core.sse import RawEvent

__all__ = ["feed_keep_mode"]

_new = object.__new__
# Byte membership is tested with ints (0x22 for '"', 0x5C for a backslash): with a
# bytes operand, ``b'"' in s`` first tries int() of it, raising and catching a
# TypeError, which is ten times slower.

# Tokens (and, in chunks.py, citation refs) are built field by field, with no Python
# __init__ call per event: this holds that code to the events' fields, at import.
if [f.name for f in fields(TokenEvent)] != ["type", "index", "text", "display"] or [
    f.name for f in fields(CitationRefEvent)
] != ["type", "index", "number", "document_index", "offset"]:
    raise ImportError("events are built by hand in fastpath.py and chunks.py: update them")


def feed_keep_mode(ip: ChunkInterpreter, raw: list[RawEvent], out: list[Event]) -> None:
    """Interpret one read's raw events; choice 0's detector must exist (a token was seen).

    Runs of template chunks go through :func:`_template_run`; each chunk it does
    not take goes to the general path, and the run resumes after it.
    """
    tpl = ip._tpl
    items = iter(raw)
    while True:
        item = _template_run(ip, items, out) if tpl.proven and tpl.on else next(items, None)
        if item is None:
            return
        ip._chunk(item, out)
        if ip.done:
            return  # [DONE]: nothing after it in this read counts


def _template_run(  # noqa: C901, RUF100 - the per-chunk loop, inlined: every call costs
    ip: ChunkInterpreter, items: Iterator[RawEvent], out: list[Event]
) -> RawEvent | None:
    """Emit the tokens of ``items`` while they fit the proven template; the first
    item that does not (None when all did)."""
    det = ip._detectors[0]
    offset, held = det.offset, det.held
    append = out.append
    text_append = ip._raw0.append
    token = TokenEvent
    new = _new
    tpl = ip._tpl
    pre, suf, plen, slen = tpl.prefix, tpl.suffix, tpl.plen, tpl.slen
    ends = plen + slen
    stop: RawEvent | None = None
    content: str | None
    for item in items:
        # A tuple item (an SSE event with fields) is 4 long: never ``>= ends``.
        if not ((m := len(item)) >= ends and item[:plen] == pre and item[m - slen :] == suf):
            stop = item
            break
        sl: bytes = item[plen : m - slen]  # type: ignore[assignment]
        if 0x22 in sl or 0x5C in sl:  # a quote or a backslash (ints: see above)
            content = string_body(sl)  # escapes (or not a string body: None)
            if content is None:
                stop = item
                break
        else:
            try:
                content = sl.decode()
            except UnicodeDecodeError:
                stop = item  # the full path reports it
                break
            if not content.isprintable() and has_control(content):
                stop = item  # raw control characters: invalid JSON
                break
        if not content:
            continue
        ev = new(token)
        ev.type = "token"
        ev.index = 0
        ev.text = content
        ev.display = content
        append(ev)
        text_append(content)
        if not held and "[" not in content:
            offset += len(content)
            continue
        # Keep mode's two usual marker steps, inlined (the detector does the rest):
        n = len(content)
        refs = None
        if held and det.held_refs is not None and content[0] != "(" and "[" not in content:
            # The held "[n]" is confirmed by a next character that is not "(".
            refs, det.held_refs = det.held_refs, None
            det.held = held = ""
            offset += n
        elif (
            not held
            and content[-1] == "]"
            and 0 < n - (p := content.find("[")) - 2 <= 4
            and (num := content[p + 1 : n - 1]).isdigit()
            and num.isascii()
            and num[0] != "0"
        ):
            # "… [3]": one complete marker ends the token; it awaits its next char.
            det.held = held = content[p:]
            det.held_start = offset + p
            det.held_refs = [(int(num), offset + p)]
            offset += n
        else:
            det.offset = offset
            refs = det.feed(content)[1]
            offset, held = det.offset, det.held
        if refs:
            ip._add_refs(0, refs, out)
    det.offset = offset
    return stop
