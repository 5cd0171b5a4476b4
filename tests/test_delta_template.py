"""The delta template (refusal and tool-argument chunks taken from their bytes) gives
exactly the events and answer of the general way, and is taken on the streams it is for.

The streams are written here, in the shape OpenAI sends parallel tool calls and
refusals (``chat.completion.chunk``: a role chunk, each call's start with ``id`` and
``name``, then one argument fragment per chunk; or one ``refusal`` text per chunk), then
varied: JSON written three ways (orjson, ``json.dumps`` with ``\\uXXXX`` escapes, with
spaces), argument texts full of quotes, backslashes, escapes, control characters and
look-alike keys, look-alike fields elsewhere in the chunk, other shapes in between,
any split into reads."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamcite.core.api import ChatStreamParser
from streamcite.core.chunks import ChunkInterpreter
from streamcite.core.events import Event
from streamcite.core.one_step import NOT_TAKEN

_ENV = {
    "id": "chatcmpl-t",
    "object": "chat.completion.chunk",
    "created": 1,
    "model": "m",
    "system_fingerprint": "fp_1",
}
_TRICKY = [
    '{"city": "',
    "Edinb",
    '", "',
    '\\"',
    "\\",
    '"',
    '"arguments":"',
    '"refusal":"',
    '"}}]},"logprobs":null,"finish_reason":null}]}',
    "\u2028",
    "\x01",
    "\n",
    "😀",
    "é",
    "",
]
_texts = st.one_of(st.text(max_size=8), st.sampled_from(_TRICKY))


def _chunk(delta: dict[str, Any], extra: dict[str, Any], **choice: Any) -> dict[str, Any]:
    ch = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None, **choice}
    return {**_ENV, **extra, "choices": [ch]}


def _write(obj: dict[str, Any], how: int) -> bytes:
    if how == 0:
        return orjson.dumps(obj)
    if how == 1:
        return json.dumps(obj).encode()  # spaces, \uXXXX escapes, surrogate pairs
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def _start(i: int, extra: dict[str, Any]) -> dict[str, Any]:
    call = {"index": i, "id": f"call_{i}", "type": "function"}
    return _chunk({"tool_calls": [{**call, "function": {"name": "f", "arguments": ""}}]}, extra)


def _fragment(i: int, text: str, extra: dict[str, Any]) -> dict[str, Any]:
    return _chunk({"tool_calls": [{"index": i, "function": {"arguments": text}}]}, extra)


_extras = st.sampled_from(
    [
        {},
        {},
        {},
        {"x": {"arguments": "a"}},  # a look-alike field
        {"x": '"arguments":"'},
        {"obfuscation": "abc"},
    ]
)
_steps = st.one_of(
    st.tuples(st.just("frag"), st.integers(0, 2), _texts, _extras, st.integers(0, 2)),
    st.tuples(st.just("frag"), st.integers(0, 2), _texts, st.just({}), st.just(0)),
    st.tuples(st.just("refusal"), st.just(0), _texts, _extras, st.integers(0, 2)),
    st.tuples(st.just("start"), st.integers(0, 2), st.just(""), _extras, st.integers(0, 2)),
    st.tuples(st.just("content"), st.just(0), _texts, st.just({}), st.just(0)),
    st.tuples(st.just("bad"), st.just(0), _texts, st.just({}), st.just(0)),
)


def _stream(steps: list[tuple[str, int, str, dict[str, Any], int]], finish: bool) -> bytes:
    frames = [orjson.dumps(_chunk({"role": "assistant", "content": None}, {}))]
    for kind, i, text, extra, how in steps:
        if kind == "frag":
            frames.append(_write(_fragment(i, text, extra), how))
        elif kind == "refusal":
            frames.append(_write(_chunk({"refusal": text}, extra), how))
        elif kind == "start":
            frames.append(_write(_start(i, extra), how))
        elif kind == "content":
            frames.append(orjson.dumps(_chunk({"content": text}, {})))
        else:  # a fragment chunk with a raw control character or cut short
            good = orjson.dumps(_fragment(0, text, {}))
            frames.append(good.replace(b"\\n", b"\n") if "\n" in text else good[:-3])
    if finish:
        frames.append(orjson.dumps(_chunk({}, {}, finish_reason="tool_calls")))
        frames.append(b"[DONE]")
    return b"".join(b"data: " + f + b"\n\n" for f in frames)


class _GeneralWay(ChunkInterpreter):
    """Every chunk the general way: nothing in one step, so no template is learnt."""

    __slots__ = ()

    def _rare_delta(self, obj: Any, out: list[Event]) -> int:
        return NOT_TAKEN


def _run(stream: bytes, cuts: list[int], general: bool) -> tuple[Any, Any]:
    p = ChatStreamParser(dialect="chat")
    if general:
        p._interpreter = _GeneralWay(p.builder)
    bounds = sorted({c % (len(stream) + 1) for c in cuts})
    events: list[Event] = []
    for a, b in zip([0, *bounds], [*bounds, len(stream)], strict=True):
        events += p.feed(stream[a:b])
    events += p.close()
    return [e.to_dict() for e in events], p.done_event().answer.to_dict()


@pytest.mark.source_only  # (subclasses the interpreter: not possible compiled)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(_steps, min_size=1, max_size=24),
    st.lists(st.integers(0, 10_000), max_size=6),
    st.booleans(),
)
def test_template_agrees_with_the_general_way(
    steps: list[tuple[str, int, str, dict[str, Any], int]], cuts: list[int], finish: bool
) -> None:
    stream = _stream([("start", 0, "", {}, 0), *steps], finish)
    assert _run(stream, cuts, general=False) == _run(stream, cuts, general=True)


def _tool_stream(fragments: list[list[str]]) -> bytes:
    steps: list[tuple[str, int, str, dict[str, Any], int]] = []
    for i, texts in enumerate(fragments):
        steps.append(("start", i, "", {}, 0))
        steps += [("frag", i, t, {}, 0) for t in texts]
    return _stream(steps, finish=True)


def test_a_parallel_tool_call_stream_goes_through_the_template() -> None:
    """Two calls of ten fragments: each call's first fragment is parsed (and its
    envelope learnt), the nine others are taken from their bytes (this fails if the
    template is switched off or never learnt)."""
    args = [['{"city', '": "', 'Edin\\"', "burgh", '", ', '"u', 'nits"', ': "', "c", '"}']]
    args.append(['{"ti', 'cker"', ': "A', "AP", 'L", ', '"ex', 'change"', ": ", '"NASDAQ', '"}'])
    p = ChatStreamParser(dialect="chat")
    events = p.feed(_tool_stream(args)) + p.close()
    tpl = p._interpreter._dtpl
    assert (tpl.hits, tpl.learns) == (18, 2)
    answer = p.done_event().answer
    assert [json.loads(tc.arguments) for tc in answer.tool_calls] == [
        {"city": 'Edin"burgh', "units": "c"},
        {"ticker": "AAPL", "exchange": "NASDAQ"},
    ]
    assert [e.type for e in events].count("tool_call") == 22
    assert not [e for e in events if e.type == "error"]


def test_a_refusal_stream_goes_through_the_template() -> None:
    words = ["I'm", " sorry", ",", ' "no"', " I", " can't", " help", "."]
    stream = _stream([("refusal", 0, w, {}, 0) for w in words], finish=True)
    p = ChatStreamParser(dialect="chat")
    events = p.feed(stream) + p.close()
    assert (p._interpreter._dtpl.hits, p._interpreter._dtpl.learns) == (7, 1)
    assert [e.text for e in events if e.type == "refusal"] == words
    assert p.done_event().answer.refusal == "".join(words)


def test_a_look_alike_string_is_never_learnt() -> None:
    """A chunk whose only ``"arguments":"`` with the same text is elsewhere (the real
    one written with a space): the proof at learning refuses it, every chunk is parsed."""
    frames = [_chunk({"role": "assistant", "content": None}, {}), _start(0, {})]
    body = b""
    for text in ["ab", "cd", "ef"]:
        chunk = _fragment(0, text, {"x": {"arguments": text}})
        raw = orjson.dumps(chunk).replace(
            b'"function":{"arguments":"', b'"function":{"arguments": "'
        )
        body += b"data: " + raw + b"\n\n"
    head = b"".join(b"data: " + orjson.dumps(f) + b"\n\n" for f in frames)
    p = ChatStreamParser(dialect="chat")
    p.feed(head + body)
    assert (p._interpreter._dtpl.hits, p._interpreter._dtpl.prefix) == (0, b"")
    assert p.done_event().answer.tool_calls[0].arguments == "abcdef"
