"""The Anthropic and Cohere hot loop (streamcite/core/dialects/hotloop.py): text deltas
taken by their bytes give exactly the events of the general way, whatever the bytes
between the template's ends hold (escapes, quotes, control characters, invalid UTF-8,
footnote markers, padding, overlapping quotes); and a template delta is not parsed."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamcite.core.dialects.anthropic as anthropic_mod
import streamcite.core.dialects.cohere as cohere_mod
from streamcite.core.events import Event
from streamcite.core.sse import RawEvent
from tests._fast_and_general import count_loads, read_fast, read_general

ANTHROPIC_PRE = b'{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":"'
COHERE_PRE = b'{"type":"content-delta","index":%d,"delta":{"message":{"content":{"text":"'
ENDS = {"anthropic": b'"}}', "cohere": b'"}}}}'}


def _prelude(dialect: str, idx: int = 0) -> list[RawEvent]:
    if dialect == "anthropic":
        start = {"type": "message_start", "message": {"id": "m", "model": "c"}}
        block = {"type": "content_block_start", "index": idx, "content_block": {"type": "text"}}
        return [
            (b"message_start", orjson.dumps(start), "", None),
            (b"content_block_start", orjson.dumps(block), "", None),
        ]
    start = {"type": "message-start", "id": "c"}
    content = {"message": {"content": {"type": "text", "text": ""}}}
    block = {"type": "content-start", "index": idx, "delta": content}
    return [
        (b"message-start", orjson.dumps(start), "", None),
        (b"content-start", orjson.dumps(block), "", None),
    ]


def _delta(dialect: str, body: bytes, idx: int = 0, end: bytes | None = None) -> RawEvent:
    pre = (ANTHROPIC_PRE if dialect == "anthropic" else COHERE_PRE) % idx
    name = b"content_block_delta" if dialect == "anthropic" else b"content-delta"
    return (name, pre + body + (end if end is not None else ENDS[dialect]), "", None)


def _general(dialect: str, raw: list[RawEvent]) -> tuple[list[Event], Any]:
    """The reference: every event the general way (parsed, dispatched), one at a time."""
    return read_general(dialect, _whole(raw))


def _hot(dialect: str, raw: list[RawEvent], reads: int = 3) -> tuple[list[Event], Any]:
    return read_fast(dialect, _whole(raw), reads)


def _whole(raw: list[Any]) -> list[RawEvent]:
    """Named events written ``(name, data)`` here, as the decoder gives them: ``(name,
    data, last event id, retry)`` (the compiled build checks the type)."""
    return [(*item, "", None) if type(item) is tuple and len(item) == 2 else item for item in raw]


# Bodies between the template's quotes: valid JSON string bodies and not.
HOSTILE = [
    b"plain",
    "caf\u00e9 \u05ea\u05dc \u2615 \U0001f600".encode(),
    b'say \\"hi\\"',  # escaped quotes
    b"back\\\\slash",
    b"tab\\tnew\\nline",
    b"\\u00e9\\u05ea",
    b"\\ud83d\\ude00",  # an escaped surrogate pair
    b"\\ud83d",  # a lone escaped surrogate
    b"\\udc00 tail",
    b"raw\ttab",  # a raw control character: invalid JSON
    b"raw\x01ctl",
    b"bad \xff utf8",  # invalid UTF-8
    b"\xed\xa0\x80",  # a UTF-8-encoded surrogate: invalid
    b'un"escaped',  # an unescaped quote
    b'x"},"extra":{"a":"b',  # a quote that reshapes the object
    b"ends in backslash\\",
    b"bad \\x escape",
    b"",  # an empty text
    b"see [1].",
    b"[",
    b"12]",
    b"\xe2\x80\xa8 line separator",
]


@pytest.mark.parametrize("dialect", ["anthropic", "cohere"])
def test_hostile_bodies_read_as_the_general_way(dialect: str) -> None:
    raw = [*_prelude(dialect), _delta(dialect, b"warm up")]
    for body in HOSTILE:
        raw += [_delta(dialect, body), _delta(dialect, b" ok")]
    assert _hot(dialect, raw) == _general(dialect, raw)


@pytest.mark.parametrize("dialect", ["anthropic", "cohere"])
def test_broken_ends_read_as_the_general_way(dialect: str) -> None:
    end = ENDS[dialect]
    raw = [*_prelude(dialect), _delta(dialect, b"warm up")]
    for tail in [
        end[1:],  # the closing quote is the opening one: not JSON
        end + b" ",  # trailing space: valid JSON, not the template
        end[:-1] + b"   " + end[-1:],  # padded as Anthropic pads
        end[:-1] + b"\t" + end[-1:],
        end[:-1] + b" x " + end[-1:],
        end[:-1] + b"\x0b" + end[-1:],  # not JSON whitespace
        end + end[-1:],  # one brace too many
        b'","more":1' + end[1:],
        b"",
    ]:
        raw += [_delta(dialect, b"mid", end=tail), _delta(dialect, b"", end=tail)]
        raw.append(_delta(dialect, b" ok"))
    assert _hot(dialect, raw) == _general(dialect, raw)


@pytest.mark.parametrize("dialect", ["anthropic", "cohere"])
def test_other_blocks_and_indexes(dialect: str) -> None:
    """A template is its block's: another index (a block never started, a bool, a
    leading zero) is parsed and read as the general way reads it."""
    raw = [*_prelude(dialect), _delta(dialect, b"zero")]
    raw += [*_prelude(dialect, 3)[1:], _delta(dialect, b"three"), _delta(dialect, b"3")]
    raw += [_delta(dialect, b"unknown", idx=7), _delta(dialect, b"zero again")]
    pre = (ANTHROPIC_PRE if dialect == "anthropic" else COHERE_PRE) % 0
    for head in (b'"index":true', b'"index":03', b'"index":-0', b'"index":"0"'):
        data = pre.replace(b'"index":0', head) + b"odd" + ENDS[dialect]
        raw.append((raw[-1][0], data, "", None))  # type: ignore[index]
    raw.append(_delta(dialect, b"end"))
    assert _hot(dialect, raw) == _general(dialect, raw)


@settings(max_examples=150, deadline=None)
@given(
    dialect=st.sampled_from(["anthropic", "cohere"]),
    texts=st.lists(st.text(max_size=12), min_size=1, max_size=12),
    ascii_escapes=st.lists(st.booleans(), min_size=12, max_size=12),
    junk=st.lists(st.binary(max_size=6), max_size=4),
    reads=st.integers(1, 5),
)
def test_any_text_same_events(
    dialect: str, texts: list[str], ascii_escapes: list[bool], junk: list[bytes], reads: int
) -> None:
    """Any texts, escaped as orjson or as json.dumps(ensure_ascii) writes them, with raw
    junk bodies between: the hot loop's events and answer are the general way's."""
    raw = _prelude(dialect)
    for i, text in enumerate(texts):
        enc = json.dumps(text) if ascii_escapes[i] else orjson.dumps(text).decode()
        raw.append(_delta(dialect, enc[1:-1].encode("utf-8", "surrogatepass")))
        if i < len(junk):
            raw.append(_delta(dialect, junk[i]))
    assert _hot(dialect, raw, reads) == _general(dialect, raw)


@pytest.mark.parametrize(
    ("dialect", "module"), [("anthropic", anthropic_mod), ("cohere", cohere_mod)]
)
def test_template_deltas_are_not_parsed(
    dialect: str, module: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No delta of a text block is parsed, not even its first: the block's start writes
    the template of its deltas (the old ways parsed every event, then the first)."""
    calls = count_loads(monkeypatch, module)
    raw = _prelude(dialect) + [_delta(dialect, b"w%d" % i) for i in range(200)]
    _out, answer = _hot(dialect, raw)
    assert answer.text == "".join(f"w{i}" for i in range(200))
    assert len(calls) == 2  # the prelude's two events


