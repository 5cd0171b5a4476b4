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
from streamcite.core.markers import TAIL_MARKERS, FootnoteDetector
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


def _template_run(  # the per-chunk loop, inlined: every call costs
    ip: ChunkInterpreter, items: Iterator[RawEvent], out: list[Event]
) -> RawEvent | None:
    """Emit the tokens of ``items`` while they fit the proven template; the first
    item that does not (None when all did)."""
    det = ip._detectors[0]
    offset, held, hrefs = det.offset, det.held, det.held_refs
    append = out.append
    keep_ref = ip._refs.append
    ref_type = CitationRefEvent
    text_append = ip._raw0.append
    token = TokenEvent
    new = _new
    tails = TAIL_MARKERS
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
        # Keep mode's two usual marker steps, inlined, on locals (else the detector):
        if held and hrefs is not None and content[0] != "(" and "[" not in content:
            # The held "[n]" is confirmed by a next character that is not "(".
            refs, hrefs, held = hrefs, None, ""
            offset += len(content)
        elif not held and (number := tails.get(content[(p := content.find("[")) :])) is not None:
            # "… [3]": one complete marker ends the token; it awaits its next char.
            held, hrefs = content[p:], [(number, offset + p)]
            offset += len(content)
            continue
        else:
            _sync(det, offset, held, hrefs)
            found = det.feed(content)[1]
            offset, held, hrefs = det.offset, det.held, det.held_refs
            if not found:
                continue
            refs = found
        for number, at in refs:
            ref = new(ref_type)  # as chunks.py's _add_refs, inlined
            ref.type = "citation_ref"
            ref.index = 0
            ref.number = number
            ref.document_index = number - 1
            ref.offset = at
            append(ref)
            keep_ref(ref)
    _sync(det, offset, held, hrefs)
    return stop


def _sync(
    det: FootnoteDetector, offset: int, held: str, hrefs: list[tuple[int, int]] | None
) -> None:
    """Hand the loop's local detector state back to the detector."""
    det.offset, det.held, det.held_refs = offset, held, hrefs
    if hrefs is not None:
        det.held_start = hrefs[0][1]  # a held complete marker starts at its ref's offset
