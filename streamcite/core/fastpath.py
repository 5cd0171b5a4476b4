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
from itertools import chain
from typing import TYPE_CHECKING, cast

from streamcite.core._fields import expect_fields
from streamcite.core.chunk_state import ChunkState
from streamcite.core.delta_fastpath import delta_run
from streamcite.core.events import CitationRefEvent, Event, TokenEvent
from streamcite.core.markers import TAIL_MARKERS, FootnoteDetector
from streamcite.core.refs import MAX_PENDING
from streamcite.core.template import has_control, string_body

if TYPE_CHECKING:
    from streamcite.core.chat_state import ChatState
    from streamcite.core.sse import RawEvent

__all__ = ["feed_keep_mode"]

_TAIL_NUMBERS = {marker[1:]: number for marker, number in TAIL_MARKERS.items()}
"""``"3]"`` → 3: what follows the last ``[`` of a token that ends in ``[1]``…``[199]``."""

_new = object.__new__
# The loop is written for both builds: direct calls (``len``, ``out.append``), which the
# compiled build makes C calls (local aliases of bound methods it would call by name);
# the interpreter's attributes read through its own class (``ChunkState``), not the
# ``ChatState`` protocol (read by name compiled); an item known to be ``bytes`` before
# it is sliced (a C slice compiled, not a slice object).
# Byte membership is tested with ints (0x22 for '"', 0x5C for a backslash): with a
# bytes operand, ``b'"' in s`` first tries int() of it, raising and catching a
# TypeError, which is ten times slower.

# Tokens (and, in chunks.py, citation refs) are built field by field, with no Python
# __init__ call per event: this holds that code to the events' fields, at import.
expect_fields(TokenEvent, ["type", "index", "text", "display"], "fastpath.py")
expect_fields(
    CitationRefEvent,
    ["type", "index", "number", "document_index", "offset"],
    "fastpath.py and chunks.py",
)


def feed_keep_mode(ip: ChatState, raw: list[RawEvent], out: list[Event]) -> None:
    """Interpret one read's raw events; choice 0's detector must exist (a token was seen).

    Runs of template chunks go through :func:`_template_run`, runs of refusal or
    tool-argument chunks in their learnt envelope through
    :func:`~streamcite.core.delta_fastpath.delta_run`; each chunk neither takes goes
    to the general path, and the run resumes after it.
    """
    # The interpreter as its own class (it is one: ChatState's only implementation), so
    # that the compiled build reads its attributes directly, not by name.
    st = cast("ChunkState", ip)
    tpl = st._tpl
    items = iter(raw)
    while True:
        item = _template_run(ip, st, items, out) if tpl.proven and tpl.on else next(items, None)
        if item is not None and st._dtpl.prefix:
            item = delta_run(ip, chain((item,), items), out)
        if item is None:
            break
        ip._chunk(item, out)
        if st.done:
            break  # [DONE]: nothing after it in this read counts
    refs = st._refs
    if len(refs.pending_numbers) > MAX_PENDING:
        refs.flush()  # bounded even without a parser compacting the builder