# -- OpenAI Responses: the sequence number varies between the template's parts ----------

RESP_PRE = b'{"type":"response.output_text.delta","sequence_number":'
RESP_MID = b',"item_id":"msg_1","output_index":0,"content_index":0,"delta":"'
RESP_END = b'","logprobs":[]}'


def _resp_prelude() -> list[RawEvent]:
    def ev(name: str, **f: Any) -> RawEvent:
        return (name.encode(), orjson.dumps({"type": name, "sequence_number": 0, **f}), "", None)

    item = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    part = {"type": "output_text", "text": "", "annotations": []}
    where = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    return [
        ev("response.created", response={"id": "r", "model": "m", "created_at": 1}),
        ev("response.output_item.added", output_index=0, item=item),
        ev("response.content_part.added", **where, part=part),
    ]


def _resp_delta(
    body: bytes, seq: bytes = b"7", mid: bytes = RESP_MID, end: bytes = RESP_END
) -> RawEvent:
    return (b"response.output_text.delta", RESP_PRE + seq + mid + body + end, "", None)


def test_responses_hostile_bodies_and_numbers() -> None:
    raw = [*_resp_prelude(), _resp_delta(b"warm up")]
    for body in HOSTILE:
        raw += [_resp_delta(body), _resp_delta(b" ok", seq=b"123456")]
    for seq in (b"0", b"00", b"01", b"-1", b"1.5", b"1e3", b"", b"12345678901234567890", b"9" * 18):
        raw += [_resp_delta(b"n", seq=seq), _resp_delta(b" ok")]
    for end in (RESP_END[1:], RESP_END + b" ", b'","logprobs":[1]}', b'"}'):
        raw += [_resp_delta(b"e", end=end), _resp_delta(b"", end=end), _resp_delta(b" ok")]
    other = RESP_MID.replace(b"msg_1", b"msg_2")
    raw += [_resp_delta(b"unknown item", mid=other), _resp_delta(b"end")]
    assert _hot("responses", raw) == _general("responses", raw)


