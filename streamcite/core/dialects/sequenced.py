"""The per-event hot loop of the OpenAI Responses dialect: deltas by their bytes. Sans-I/O.

Nearly every event of a Responses stream is a delta of the part being written — output
text, reasoning summary text, interpreter code — and those events are byte-identical but
for three values: the ``sequence_number`` (every event has the next one), the text, and
OpenAI's per-event ``obfuscation`` string (letters and digits that pad the event's
length)::

    {"type":"response.output_text.delta","sequence_number":659,"item_id":"msg_…",
     "output_index":1,"content_index":0,"delta":" familiarize","logprobs":[],
     "obfuscation":"DiAN"}

Once such an event has been parsed and taken, the dialect writes its :data:`Template`
from the parsed values (their JSON as orjson writes it, checked against the event's own
bytes), keyed by the event type. An event whose SSE name is that type and whose bytes
are the template's — any JSON integer of up to 18 digits, a JSON string body with no
raw control character, valid UTF-8, letters and digits for the obfuscation — *is* that
event with that text, by construction: so only the text is decoded, with no JSON parse,
no dispatch and no call per event. Anything else goes to the dialect's
:meth:`~streamcite.core.dialects.hotloop.TemplatedState._general` unchanged, one event
at a time. Each check is one C-level operation (a method call costs as much as a few
hundred bytes of ``memcmp``): the head by ``startswith``, the number's end by one
``find`` of the bytes after it, the text's end by one ``rfind``.
docs/provider-streams.md ("Dialect speed") has the measurements.
"""

from __future__ import annotations

from typing import Any

from orjson import dumps

from streamcite.core._fields import expect_fields
from streamcite.core.answer import AnswerBuilder
from streamcite.core.dialects.hotloop import TemplatedState
from streamcite.core.events import Event, ReasoningEvent, TokenEvent
from streamcite.core.markers import MarkerMode
from streamcite.core.sse import RawEvent
from streamcite.core.template import has_control, string_body

__all__ = ["IGNORE", "REASON", "TEXT", "SequencedState", "Template", "learn"]

expect_fields(TokenEvent, ["type", "index", "text", "display"], "dialects/sequenced.py")
expect_fields(ReasoningEvent, ["type", "index", "text"], "dialects/sequenced.py")
_new = object.__new__

TEXT, REASON, IGNORE = 0, 1, 2
"""What a template's events are: a text delta, a reasoning delta, or an ignored delta
(taken, so proven valid, and nothing emitted)."""

Template = tuple[bytes, bytes, bytes, bytes, int, bool]
"""A sequenced delta's template: ``(head, mid, tail, last, action, text_first)``, the
bytes around its variable values (its sequence number, its text, and OpenAI's
obfuscation string where it has one) as they come:

- the number first (``text_first`` false): ``head`` (up to the number:
  ``{"type":"…","sequence_number":``), the number, a comma, ``mid`` (the fields up to the
  text's opening quote), the text, ``tail`` (its closing quote and the fields after it, up
  to ``"obfuscation":"`` when ``last`` is ``"}``, else to the end), the obfuscation string
  and ``last``;
- the text first (keys in alphabetical order): ``head`` (up to the text's opening quote),
  the text, ``mid`` (from its closing quote up to ``"obfuscation":"``, or to
  ``"sequence_number":`` when ``tail`` is empty), the obfuscation string, ``tail`` (from
  its closing quote up to ``"sequence_number":``), the number and ``last`` (the rest).

``action`` says what the events are (:data:`TEXT`, :data:`REASON`, :data:`IGNORE`)."""

_NUMBER = 18
"""Digits a sequence number may have (a JSON integer: no sign, no leading zero)."""


def learn(obj: dict[str, Any], data: bytes, action: int) -> Template | None:
    """The template of the deltas like ``obj`` (parsed from ``data``): the fields around
    its text, sequence number and last-but-one or last ``obfuscation`` string written as
    orjson writes them, kept if they are ``data``'s bytes. None: not a delta of such a
    shape, or a field orjson cannot write."""
    seq, obf = obj.get("sequence_number"), obj.get("obfuscation")
    if seq.__class__ is not int or seq < 0 or obj.get("delta").__class__ is not str:
        return None
    if obf is not None and not (obf.__class__ is str and (not obf or _alnum(obf))):
        return None
    keys, items = list(obj), list(obj.items())
    at, s, n = keys.index("delta"), keys.index("sequence_number"), len(keys)
    o = keys.index("obfuscation") if obf is not None else n
    ob = (obf or "").encode()
    try:  # one dumps per run of fields (a dict's JSON is its fields' joined by commas)
        if s < at < o and o >= n - 1:  # the number first, the obfuscation string last
            head = b"{" + _fields(items, 0, s, b"", b",") + b'"sequence_number":'
            mid = _fields(items, s + 1, at, b"", b",") + b'"delta":"'
            tail = b'"' + _fields(items, at + 1, o, b",", b"")
            tail += b',"obfuscation":"' if obf is not None else b"}"
            last = b'"}' if obf is not None else b""
            tpl: Template = (head, mid, tail, last, action, False)
            want = b"%s%d,%s" % (head, seq, mid), tail + ob + last
        elif at < s and (obf is None or at < o < s):  # the text first (sorted keys)
            head = b"{" + _fields(items, 0, at, b"", b",") + b'"delta":"'
            mid = b'"' + _fields(items, at + 1, min(o, s), b",", b"")
            mid += b',"obfuscation":"' if obf is not None else b',"sequence_number":'
            tail = b'"' + _fields(items, o + 1, s, b",", b"") + b',"sequence_number":'
            tail = tail if obf is not None else b""
            last = _fields(items, s + 1, n, b",", b"") + b"}"
            tpl = (head, mid[:-1], tail[:-1], last, action, True)
            want = head, b"%s%s%s%d%s" % (mid, ob, tail, seq, last)
        else:
            return None
    except TypeError:  # orjson's own limit (a value nested deeper than 254): no template
        return None
    return tpl if data.startswith(want[0]) and data.endswith(want[1]) else None


