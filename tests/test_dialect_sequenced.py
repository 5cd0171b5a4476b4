"""The Responses hot loop (streamcite/core/dialects/sequenced.py): deltas taken by their
template in each key order OpenAI and compatible servers send — the sequence number
first or the text first (keys in alphabetical order), with or without the per-event
obfuscation string — give exactly the events of the general way whatever the bytes
between the template's parts hold; and a template delta is not parsed.

The streams here are written by these tests (shapes as in OpenAI's and xAI's streams)."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamcite.core.dialects.responses as responses_mod
from streamcite.core.dialects.sequenced import IGNORE, REASON, TEXT, learn
from streamcite.core.events import Event
from streamcite.core.sse import RawEvent
from tests._fast_and_general import count_loads, read_fast, read_general

TEXT_DELTA = "response.output_text.delta"
SUMMARY_DELTA = "response.reasoning_summary_text.delta"
CODE_DELTA = "response.code_interpreter_call_code.delta"
WHERE = {"item_id": "msg_1", "output_index": 0, "content_index": 0}


def _general(raw: list[RawEvent]) -> tuple[list[Event], Any]:
    """The reference: every event the general way (parsed, dispatched), one at a time."""
    return read_general("responses", raw)


def _hot(raw: list[RawEvent], reads: int = 3) -> tuple[list[Event], Any]:
    return read_fast("responses", raw, reads)


def _ev(name: str, **fields: Any) -> RawEvent:
    return (name.encode(), orjson.dumps({"type": name, "sequence_number": 1, **fields}), "", None)


def _prelude() -> list[RawEvent]:
    item = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    part = {"type": "output_text", "text": "", "annotations": []}
    return [
        _ev("response.created", response={"id": "r", "model": "m", "created_at": 1}),
        _ev("response.output_item.added", output_index=0, item=item),
        _ev("response.content_part.added", **WHERE, part=part),
    ]


def _layout(kind: str, layout: str, seq: bytes, body: bytes, obf: bytes | None) -> bytes:
    """A delta's bytes in one of the key orders, its values spliced in as bytes (so any
    body, number or obfuscation, valid JSON or not)."""
    where = b'"item_id":"msg_1","output_index":0,"content_index":0'
    if kind == SUMMARY_DELTA:
        where = b'"item_id":"rs_1","output_index":0,"summary_index":0'
    o = b',"obfuscation":"%s"' % obf if obf is not None else b""
    t = b'"type":"%s"' % kind.encode()
    if layout == "number first":  # OpenAI until 2025
        return b'{%s,"sequence_number":%s,%s,"delta":"%s","logprobs":[]%s}' % (
            t, seq, where, body, o)  # fmt: skip
    if layout == "number before the type":  # xAI
        return b'{"sequence_number":%s,%s,"content_index":0,"delta":"%s","logprobs":[]%s}' % (
            seq, t, body, o)  # fmt: skip
    # keys in alphabetical order after the type (OpenAI since): the text first
    return b'{%s,"content_index":0,"delta":"%s","item_id":"msg_1","logprobs":[]%s,'  % (
        t, body, o) + b'"output_index":0,"sequence_number":%s}' % seq  # fmt: skip


LAYOUTS = ["number first", "number before the type", "text first"]
HOSTILE = [
    b"plain",
    "caf\u00e9 \u2615 \U0001f600".encode(),
    b'say \\"hi\\"',
    b"back\\\\slash",
    b"tab\\tnew\\nline",
    b"\\ud83d\\ude00",
    b"\\ud83d",  # a lone escaped surrogate
    b"raw\ttab",  # a raw control character: invalid JSON
    b"bad \xff utf8",
    b'un"escaped',
    b'x","obfuscation":"abc',  # a quote that reshapes the object
    b'x","sequence_number":5,"y":"',
    b"ends in backslash\\",
    b"",
    b"see [1].",
]
NUMBERS = [b"0", b"00", b"01", b"-1", b"1.5", b"1e3", b"", b"1" * 19, b"9" * 18, b'"7"', b"7 "]
OBFUSCATIONS = [
    b"",
    b"aZ09",
    b"a-b",
    b"a\\u0041",
    b"\xc3\xa9",
    b"a b",
    b"a\\",
    b"\xff",
    b"a\tb",
    b"a\x00",
]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("obf", [None, b"Xy12"])
def test_hostile_bodies_numbers_and_obfuscation(layout: str, obf: bytes | None) -> None:
    def delta(body: bytes, seq: bytes = b"7", o: bytes | None = obf) -> RawEvent:
        return (TEXT_DELTA.encode(), _layout(TEXT_DELTA, layout, seq, body, o), "", None)

    raw = [*_prelude(), delta(b"first"), delta(b"warm up")]
    raw += [x for body in HOSTILE for x in (delta(body), delta(b" ok", b"123456"))]
    raw += [x for seq in NUMBERS for x in (delta(b"n", seq), delta(b" ok"))]
    if obf is not None:
        raw += [x for o in OBFUSCATIONS for x in (delta(b"o", o=o), delta(b" ok"))]
    raw += [delta(b"no obfuscation", o=None), delta(b"end")]
    for cut in (1, 2, 5):  # the event's bytes cut short or extended
        raw += [(TEXT_DELTA.encode(), raw[-1][1][:-cut], "", None), delta(b" ok")]  # type: ignore[index]
        raw += [(TEXT_DELTA.encode(), raw[-1][1] + b" " * cut, "", None), delta(b" ok")]  # type: ignore[index]
    assert _hot(raw) == _general(raw)


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(st.text(max_size=12), min_size=1, max_size=12),
    ascii_escapes=st.lists(st.booleans(), min_size=12, max_size=12),
    layout=st.sampled_from(LAYOUTS),
    kind=st.sampled_from([TEXT_DELTA, SUMMARY_DELTA, CODE_DELTA]),
    obfuscated=st.booleans(),
    junk=st.lists(st.binary(max_size=6), max_size=3),
    reads=st.integers(1, 5),
)
def test_any_text_same_events(
    texts: list[str],
    ascii_escapes: list[bool],
    layout: str,
    kind: str,
    obfuscated: bool,
    junk: list[bytes],
    reads: int,
) -> None:
    raw = _prelude()
    for i, text in enumerate(texts):
        enc = json.dumps(text) if ascii_escapes[i] else orjson.dumps(text).decode()
        body = enc[1:-1].encode("utf-8", "surrogatepass")
        obf = b"O%d" % (i * 7919) if obfuscated else None
        raw.append((kind.encode(), _layout(kind, layout, b"%d" % (i + 3), body, obf), "", None))
    for j, bad in enumerate(junk):  # arbitrary bytes in place of a text
        raw.insert(4 + j, (kind.encode(), _layout(kind, layout, b"9", bad, None), "", None))
    assert _hot(raw, reads) == _general(raw)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("obfuscated", [False, True])
def test_template_deltas_are_not_parsed(
    layout: str, obfuscated: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every layout's deltas are taken by their template after the first (if this fails,
    the fast path is off: the answer is still right, only slower)."""
    calls = count_loads(monkeypatch, responses_mod)
    obf = [b"Ab%d" % i if obfuscated else None for i in range(300)]
    text = [(TEXT_DELTA.encode(), _layout(TEXT_DELTA, layout, b"%d" % (i + 3), b"w%d" % i, obf[i]),
             "", None) for i in range(100)]  # fmt: skip
    code = [(CODE_DELTA.encode(), _layout(CODE_DELTA, layout, b"%d" % (i + 200), b"c\\n", obf[i]),
             "", None) for i in range(100)]  # fmt: skip
    summary = [
        (SUMMARY_DELTA.encode(), _layout(SUMMARY_DELTA, layout, b"%d" % i, b"r%d" % i, obf[i]),
         "", None) for i in range(100)
    ]  # fmt: skip
    raw = _prelude() + summary + text + code
    out, answer = _hot(raw)
    assert (out, answer) == _general(raw)
    calls.clear()
    _hot(raw)
    assert answer.text == "".join(f"w{i}" for i in range(100))
    assert answer.reasoning_text == "".join(f"r{i}" for i in range(100))
    # The prelude's three events, the first summary delta, the part's first two text
    # deltas (the first one places the part), the first code delta.
    assert len(calls) == 7


