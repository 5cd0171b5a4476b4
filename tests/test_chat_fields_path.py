"""Chat content chunks that also carry chunk-level ``citations``, ``search_results`` or
``usage`` (Perplexity repeats its citation list and a growing usage on every chunk)
are taken by ``ChunkInterpreter._with_fields``, not the general walk over every field:
the same events and answer with that path on and off, for any mix of shapes near it
and any split; and it is on (counted on a Perplexity-like stream written here, not a
copy of a recording: ``sonar`` model, seven URL citations, usage on every chunk)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from streamcite.core.api import ChatStreamParser
from streamcite.core.chunks import ChunkInterpreter
from tests._dialect_sse import split_at, sse

Obj = dict[str, Any]
_URLS = [f"https://source{i}.example/page" for i in range(7)]


def _chunk(content: Any, n: int, **top: Any) -> Obj:
    return {
        "id": "pplx-fields-01",
        "model": "sonar",
        "created": 1770000000,
        "usage": {"prompt_tokens": 10, "completion_tokens": n, "total_tokens": 10 + n},
        "citations": _URLS,
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": content}}],
        **top,
    }


_TEXT = st.text(alphabet=st.sampled_from(["a", " ", "[", "1", "2", "]", "é", "🙂", '"', "\n"]))
_TOP: list[Obj] = [
    {},
    {"usage": None},
    {"usage": {}},
    {"usage": 5},
    {"usage": {"prompt_tokens": True, "completion_tokens": "1"}},
    {"citations": _URLS[:3]},
    {"citations": [*_URLS, "https://late.example"]},
    {"citations": "not a list"},
    {"citations": [1, 2]},
    {"search_results": [{"title": "T", "url": "https://r.example", "date": "2024-01-01"}]},
    {"search_results": []},
    {"object": "error", "message": "boom"},
    {"error": {"message": "cut", "code": 500}},
    {"x_groq": {"usage": {"prompt_tokens": 1}}},
]


@st.composite
def _stream(draw: st.DrawFn) -> bytes:
    out = [sse(_chunk("The", 1))]
    for n in range(2, 2 + draw(st.integers(0, 10))):
        obj = _chunk(draw(_TEXT), n, **draw(st.sampled_from(_TOP)))
        if draw(st.booleans()):
            del obj["usage"]
        if draw(st.integers(0, 5)) == 0:
            obj["choices"][0]["delta"] = {"content": draw(_TEXT)}  # no role
        if draw(st.integers(0, 5)) == 0:  # something besides the content and role
            key = draw(st.sampled_from(["reasoning", "refusal", "tool_calls", "annotations", "x"]))
            obj["choices"][0]["delta"][key] = draw(st.sampled_from(["", "why", None, []]))
        if draw(st.integers(0, 7)) == 0:
            obj["choices"][0]["finish_reason"] = "stop"
        out.append(sse(obj))
    last = _chunk("", 40)
    last["choices"][0]["finish_reason"] = "stop"
    out.append(sse(last))
    if draw(st.booleans()):
        out.append(b"data: [DONE]\n\n")
    return b"".join(out)


@contextmanager
def _general_only() -> Iterator[None]:
    """Such chunks the general way (the path off)."""

    def general(self: ChunkInterpreter, obj: Obj, content: str, usage: Any, out: Any) -> None:
        self._interpret(obj, "delta", out)

    with mock.patch.object(ChunkInterpreter, "_with_fields", general):
        yield


def _events(parts: list[bytes]) -> list[Any]:
    p = ChatStreamParser(dialect="chat")
    evs = [e for piece in parts for e in p.feed(piece)] + p.close() + [p.done_event()]
    return [orjson.loads(e.to_json()) for e in evs]


@settings(max_examples=200, deadline=None)
@given(body=_stream(), cuts=st.lists(st.integers(0, 6000), max_size=6))
def test_the_fields_path_takes_what_the_general_way_would(body: bytes, cuts: list[int]) -> None:
    parts = split_at(body, cuts)
    fast = _events(parts)
    with _general_only():
        general = _events(parts)
    assert fast == general


def test_the_fields_path_is_on() -> None:
    """Of a Perplexity-like stream's eight chunks, only the first (its meta, the
    citations parsed) and the finish take the general way."""
    texts = ["The", " city", " has", " 808,988", " people", " [1]", "[2]."]
    chunks = [_chunk(t, n) for n, t in enumerate(texts, 1)]
    last = _chunk("", 9)
    last["choices"][0]["finish_reason"] = "stop"
    body = b"".join(sse(c) for c in [*chunks, last])
    calls = 0
    general = ChunkInterpreter._interpret

    def counted(self: ChunkInterpreter, obj: Obj, key: str, out: Any) -> None:
        nonlocal calls
        calls += 1
        general(self, obj, key, out)

    with mock.patch.object(ChunkInterpreter, "_interpret", counted):
        events = _events([body])
    assert calls == 2
    kinds = [e["type"] for e in events]
    assert kinds.count("token") == 7 and kinds.count("citations") == 1
    assert kinds.count("citation_ref") == 2
    assert kinds[-3:] == ["finish", "usage", "done"]
    assert events[-2]["completion_tokens"] == 9
    with _general_only():
        assert _events([body]) == events