def _template_run(  # noqa: C901, RUF100  (the per-chunk loop, inlined: every call costs)
    ip: ChatState, st: ChunkState, items: Iterator[RawEvent], out: list[Event]
) -> RawEvent | None:
    """Emit the tokens of ``items`` that fit the template; the first that does not.
    ``st`` is ``ip`` as its own class (see the note on both builds above)."""
    det, raw0, tpl = st._detectors[0], st._raw0, st._tpl
    offset, held, hnum, hat, hrefs = _load(det)
    pre, suf, plen, slen = tpl.prefix, tpl.suffix, tpl.plen, tpl.slen
    ends = plen + slen
    stop: RawEvent | None = None
    for item in items:
        if (  # (an SSE event with fields, a tuple, never fits)
            not isinstance(item, bytes)
            or (m := len(item)) < ends
            or (item[:plen] != pre or item[m - slen :] != suf)
        ):
            stop = item
            break
        sl = item[plen : m - slen]
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
        ev = _new(TokenEvent)  # field by field: a tuple assignment costs more
        ev.type = "token"
        ev.index = 0
        ev.text = content
        ev.display = content
        out.append(ev)
        raw0.append(content)
        # Keep mode's usual marker steps, inlined on locals (anything else: the detector).
        # hnum/hat: a complete "[n]" held at offset hat, awaiting its next character.
        if held:
            if not hnum or content[0] == "(":
                offset, held, hnum, hat, hrefs = _detect(
                    ip, det, content, offset, held, hnum, hat, hrefs, out
                )
                continue
            # The held "[n]" is confirmed by a next character that is not "(".
            ref = _new(CitationRefEvent)  # as chunks.py's _add_refs, inlined
            ref.type = "citation_ref"
            ref.index = 0
            ref.number = hnum
            ref.document_index = hnum - 1
            ref.offset = hat
            out.append(ref)
            refs = st._refs  # as RefStore.add keeps it (choice 0, numbers 1-199)
            refs.pending_numbers.append(hnum)
            refs.pending_offsets.append(hat)
            held, hnum = "", 0
            if "[" not in content:
                offset += len(content)
                continue
        elif "[" not in content:
            offset += len(content)
            continue
        # "… [3]": one complete marker ends the token and is its only "[": hold it
        # (``held`` is then "3]"; _sync gives the detector the marker's own text).
        head, _, rest = content.rpartition("[")
        if (number := _TAIL_NUMBERS.get(rest)) is not None and "[" not in head:
            held, hnum, hat = rest, number, offset + len(head)
            offset += len(content)
            continue
        offset, held, hnum, hat, hrefs = _detect(
            ip, det, content, offset, held, hnum, hat, hrefs, out
        )
    _sync(det, offset, held, hnum, hat, hrefs)
    return stop


_State = tuple[int, str, int, int, "list[tuple[int, int]] | None"]
"""The loop's detector state: offset, held text, held number and offset, held refs."""


def _load(det: FootnoteDetector) -> _State:
    """The detector's state as the loop keeps it (a held single "[n]" as hnum/hat)."""
    hrefs = det.held_refs
    if hrefs is not None and len(hrefs) == 1:
        hnum, hat = hrefs[0]
        return det.offset, det.held, hnum, hat, None
    return det.offset, det.held, 0, 0, hrefs


def _sync(
    det: FootnoteDetector,
    offset: int,
    held: str,
    hnum: int,
    hat: int,
    hrefs: list[tuple[int, int]] | None,
) -> None:
    """Hand the loop's local detector state back to the detector."""
    det.offset, det.held = offset, held
    if hnum:
        det.held = f"[{hnum}]"  # what a held single complete marker is, written out
        det.held_refs = [(hnum, hat)]
        det.held_start = hat  # a held complete marker starts at its ref's offset
    else:
        det.held_refs = hrefs


def _detect(
    ip: ChatState,
    det: FootnoteDetector,
    content: str,
    offset: int,
    held: str,
    hnum: int,
    hat: int,
    hrefs: list[tuple[int, int]] | None,
    out: list[Event],
) -> _State:
    """A token the loop does not take itself: through the detector, its refs emitted.

    One shape is taken here without the detector's scan: nothing held, and the
    token's only ``[`` starts a complete ``[1]``…``[199]`` followed by a character
    that is not ``(`` ("… Rome [1]." as Perplexity sends it): a ref at once."""
    if not held and content.count("[") == 1:
        p = content.find("[")
        q = content.find("]", p)
        if (
            p < q < len(content) - 1
            and content[q + 1] != "("
            and (number := _TAIL_NUMBERS.get(content[p + 1 : q + 1])) is not None
        ):
            ip._add_refs(0, [(number, offset + p)], out)
            return offset + len(content), "", 0, 0, None
    _sync(det, offset, held, hnum, hat, hrefs)
    found = det.feed(content)[1]
    if found:
        ip._add_refs(0, found, out)
    return _load(det)
