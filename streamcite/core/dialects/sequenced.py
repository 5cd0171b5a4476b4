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

Template = tuple[bytes, bytes, bytes, bool, int]
"""A sequenced delta's template: ``head`` (the fields before the sequence number's value,
``{"type":"…","sequence_number":`` as OpenAI writes them), its length, ``mid`` (the
fields after the number up to the text's opening quote), its length, ``tail`` (the
closing quote and the fields after the text, up to ``"obfuscation":"`` when the next is
true), its length, whether an obfuscation string (ASCII letters and digits) and ``"}``
end the event, and what the events are (:data:`TEXT`, :data:`REASON`, :data:`IGNORE`)."""

_NUMBER = 18
"""Digits a sequence number may have (a JSON integer: no sign, no leading zero)."""


def learn(obj: dict[str, Any], data: bytes, action: int) -> Template | None:
    """The template of the deltas like ``obj`` (parsed from ``data``): the fields before
    and after its text written as orjson writes their values, kept if they are ``data``'s
    bytes but for the sequence number, the text and a last ``obfuscation`` string of
    letters and digits. None: not a delta of that shape (no sequence number before the
    ``delta`` string, a field orjson cannot write)."""
    keys = list(obj)
    seq = obj.get("sequence_number")
    if seq.__class__ is not int or seq < 0 or obj.get("delta").__class__ is not str:
        return None
    at, s = keys.index("delta"), keys.index("sequence_number")
    if s > at:
        return None
    obf = obj[keys[-1]] if keys[-1] == "obfuscation" and at < len(keys) - 1 else None
    if obf is not None and not (obf.__class__ is str and (not obf or _alnum(obf))):
        return None
    after = keys[at + 1 : -1] if obf is not None else keys[at + 1 :]
    try:
        head = b"{" + b"".join(b"%s:%s," % (dumps(k), dumps(obj[k])) for k in keys[:s])
        mid = b"".join(b",%s:%s" % (dumps(k), dumps(obj[k])) for k in keys[s + 1 : at])
        tail = b"".join(b",%s:%s" % (dumps(k), dumps(obj[k])) for k in after)
    except TypeError:  # orjson's own limit (a value nested deeper than 254): no template
        return None
    head += b'"sequence_number":'
    mid += b',"delta":"'
    tail = b'"' + tail + (b',"obfuscation":"' if obf is not None else b"}")
    last = b'%s"}' % obf.encode() if obf is not None else b""
    if data.startswith(b"%s%d%s" % (head, seq, mid)) and data.endswith(tail + last):
        return (head, mid[1:], tail, obf is not None, action)
    return None


def _alnum(s: str) -> bool:
    return s.isascii() and s.isalnum()


class SequencedState(TemplatedState):
    """A dialect whose deltas carry a sequence number (OpenAI Responses), taken by their
    :data:`Template` in :meth:`feed_raw` (the dialect writes :attr:`_tpls`)."""

    __slots__ = ("_tpls",)

    def __init__(self, builder: AnswerBuilder | None = None, marker_mode: MarkerMode = "keep"):
        super().__init__(builder, marker_mode)
        self._tpls: dict[bytes, Template] = {}
        """Event type (as its SSE name) → the template of its deltas."""

    def feed_raw(self, raw: list[RawEvent], out: list[Event]) -> None:  # noqa: C901, RUF100
        """The hot loop: a delta of its name's template taken inline (text, reasoning or
        ignored), every other event to :meth:`_general` (the detector's offset handed
        over around it)."""
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
                head, mid, tail, obf, act = tpl
                data = item[1]
                # Each step one C call taking one argument (start/end arguments cost more
                # than the search), checked at once: the head, the number up to the comma
                # that starts ``mid``, the fields after it, the text up to the last
                # ``tail``, the obfuscation string and ``"}`` (``!=``: a prefix or suffix
                # was removed).
                rest = data.removeprefix(head)
                num, _, after = rest.partition(b",")
                text_on = after.removeprefix(mid)
                body, sep, o = text_on.rpartition(tail)
                obf_s = o.removesuffix(b'"}') if obf else b""
                if (
                    sep
                    and (obf_s != o and (obf_s.isalnum() or not obf_s) if obf else not o)
                    and text_on != after
                    and rest != data
                    and num.isdigit()
                    and length(num) <= _NUMBER
                    and (num[0] != 0x30 or num == b"0")  # a JSON integer: no leading zero
                ):
                    t: str | None
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
