"""Hypothesis: a chat stream of tool-call fragments and refusal texts gives the same
events and answer whether its chunks are taken in one step (``_rare_delta``, the shape of
nearly every chunk of a tool-call or refusal stream) or all by the general way.

The one-step path must agree chunk for chunk with the general way on every shape near
the one it takes: fragments of calls not started yet, an index beyond the cap, a
negative or non-integer index, an ``id`` or ``name`` beside the fragment, arguments
that are not a string, two entries in one delta, a refusal that is empty or not a
string, another choice, a finish reason, usage, an error beside the delta."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamcite.core.api import ChatStreamParser
from streamcite.core.bounds import StreamBounds
from streamcite.core.chunks import ChunkInterpreter
from streamcite.core.events import Event
from streamcite.core.one_step import LEARNABLE, NOT_TAKEN, TAKEN

_ENV = {"id": "chatcmpl-t", "object": "chat.completion.chunk", "created": 1, "model": "m"}
_args = st.text(max_size=6)


def _chunk(delta: dict[str, Any], **choice: Any) -> dict[str, Any]:
    return {**_ENV, "choices": [{"index": 0, "delta": delta, "finish_reason": None, **choice}]}


def _fragment(tidx: Any, args: Any) -> dict[str, Any]:
    return _chunk({"tool_calls": [{"index": tidx, "function": {"arguments": args}}]})


_start = st.builds(
    lambda i, name: _chunk(
        {
            "tool_calls": [
                {
                    "index": i,
                    "id": f"call_{i}",
                    "type": "function",
                    "function": {"name": name, "arguments": ""},
                }
            ]
        }
    ),
    st.integers(0, 3),
    st.sampled_from(["f", "g"]),
)
_near = st.one_of(
    st.builds(_fragment, st.integers(0, 3), _args),  # the shape taken in one step
    st.builds(_fragment, st.integers(0, 3), _args),
    st.builds(_fragment, st.sampled_from([-1, 5, True, "0", None, 1.0]), _args),
    st.builds(_fragment, st.integers(0, 3), st.sampled_from([None, 3, {"a": 1}])),
    st.builds(
        lambda i, a: _chunk(
            {"tool_calls": [{"index": i, "id": "x", "function": {"arguments": a}}]}
        ),
        st.integers(0, 3),
        _args,
    ),
    st.builds(
        lambda i, a: _chunk(
            {"tool_calls": [{"index": i, "function": {"arguments": a, "name": "h"}}]}
        ),
        st.integers(0, 3),
        _args,
    ),
    st.builds(
        lambda a: _chunk(
            {
                "tool_calls": [
                    {"index": 0, "function": {"arguments": a}},
                    {"index": 1, "function": {"arguments": a}},
                ]
            }
        ),
        _args,
    ),
    st.builds(lambda r: _chunk({"refusal": r}), st.one_of(_args, st.sampled_from([None, 7]))),
    st.builds(lambda r: _chunk({"refusal": r}, index=1), _args),
    st.builds(lambda r: _chunk({"refusal": r}, finish_reason="stop"), _args),
    st.builds(lambda r: {**_chunk({"refusal": r}), "usage": {"total_tokens": 3}}, _args),
    st.builds(lambda r: {**_chunk({"refusal": r}), "error": {"message": "boom"}}, _args),
    st.builds(lambda a: {**_fragment(0, a), "citations": ["https://x"]}, _args),
    st.builds(lambda a: _chunk({"content": a}), _args),
)


def _body(chunks: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


class _GeneralWay(ChunkInterpreter):
    """Every chunk the general way."""

    __slots__ = ()

    def _rare_delta(self, obj: Any, out: list[Event]) -> int:
        return NOT_TAKEN


_TAKEN: list[int] = []


class _Spy(ChunkInterpreter):
    __slots__ = ()

    def _rare_delta(self, obj: Any, out: list[Event]) -> int:
        _TAKEN.append(super()._rare_delta(obj, out))
        return _TAKEN[-1]


def _run(body: bytes, one_step: bool, read: int, bounds: StreamBounds) -> tuple[Any, ...]:
    p = ChatStreamParser(dialect="chat", bounds=bounds)
    if not one_step:
        p._interpreter = _GeneralWay(p.builder)
    events: list[Event] = []
    for i in range(0, len(body), read):
        events += p.feed(body[i : i + read])
    events += p.close()
    return [e.to_dict() for e in events], p.done_event().answer.to_dict()


@pytest.mark.source_only  # (subclasses the interpreter: not possible compiled)
@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(_start, _near), min_size=1, max_size=14),
    st.sampled_from([7, 64, 4096]),
    st.sampled_from([2, 16]),
)
def test_one_step_and_general_way_agree(
    chunks: list[dict[str, Any]], read: int, max_tool_calls: int
) -> None:
    body = _body([{**_ENV, "choices": [{"index": 0, "delta": {"role": "assistant"}}]}, *chunks])
    bounds = StreamBounds(max_tool_calls=max_tool_calls)
    assert _run(body, True, read, bounds) == _run(body, False, read, bounds)


@pytest.mark.source_only  # (subclasses the interpreter: not possible compiled)
def test_the_one_step_path_is_taken() -> None:
    """The shapes of a tool-call and of a refusal stream go the one-step way (a test of
    the test above: it compares two different paths)."""
    _TAKEN.clear()
    it = _Spy()
    chunks = [
        _chunk({"role": "assistant", "content": None}),
        _chunk(
            {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": ""}}]}
        ),
        _fragment(0, '{"a":'),
        _fragment(0, "1}"),
        _chunk({"refusal": "no"}),
    ]
    for c in chunks:
        it.feed(orjson.dumps(c))
    # The first chunk (meta) and a call's start in one step; the fragments and the
    # refusal in the shapes whose envelopes are learnt.
    assert _TAKEN == [TAKEN, TAKEN, LEARNABLE, LEARNABLE, LEARNABLE]
    assert it.builder.snapshot().tool_calls[0].arguments == '{"a":1}'


@pytest.mark.parametrize("tidx", [2, 7])
def test_fragment_of_a_call_beyond_the_cap_is_reported(tidx: int) -> None:
    body = _body([_fragment(tidx, "x")])
    p = ChatStreamParser(dialect="chat", bounds=StreamBounds(max_tool_calls=2))
    events = p.feed(body) + p.close()
    assert [e.code for e in events if e.type == "error"] == ["bad_tool_call"]