def _obj(*keys: str) -> tuple[dict[str, Any], bytes]:
    values = {"type": TEXT_DELTA, "sequence_number": 4, "delta": "hi", "obfuscation": "Q1"}
    obj = {k: values.get(k, 0) for k in keys}
    return obj, orjson.dumps(obj)


def test_learn_shapes() -> None:
    """A template for the number first (the obfuscation string last) and for the text
    first (the obfuscation string between the text and the number); none otherwise."""
    for keys, text_first in [
        (("type", "sequence_number", "item_id", "delta", "logprobs", "obfuscation"), False),
        (("sequence_number", "type", "delta"), False),
        (("type", "sequence_number", "delta", "obfuscation"), False),
        (("type", "delta", "item_id", "obfuscation", "output_index", "sequence_number"), True),
        (("type", "delta", "obfuscation", "sequence_number", "summary_index"), True),
        (("delta", "sequence_number"), True),
    ]:
        obj, data = _obj(*keys)
        tpl = learn(obj, data, REASON)
        assert tpl is not None and tpl[4] == REASON and tpl[5] is text_first, keys
    for keys in [
        ("type", "sequence_number", "delta", "obfuscation", "logprobs"),  # obfuscation inside
        ("type", "delta", "sequence_number", "obfuscation"),  # obfuscation after the number
        ("type", "obfuscation", "delta", "sequence_number"),
        ("type", "delta"),
    ]:
        obj, data = _obj(*keys)
        assert learn(obj, data, TEXT) is None, keys
    obj, data = _obj("type", "sequence_number", "delta")
    assert learn(obj, data.replace(b",", b", "), TEXT) is None  # not orjson's bytes
    assert learn({**obj, "sequence_number": -1}, data, IGNORE) is None
    assert learn({**obj, "sequence_number": True}, data, IGNORE) is None
    assert learn({**obj, "obfuscation": "a-b"}, data, IGNORE) is None