@settings(max_examples=100, deadline=None)
@given(
    texts=st.lists(st.text(max_size=12), min_size=1, max_size=12),
    ascii_escapes=st.lists(st.booleans(), min_size=12, max_size=12),
    obfuscated=st.booleans(),
    reads=st.integers(1, 5),
)
def test_responses_any_text_same_events(
    texts: list[str], ascii_escapes: list[bool], obfuscated: bool, reads: int
) -> None:
    raw = _resp_prelude()
    for i, text in enumerate(texts):
        enc = json.dumps(text) if ascii_escapes[i] else orjson.dumps(text).decode()
        end = b'","logprobs":[],"obfuscation":"x%d"}' % i if obfuscated else RESP_END
        raw.append(_resp_delta(enc[1:-1].encode("utf-8", "surrogatepass"), b"%d" % i, end=end))
    assert _hot("responses", raw, reads) == _general("responses", raw)


def test_responses_template_deltas_are_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    import streamcite.core.dialects.responses as responses_mod

    calls = count_loads(monkeypatch, responses_mod)
    raw = _resp_prelude() + [_resp_delta(b"w%d" % i, seq=b"%d" % (i + 3)) for i in range(200)]
    _out, answer = _hot("responses", raw)
    assert answer.text == "".join(f"w{i}" for i in range(200))
    assert len(calls) == 5  # the prelude's three events, the part's first two deltas
    # OpenAI's per-event obfuscation string (letters and digits) varies: still the template.
    calls.clear()
    obf = [_resp_delta(b"o", end=b'","obfuscation":"x%d"}' % i) for i in range(100)]
    _out, answer = _hot("responses", _resp_prelude() + obf)
    assert answer.text == "o" * 100
    assert len(calls) == 5
    # Deltas that differ in more than their text and obfuscation are all parsed, and after
    # a few tries no template is written any more.
    calls.clear()
    other = [_resp_delta(b"o", end=b'","logprobs":[%d]}' % i) for i in range(100)]
    _out, answer = _hot("responses", _resp_prelude() + other)
    assert answer.text == "o" * 100
    assert len(calls) == 103