def _fields(items: list[tuple[str, Any]], i: int, j: int, before: bytes, after: bytes) -> bytes:
    """The fields ``items[i:j]`` as orjson writes them, joined by commas, with ``before``
    and ``after`` around them (nothing when there are none)."""
    return before + dumps(dict(items[i:j]))[1:-1] + after if i < j else b""


def _alnum(s: str) -> bool:
    return s.isascii() and s.isalnum()


def _text_first(data: bytes, head: bytes, mid: bytes, tail: bytes, last: bytes) -> bytes | None:
    """The text's bytes of ``data`` if it is the template's (the text first: see
    :data:`Template`; ``mid`` and ``tail`` without their last byte), else None. Taken
    from the end: the number after the last colon, the obfuscation string after the
    last quote, each step one single-argument C call."""
    x = data.removesuffix(last)
    y, _, num = x.rpartition(b":")
    if tail:  # an obfuscation string between the text and the number
        z = y.removesuffix(tail)
        w, _, obf = z.rpartition(b'"')
        ok = z != y and (obf.isalnum() or not obf)
    else:
        w, ok = y, True
    v = w.removesuffix(mid)
    body = v.removeprefix(head)
    if (
        ok
        and x != data
        and v != w
        and body != v
        and num.isdigit()
        and len(num) <= _NUMBER
        and (num[0] != 0x30 or num == b"0")  # a JSON integer: no leading zero
    ):
        return body
    return None


class SequencedState(TemplatedState):
    """A dialect whose deltas carry a sequence number (OpenAI Responses), taken by their
    :data:`Template` in :meth:`feed_raw` (the dialect writes :attr:`_tpls`)."""

    __slots__ = ("_tpls",)

    def __init__(self, builder: AnswerBuilder | None = None, marker_mode: MarkerMode = "keep"):
        super().__init__(builder, marker_mode)
        self._tpls: dict[bytes, Template] = {}
        """Event type (as its SSE name) → the template of its deltas."""

    def feed_raw(self, raw: list[RawEvent], out: list[Event]) -> None:  # noqa: C901, RUF100
        """The hot loop: a delta of its name's template taken inline, every other event
        to :meth:`_general` (the detector's offset handed over around it)."""
        if self.done:
            return
        append, text_append, det = out.append, self._raw0.append, self._det0
        keep, offset = det.keep, det.offset
        fast = keep and not det.held and self._surr is None
        template, make, token, length = self._tpls.get, _new, TokenEvent, len
        reasoning, r_append = ReasoningEvent, self.builder.reasoning_parts.append
        for item in raw:
            # A tuple item is a named event (OVERFLOW's name is empty: no template).
            if item.__class__ is tuple and (tpl := template(item[0])) is not None:
                head, mid, tail, last, act, text_first = tpl
                data = item[1]
                body: bytes | None
                if text_first:
                    body = _text_first(data, head, mid, tail, last)
                else:
                    # One single-argument C call a step (a start argument costs more than
                    # a search), checked at once (``!=``: a prefix or suffix was removed).
                    rest = data.removeprefix(head)
                    num, _, after = rest.partition(b",")
                    text_on = after.removeprefix(mid)
                    body, sep, o = text_on.rpartition(tail)
                    obf = o.removesuffix(last) if last else b""
                    if not (
                        sep
                        and (obf != o and (obf.isalnum() or not obf) if last else not o)
                        and text_on != after
                        and rest != data
                        and num.isdigit()
                        and length(num) <= _NUMBER
                        and (num[0] != 0x30 or num == b"0")  # a JSON integer: no leading 0
                    ):
                        body = None
                if body is not None:
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
                    if t is not None:
                        if not t or act == IGNORE:
                            continue
                        if act == TEXT and fast and "[" not in t:
                            offset += length(t)
                            ev = make(token)  # built as new_token does, inline
                            ev.type = "token"
                            ev.index = 0
                            ev.text = ev.display = t
                            append(ev)
                            text_append(t)
                        elif act == TEXT:
                            det.offset = offset
                            self.token(0, t, out)
                            offset = det.offset
                            fast = keep and not det.held and self._surr is None
                        elif self._surr is None:  # REASON
                            rev = make(reasoning)  # built as StreamState.reasoning does
                            rev.type = "reasoning"
                            rev.index = 0
                            rev.text = t
                            append(rev)
                            r_append(t)
                        else:
                            self.reasoning(0, t, out)
                        continue
            det.offset = offset
            self._general(item, out)
            if self.done:
                return
            offset = det.offset
            fast = keep and not det.held and self._surr is None
        det.offset = offset
