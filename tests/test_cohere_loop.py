"""The Cohere loop (streamcite/core/dialects/_cohere_loop.py): a tool call's argument
fragments and the ignored end events taken by their bytes give exactly the events of the
general way, whatever the fragments hold; and they are not parsed. Streams written here."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamcite.core.dialects.cohere as cohere_mod
from streamcite.core.events import Event
from streamcite.core.sse import RawEvent
from tests._fast_and_general import count_loads, read_fast, read_general

ARGS = b'{"type":"tool-call-delta","index":%d,"delta":{"message":{"tool_calls":{"function":{"arguments":"'
END = b'"}}}}}'


def _ev(kind: str, **body: Any) -> RawEvent:
    return (kind.encode(), orjson.dumps({"type": kind, **body}), "", None)


def _start(idx: int) -> RawEvent:
    call = {"id": f"c{idx}", "type": "function", "function": {"name": "f", "arguments": ""}}
    return _ev("tool-call-start", index=idx, delta={"message": {"tool_calls": call}})


def _frag(body: bytes, idx: int = 0, end: bytes = END) -> RawEvent:
    return (b"tool-call-delta", ARGS % idx + body + end, "", None)


def _general(raw: list[RawEvent]) -> tuple[list[Event], Any]:
    """The reference: every event the general way (parsed, dispatched), one at a time."""
    return read_general("cohere", raw)


def _hot(raw: list[RawEvent], reads: int = 3) -> tuple[list[Event], Any]:
    return read_fast("cohere", raw, reads)


HOSTILE = [b"{\\n  \\\"a\\\"", b"caf\xc3\xa9", b"\\ud83d", b"raw\x01", b"bad \xff", b'un"q',
           b"x\\", b"", b"[1]", b'"}}}}},"x":{"a":"']  # fmt: skip


def test_hostile_fragments_read_as_the_general_way() -> None:
    raw = [_ev("message-start", id="m"), _start(0), _frag(b"{")]
    for body in HOSTILE:
        raw += [_frag(body), _frag(b" ok")]
    for end in (END[1:], END + b" ", END[:-1], END + b"}", b'","more":1' + END[1:]):
        raw += [_frag(b"e", end=end), _frag(b"", end=end), _frag(b"1")]
    raw += [_frag(b"unknown call", idx=5), _start(1), _frag(b"{}", idx=1), _frag(b"}")]
    assert _hot(raw) == _general(raw)


def test_ends_and_odd_ends_read_as_the_general_way() -> None:
    raw = [_ev("message-start", id="m")]
    for kind in ("content-end", "tool-call-end", "citation-end"):
        for body in (b"0", b"63", b"64", b"-1", b"01", b"true", b'"0"', b'0,"x":1'):
            raw.append(
                (kind.encode(), b'{"type":"%s","index":%s}' % (kind.encode(), body), "", None)
            )
    raw.append((b"content-end", b'{"type":"content-end","index":0', "", None))  # cut short
    assert _hot(raw) == _general(raw)


@settings(max_examples=100, deadline=None)
@given(
    parts=st.lists(st.text(max_size=10), min_size=1, max_size=10),
    ascii_escapes=st.lists(st.booleans(), min_size=10, max_size=10),
    junk=st.lists(st.binary(max_size=6), max_size=3),
    reads=st.integers(1, 5),
)
def test_any_fragments_same_events(
    parts: list[str], ascii_escapes: list[bool], junk: list[bytes], reads: int
) -> None:
    raw = [_ev("message-start", id="m"), _start(0)]
    for i, text in enumerate(parts):
        enc = json.dumps(text) if ascii_escapes[i] else orjson.dumps(text).decode()
        raw.append(_frag(enc[1:-1].encode("utf-8", "surrogatepass")))
        if i < len(junk):
            raw.append(_frag(junk[i]))
    raw.append(_ev("message-end", delta={"finish_reason": "TOOL_CALL"}))
    assert _hot(raw, reads) == _general(raw)


def test_fragments_and_ends_are_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    """After a call's start, its fragments and the end events go by their bytes."""
    calls = count_loads(monkeypatch, cohere_mod)
    raw = [_ev("message-start", id="m"), _start(0)]
    raw += [_frag(b'{\\"n\\": %d' % i if i == 0 else b", %d" % i) for i in range(100)]
    raw += [_frag(b"}"), _ev("tool-call-end", index=0), _ev("content-end", index=3)]
    out, answer = _hot(raw)
    assert len(calls) == 2  # the message start and the call's start
    assert answer.tool_calls[0].arguments.startswith('{"n": 0, 1, 2')
    assert (out, answer) == _general(raw)


def test_unhashable_index_is_inert() -> None:
    """A content index that is a list or an object names no block (it raised)."""
    bad = {"message": {"content": {"text": "x"}}}
    raw = [_ev("content-start", index=[1], delta={"message": {"content": {"type": "text"}}})]
    raw += [
        _ev("content-delta", index={"a": 1}, delta=bad),
        _ev("content-delta", index=[1], delta=bad),
    ]
    out, answer = _hot(raw)
    assert answer.text == "xx"
    assert (out, answer) == _general(raw)