def test_reasoning_deltas_by_template(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reasoning deltas (Responses' summary text, Anthropic's thinking, Cohere's thinking
    and tool plan) take the template too: the same events as the general way, and only
    the first of a run is parsed."""
    import streamcite.core.dialects.anthropic as anthropic_mod
    import streamcite.core.dialects.cohere as cohere_mod
    import streamcite.core.dialects.responses as responses_mod

    calls = count_loads(monkeypatch, anthropic_mod, cohere_mod, responses_mod)
    head = b'{"type":"response.reasoning_summary_text.delta","sequence_number":'
    mid = b',"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"'
    raw = _resp_prelude() + [
        (b"response.reasoning_summary_text.delta",
         head + b"%d" % (i + 3) + mid + b'r\\u00e9%d","obfuscation":"Ab%d"}' % (i, i))
        for i in range(50)
    ]  # fmt: skip
    assert _hot("responses", raw) == _general("responses", raw)
    calls.clear()
    _out, answer = _hot("responses", raw)
    assert answer.reasoning_text == "".join(f"ré{i}" for i in range(50))
    assert len(calls) == 4  # the prelude's three events, the first reasoning delta
    anth = [
        (b"content_block_start", b'{"type":"content_block_start","index":0,'
         b'"content_block":{"type":"thinking","thinking":""}}'),
        *[(b"content_block_delta", b'{"type":"content_block_delta","index":0,"delta":'
           b'{"type":"thinking_delta","thinking":"t%d"}' % i + b" " * (i % 3) + b"}")
          for i in range(40)],
    ]  # fmt: skip
    assert _hot("anthropic", anth) == _general("anthropic", anth)
    calls.clear()
    _out, answer = _hot("anthropic", anth)
    assert answer.reasoning_text == "".join(f"t{i}" for i in range(40))
    assert len(calls) == 1  # the block's start (it writes the template of its deltas)
    coh = [
        *[(b"tool-plan-delta", b'{"type":"tool-plan-delta","delta":{"message":'
           b'{"tool_plan":"p%d"}}}' % i) for i in range(20)],
        (b"content-start", b'{"type":"content-start","index":0,"delta":{"message":'
         b'{"content":{"type":"thinking","thinking":""}}}}'),
        *[(b"content-delta", b'{"type":"content-delta","index":0,"delta":{"message":'
           b'{"content":{"thinking":"k%d"}}}}' % i) for i in range(20)],
        (b"content-delta", b'{"type":"content-delta","index":0,"delta":{"message":'
         b'{"content":{"thinking":"bad\\x"}}}}'),
    ]  # fmt: skip
    assert _hot("cohere", coh) == _general("cohere", coh)
    calls.clear()
    _out, answer = _hot("cohere", coh)
    assert answer.reasoning_text == "".join(f"p{i}" for i in range(20)) + "".join(
        f"k{i}" for i in range(20)
    )
    assert len(calls) == 3  # the first plan delta, the start (it writes the template), the bad one


def test_responses_deeply_nested_field_no_template() -> None:
    """A delta with a field nested deeper than orjson writes: parsed as before, no crash."""
    deep = b"[" * 300 + b"]" * 300
    raw = [*_resp_prelude(), _resp_delta(b"a"), _resp_delta(b"b", end=b'","x":' + deep + b"}")]
    raw += [_resp_delta(b"c", end=b'","x":' + deep + b"}"), _resp_delta(b"d")]
    out, answer = _hot("responses", raw)
    assert answer.text == "abcd"
    assert (out, answer) == _general("responses", raw)


def test_reasoning_whose_quotes_overlap_reads_as_the_general_way() -> None:
    """A reasoning delta (or a tool plan) of the template's envelope whose closing quote is
    its opening one is not JSON: read the general way, in the pure and the compiled build
    (there a slice that ends before it starts once raised ``SystemError``)."""
    think = b'{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"'
    anth = [
        (b"content_block_start", b'{"type":"content_block_start","index":0,'
         b'"content_block":{"type":"thinking","thinking":""}}'),
        *[(b"content_block_delta", think + b't%d"}}' % i) for i in range(3)],
        (b"content_block_delta", think + b"}}"),
        (b"content_block_delta", think + b'ok"}}'),
    ]  # fmt: skip
    assert _hot("anthropic", anth, reads=1) == _general("anthropic", anth)
    plan = b'{"type":"tool-plan-delta","delta":{"message":{"tool_plan":"'
    thought = b'{"type":"content-delta","index":0,"delta":{"message":{"content":{"thinking":"'
    coh = [
        *[(b"tool-plan-delta", plan + b'p%d"}}}' % i) for i in range(3)],
        (b"tool-plan-delta", plan + b"}}}"),
        (b"content-start", b'{"type":"content-start","index":0,"delta":{"message":'
         b'{"content":{"type":"thinking","thinking":""}}}}'),
        *[(b"content-delta", thought + b'k%d"}}}}' % i) for i in range(3)],
        (b"content-delta", thought + b"}}}}"),
        (b"content-delta", thought + b'ok"}}}}'),
    ]  # fmt: skip
    assert _hot("cohere", coh, reads=1) == _general("cohere", coh)
