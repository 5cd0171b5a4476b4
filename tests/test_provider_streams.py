"""Recorded / documented provider streams (tests/fixtures/providers/, see SOURCES.md):
each whole, byte by byte and in random splits gives the same events, surfaces every
content, reasoning, tool-call and refusal character, and reports only real errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamcite import iter_events
from streamcite.core.events import DoneEvent, Event
from tests._streams import normalise

FIXTURES = Path(__file__).parent / "fixtures" / "providers"

# Per fixture: answer text, reasoning, tool calls (name, arguments), refusal, the codes
# of the error events it must give (and no other), usage events, finish reason, complete.
EXPECT: dict[str, dict[str, Any]] = {
    "openai_tool_calls.sse": {
        "tools": [
            ("call_DdmO9pD3xa9XTPNJ32zg2hcA", "get_weather", '{"location":"Paris, France"}'),
            ("call_5Xk2", "get_time", '{"tz": "Europe/Paris"}'),
        ],
        "usage": 1,
        "finish": "tool_calls",
    },
    "openai_refusal.sse": {"refusal": "I'm sorry, I can’t assist with that — ça non."},
    "openai_logprobs_usage.sse": {"text": "Hello wörld 👋 [1].", "usage": 1},
    "openai_url_citation.sse": {
        "text": "Paris hosts the Louvre ([louvre.fr](https://www.louvre.fr/?utm_source=openai)).",
    },
    "deepseek_reasoning.sse": {
        "text": "Hello! How can I help?",
        "reasoning": '好的，the user wrote "hello".',
        "usage": 1,
    },
    "groq_reasoning_xgroq.sse": {"text": "4", "reasoning": "Okay, 2+2 is 4.", "usage": 1},
    "openrouter_reasoning_error.sse": {
        "text": "The answer",
        "reasoning": "Thinking about it…",
        "errors": ["502"],
        "finish": "error",
        "complete": False,
    },
    "mistral_thinking_parts.sse": {
        "text": "La capitale est Paris [1].",
        "reasoning": "L'utilisateur demande la capitale.",
        "usage": 1,
    },
    "vllm_error_object.sse": {"errors": ["400"], "finish": None, "complete": False},
    "perplexity_usage_every_chunk.sse": {"text": "Rome is Italy's capital [1].", "usage": 1},
    "named_event_completion.sse": {"text": "named event"},
    "moonshot_reasoning_choice_usage.sse": {
        "text": "1 + 1 = 2。",
        "reasoning": "用户问 1+1，answer briefly.",
        "usage": 1,
    },
    "moonshot_tool_call_usage.sse": {
        "reasoning": "Need the weather in Lyon: call get_weather.",
        "tools": [("get_weather_0", "get_weather", '{"city": "Lyon"}')],
        # the finish chunk's choice-level usage, then the include_usage trailing chunk
        "usage": 2,
        "finish": "tool_calls",
    },
    "moonshot_indexless_tool_calls.sse": {
        "tools": [
            ("weather_0", "weather", '{"location":"Kyōto"}'),
            ("time_1", "time", '{"zone":"Asia/Tokyo"}'),
        ],
        "usage": 2,
        "finish": "tool_calls",
    },
    "xai_grok_reasoning_tool_call.sse": {
        "reasoning": "The user wants Oslo's weather.",
        "tools": [("call_80421377", "get_weather", '{"location":"Oslo"}')],
        "usage": 1,
        "finish": "tool_calls",
    },
    "xai_live_search_citations.sse": {"text": "The Øresund Bridge opened in 2000.", "usage": 1},
    "xai_grok_usage_every_chunk.sse": {
        "text": "Ah, the answer is 42 — naturellement",
        "usage": 1,
        "finish": "length",
    },
    "ollama_reasoning_usage.sse": {
        "text": "Salut ! 👋",
        "reasoning": "Okay, the user says «salut». Reply in French.",
        "usage": 1,
    },
    "ollama_parallel_tool_calls.sse": {
        "tools": [
            ("call_wq3k9z1d", "run_command", '{"command":"ls"}'),
            ("call_7hx2m0pa", "run_command", '{"command":"ls -l"}'),
        ],
        "finish": "tool_calls",
    },
}


def _load(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def _run(pieces: list[bytes]) -> list[Event]:
    return list(iter_events(pieces))


def _check(name: str, events: list[Event]) -> None:
    exp = EXPECT[name]
    done = events[-1]
    assert isinstance(done, DoneEvent)
    a = done.answer
    toks = "".join(e.text for e in events if e.type == "token" and e.index == 0)  # type: ignore[union-attr]
    reas = "".join(e.text for e in events if e.type == "reasoning")  # type: ignore[union-attr]
    refu = "".join(e.text for e in events if e.type == "refusal")  # type: ignore[union-attr]
    assert toks == a.text == exp.get("text", "")
    assert reas == a.reasoning_text == exp.get("reasoning", "")
    assert refu == (a.refusal or "") == exp.get("refusal", "")
    assert [(t.id, t.name, t.arguments) for t in a.tool_calls] == exp.get("tools", [])
    frags = [e for e in events if e.type == "tool_call"]
    for tidx, (_cid, _name, args) in enumerate(exp.get("tools", [])):
        assert "".join(e.arguments for e in frags if e.tool_index == tidx) == args  # type: ignore[union-attr]
    codes = [e.code for e in events if e.type == "error"]  # type: ignore[union-attr]
    assert codes == exp.get("errors", [])
    assert [e.code for e in a.errors] == codes
    assert a.finish_reason == exp.get("finish", "stop")
    assert a.complete is exp.get("complete", True)


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_fixture_whole_and_byte_by_byte(name: str) -> None:
    data = _load(name)
    whole = _run([data])
    _check(name, whole)
    bytewise = _run([data[i : i + 1] for i in range(len(data))])
    assert normalise(bytewise) == normalise(whole)


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_fixture_usage_events(name: str) -> None:
    events = _run([_load(name)])
    assert sum(e.type == "usage" for e in events) == EXPECT[name].get("usage", 0)
    assert (events[-1].answer.usage is not None) is bool(EXPECT[name].get("usage"))  # type: ignore[union-attr]


def test_every_fixture_is_listed_in_sources() -> None:
    sources = (FIXTURES / "SOURCES.md").read_text()
    files = sorted(p.name for p in FIXTURES.glob("*.sse"))
    assert files == sorted(EXPECT)
    for f in files:
        assert f"`{f}`" in sources
    # the provider table of docs/provider-streams.md names every fixture
    table = (Path(__file__).parent.parent / "docs" / "provider-streams.md").read_text()
    for f in files:
        assert f"`{f.removesuffix('.sse')}`" in table, f


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(EXPECT)), cuts=st.lists(st.integers(0, 10_000), max_size=12))
def test_any_split_gives_the_same_events(name: str, cuts: list[int]) -> None:
    data = _load(name)
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces = [data[i:j] for i, j in zip([0, *points], [*points, len(data)], strict=True)]
    assert normalise(_run(pieces)) == normalise(_run([data]))


def test_url_citation_becomes_citation_with_span() -> None:
    events = _run([_load("openai_url_citation.sse")])
    cites = [e for e in events if e.type == "citations"]
    assert len(cites) == 1
    d = cites[0].to_dict()
    assert d["citations"][0]["source_url"] == "https://www.louvre.fr/?utm_source=openai"
    assert d["citations"][0]["document_title"] == "Musée du Louvre"
    assert d["spans"] == [
        {
            "document_index": 0,
            "start": 23,
            "end": 78,
            "start_utf16": 23,
            "end_utf16": 78,
            "cited_text": None,  # url_citation quotes nothing
            "provider_metadata": None,
        }
    ]
    a = events[-1].answer  # type: ignore[union-attr]
    span = a.citation_spans[0]
    assert a.text[span.start : span.end].startswith("([louvre.fr]")


def test_xai_live_search_citations_on_the_last_chunk() -> None:
    events = _run([_load("xai_live_search_citations.sse")])
    kinds = [e.type for e in events if e.type in ("citations", "finish", "usage")]
    assert kinds == ["citations", "finish", "usage"]  # citations before finish (enrichers)
    a = events[-1].answer  # type: ignore[union-attr]
    assert [c.source_url for c in a.citations] == [
        "https://en.wikipedia.org/wiki/%C3%98resund_Bridge",
        "https://x.com/i/status/1790000000000000000",
    ]


def test_ollama_whole_tool_calls_are_one_event_each() -> None:
    events = _run([_load("ollama_parallel_tool_calls.sse")])
    calls = [e.to_dict() for e in events if e.type == "tool_call"]
    assert [(c["tool_index"], c["id"], c["name"]) for c in calls] == [
        (0, "call_wq3k9z1d", "run_command"),
        (1, "call_7hx2m0pa", "run_command"),
    ]


def test_moonshot_usage_inside_the_choice_is_captured() -> None:
    events = _run([_load("moonshot_reasoning_choice_usage.sse")])
    (usage,) = [e for e in events if e.type == "usage"]
    d = usage.to_dict()
    assert (d["prompt_tokens"], d["completion_tokens"], d["total_tokens"]) == (14, 11, 25)
    a = events[-1].answer  # type: ignore[union-attr]
    assert a.usage is not None and a.usage.total_tokens == 25
    # the usage event comes after the finish it belongs to, as for top-level usage
    kinds = [e.type for e in events if e.type in ("finish", "usage")]
    assert kinds == ["finish", "usage"]


def test_mistral_reference_parts_kept() -> None:
    a = _run([_load("mistral_thinking_parts.sse")])[-1].answer  # type: ignore[union-attr]
    assert a.references == [{"type": "reference", "reference_ids": [1]}]
    assert [r.number for r in a.citation_refs] == [1]


def test_provider_error_status_and_retryable() -> None:
    events = _run([_load("openrouter_reasoning_error.sse")])
    (err,) = [e for e in events if e.type == "error"]
    assert (err.status, err.retryable) == (502, True)  # type: ignore[union-attr]
    events = _run([_load("vllm_error_object.sse")])
    (err,) = [e for e in events if e.type == "error"]
    assert (err.status, err.retryable) == (400, False)  # type: ignore[union-attr]
    assert "maximum context length" in err.message  # type: ignore[union-attr]


_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8)
_delta = st.one_of(
    st.builds(lambda t: ("content", t), _text),
    st.builds(lambda t: ("reasoning_content", t), _text),
    st.builds(lambda t: ("reasoning", t), _text),
    st.builds(lambda t: ("refusal", t), _text),
    st.builds(lambda t: ("thinking", t), _text),
    st.builds(lambda t: ("parts", t), _text),
    st.builds(lambda t: ("tool", t), _text),
)


def _chunk(kind: str, t: str) -> dict[str, Any]:
    delta: dict[str, Any]
    if kind == "thinking":
        delta = {"content": [{"type": "thinking", "thinking": [{"type": "text", "text": t}]}]}
    elif kind == "parts":
        delta = {"content": [{"type": "text", "text": t}]}
    elif kind == "tool":
        delta = {"tool_calls": [{"index": 0, "function": {"arguments": t}}]}
    else:
        delta = {kind: t}
    return {"id": "x", "model": "m", "choices": [{"index": 0, "delta": delta}]}


@settings(max_examples=80, deadline=None)
@given(deltas=st.lists(_delta, max_size=25), cuts=st.lists(st.integers(0, 100_000), max_size=10))
def test_generated_streams_every_kind_any_split(
    deltas: list[tuple[str, str]], cuts: list[int]
) -> None:
    data = b"".join(b"data: " + orjson.dumps(_chunk(k, t)) + b"\n\n" for k, t in deltas)
    data += b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces = [data[i:j] for i, j in zip([0, *points], [*points, len(data)], strict=True)]
    whole = _run([data])
    assert normalise(_run(pieces)) == normalise(whole)
    a = whole[-1].answer  # type: ignore[union-attr]
    want = {
        "text": "".join(t for k, t in deltas if k in ("content", "parts")),
        "reasoning": "".join(
            t for k, t in deltas if k in ("reasoning_content", "reasoning", "thinking")
        ),
        "refusal": "".join(t for k, t in deltas if k == "refusal"),
        "args": "".join(t for k, t in deltas if k == "tool"),
    }
    assert a.text == want["text"]
    assert a.reasoning_text == want["reasoning"]
    assert (a.refusal or "") == want["refusal"]
    assert (a.tool_calls[0].arguments if a.tool_calls else "") == want["args"]
    # Only the tool arguments, random text, may be a (real) error.
    assert {e.code for e in a.errors} <= {"bad_tool_arguments"}
