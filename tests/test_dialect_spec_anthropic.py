"""Spec suite, Anthropic Messages dialect (DESIGN.md "Dialects"), written against the spec and
Anthropic's documented stream, independently of the interpreter's code."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests._dialect_streams import (
    AnthropicBlock,
    anchored,
    anthropic_body,
    anthropic_error,
    anthropic_stream,
    check_run,
    check_spans,
    collect,
    flat_values,
    run,
    split_at,
    sse,
    wire,
)

B = AnthropicBlock

WIKI = "https://he.wikipedia.org/wiki/ירושלים"
BRIT = "https://www.britannica.com/place/Jerusalem"


def _web(url: str, title: str, cited: str, enc: str = "EpMBCioICRgCIiQ") -> dict[str, Any]:
    return {
        "type": "web_search_result_location",
        "cited_text": cited,
        "url": url,
        "title": title,
        "encrypted_index": enc,
    }


CITED = [
    B("text", ["La capitale d’Israël ", "selon "]),
    B(
        "text",
        ["est Jéru", "salem 🇮🇱"],
        citations=[_web(WIKI, "ירושלים – ויקיפדיה", "ירושלים היא בירת ישראל")],
    ),
    B("text", [", dit שלום; "]),
    B(
        "text",
        ["elle a 3000 ans 🏛️"],
        citations=[
            _web(BRIT, "Jerusalem | Britannica", "about 3,000 years"),
            _web(WIKI, "dup title", "again"),
        ],
    ),
    B("text", ["."]),
]


def test_text_tokens_exactly_as_sent_finish_usage_meta() -> None:
    deltas = ["Bon", "jour", " — ", "שלום", " 👋🏽", "!"]
    events = run(anthropic_stream([B("text", deltas)]), "anthropic")
    a = check_run(events)
    g = collect(events)
    assert [e.text for e in g["token"]] == deltas
    assert a.text == "".join(deltas)
    assert [(e.reason, e.raw_reason) for e in g["finish"]] == [("stop", "end_turn")]
    assert a.finish_reason == "stop"
    assert (a.usage.prompt_tokens, a.usage.completion_tokens, a.usage.total_tokens) == (21, 34, 55)
    assert a.id == "msg_01SpecSuite" and a.model == "claude-sonnet-4-5"
    assert a.complete is True
    assert "error" not in g  # ping is documented-ignored, not an error


def test_thinking_is_reasoning_signature_ignored() -> None:
    thought = ["Let me think", " about Jérusalem…"]
    events = run(anthropic_stream([B("thinking", thought), B("text", ["Answer."])]), "anthropic")
    a = check_run(events)
    g = collect(events)
    assert [e.text for e in g["reasoning"]] == thought
    assert a.reasoning_text == "".join(thought)
    assert a.text == "Answer."
    assert "EqQB" not in a.text + a.reasoning_text
    assert "error" not in g


def test_tool_use_is_tool_call_events_and_answer_tool_calls() -> None:
    frags = ['{"city"', ': "Tel ', 'Aviv-יפו"}']
    blocks = [B("text", ["Checking."]), B("tool_use", frags, id="toolu_01A", name="get_weather")]
    events = run(anthropic_stream(blocks, stop_reason="tool_use"), "anthropic")
    a = check_run(events)
    g = collect(events)
    calls = g["tool_call"]
    assert calls[0].id == "toolu_01A" and calls[0].name == "get_weather"
    assert "".join(e.arguments for e in calls) == "".join(frags)
    assert len({e.tool_index for e in calls}) == 1
    assert [(t.id, t.name, t.arguments) for t in a.tool_calls] == [
        ("toolu_01A", "get_weather", "".join(frags))
    ]
    assert (g["finish"][0].reason, g["finish"][0].raw_reason) == ("tool_calls", "tool_use")


def test_citations_live_deduplicated_fields_and_spans_exact() -> None:
    events = run(anthropic_stream(CITED), "anthropic")
    a = check_run(events)
    types = [e.type for e in events]
    # live: the first citations event comes before the cited block's text, not at the end
    first_cit = types.index("citations")
    tokens_before = [e.text for e in events[:first_cit] if e.type == "token"]
    assert "".join(tokens_before) == "La capitale d’Israël selon "
    assert types.index("finish") > first_cit
    # one Citation per distinct URL, the eight fields mapped
    assert [c.source_url for c in a.citations] == [WIKI, BRIT]
    wiki, brit = a.citations
    assert wiki.document_title == "ירושלים – ויקיפדיה"
    assert wiki.cited_text == "ירושלים היא בירת ישראל"
    assert brit.document_title == "Jerusalem | Britannica"
    assert brit.cited_text == "about 3,000 years"
    assert "encrypted_index" in wiki.provider_metadata
    # spans: the text block each citation belongs to, in characters and UTF-16
    check_spans(a)
    assert sorted(anchored(a)) == sorted(
        [("est Jérusalem 🇮🇱", WIKI), ("elle a 3000 ans 🏛️", BRIT), ("elle a 3000 ans 🏛️", WIKI)]
    )


def test_document_citations_char_and_page_location() -> None:
    char = {
        "type": "char_location",
        "cited_text": "The grass is green.",
        "document_index": 0,
        "document_title": "Nature facts",
        "start_char_index": 0,
        "end_char_index": 19,
    }
    page = {
        "type": "page_location",
        "cited_text": "Le ciel est bleu.",
        "document_index": 1,
        "document_title": "Ciel.pdf",
        "start_page_number": 7,
        "end_page_number": 8,
    }
    char_again = dict(char, cited_text="The grass", end_char_index=9)
    blocks = [
        B("text", ["Facts: "]),
        B("text", ["grass is green"], citations=[char]),
        B("text", [" and "]),
        B("text", ["the sky blue"], citations=[page, char_again]),
    ]
    events = run(anthropic_stream(blocks), "anthropic")
    a = check_run(events)
    assert [c.document_title for c in a.citations] == ["Nature facts", "Ciel.pdf"]
    assert a.citations[0].cited_text == "The grass is green."
    assert a.citations[0].source_url is None
    assert 7 in flat_values(a.citations[1].provider_metadata)
    assert sorted(anchored(a)) == sorted(
        [
            ("grass is green", "Nature facts"),
            ("the sky blue", "Ciel.pdf"),
            ("the sky blue", "Nature facts"),
        ]
    )


def test_overloaded_error_event_mid_stream_is_retryable_error() -> None:
    data = anthropic_stream([B("text", ["Partial ", "answ"])], tail=anthropic_error(), stop=False)
    events = run(data, "anthropic")
    a = check_run(events)
    errs = collect(events)["error"]
    assert len(errs) == 1
    assert errs[0].retryable is True
    assert "overloaded" in (errs[0].code + errs[0].message).lower()
    assert a.text == "Partial answ"
    assert a.complete is False


def test_invalid_request_error_event_is_not_retryable() -> None:
    data = anthropic_stream([], tail=anthropic_error("invalid_request_error", "bad"), stop=False)
    events = run(data, "anthropic")
    a = check_run(events)
    errs = collect(events)["error"]
    assert errs and errs[0].retryable is False
    assert a.complete is False


def test_refusal_stop_reason() -> None:
    events = run(
        anthropic_stream([B("text", ["I can't help with that."])], stop_reason="refusal"),
        "anthropic",
    )
    a = check_run(events)
    fin = collect(events)["finish"]
    assert fin[0].raw_reason == "refusal"
    assert fin[0].reason in ("refusal", "content_filter")
    assert a.finish_reason == fin[0].reason


def test_max_tokens_is_length() -> None:
    events = run(anthropic_stream([B("text", ["Cut"])], stop_reason="max_tokens"), "anthropic")
    fin = collect(events)["finish"]
    assert (fin[0].reason, fin[0].raw_reason) == ("length", "max_tokens")


def test_footnote_markers_still_citation_refs() -> None:
    events = run(
        anthropic_stream([B("text", ["Paris [", "1] est belle", "[2", "].", " Fin [3, 4]"])]),
        "anthropic",
    )
    check_run(events)
    refs = collect(events)["citation_ref"]
    assert [r.number for r in refs] == [1, 2, 3, 4]
    assert refs[0].offset == len("Paris ")
    assert refs[0].document_index == 0


def test_unknown_event_types_never_crash() -> None:
    tail = sse({"type": "content_block_future", "index": 9, "x": 1}, "content_block_future") + sse(
        {"type": "content_block_delta", "index": 0, "delta": {"type": "hologram_delta", "h": 1}},
        "content_block_delta",
    )
    events = run(anthropic_stream([B("text", ["Still ", "here"])], tail=tail), "anthropic")
    a = check_run(events)
    assert a.text == "Still here"
    for e in collect(events).get("error", []):
        assert isinstance(e.code, str) and e.code


def test_malformed_shapes_are_typed_errors() -> None:
    bad = [
        sse(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": 42},
            },
            "content_block_delta",
        ),
        sse(b"{not json", "content_block_delta"),
        sse({"type": "message_delta", "delta": "oops", "usage": None}, "message_delta"),
    ]
    for tail in bad:
        events = run(anthropic_stream([B("text", ["ok"])], tail=tail), "anthropic")
        a = check_run(events)
        assert collect(events).get("error"), tail
        assert a.text == "ok"


def test_auto_detects_from_message_start() -> None:
    data = anthropic_stream(CITED)
    assert wire(run(data, "auto")) == wire(run(data, "anthropic"))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=1 << 20), max_size=12))
def test_any_rechunking_gives_the_same_events(cuts: list[int]) -> None:
    data = anthropic_stream(
        [*CITED, B("thinking", ["θ…"]), B("tool_use", ['{"q":', '"é"}'], id="t1", name="f")]
    )
    whole = wire(run(data, "anthropic"))
    assert wire(run(split_at(data, [c % len(data) for c in cuts]), "anthropic")) == whole


def test_every_byte_split_of_a_multibyte_stream() -> None:
    data = anthropic_stream(CITED)
    whole = wire(run(data, "anthropic"))
    start = data.index("Jéru".encode())
    for cut in range(start, start + 12):
        assert wire(run(split_at(data, [cut]), "anthropic")) == whole


def test_answer_from_response_equals_stream() -> None:
    from streamcite import answer_from_response

    blocks = [*CITED, B("tool_use", ['{"q": "x"}'], id="toolu_9", name="search")]
    streamed = check_run(run(anthropic_stream(blocks), "anthropic"))
    for dialect in ("anthropic", "auto"):
        body = answer_from_response(anthropic_body(blocks), dialect=dialect)
        assert body.text == streamed.text
        assert body.citations == streamed.citations
        assert sorted(anchored(body)) == sorted(anchored(streamed))
        check_spans(body)
        assert [(t.id, t.name) for t in body.tool_calls] == [("toolu_9", "search")]
        assert body.finish_reason == "stop"
        assert body.usage.prompt_tokens == 21 and body.usage.completion_tokens == 34


SERVER = [
    B("server_tool_use", ['{"query":', ' "ירושלים"}'], id="srvtoolu_01", name="web_search"),
    B(
        "web_search_tool_result",
        id="srvtoolu_01",
        citations=[
            {
                "type": "web_search_result",
                "title": "ירושלים – ויקיפדיה",
                "url": WIKI,
                "encrypted_content": "Eo4UCioICRgCIiRi",
                "page_age": None,
            }
        ],
    ),
    B("text", ["Voici: "]),
    B("text", ["Jérusalem 🇮🇱"], citations=[_web(WIKI, "ירושלים – ויקיפדיה", "ירושלים")]),
]


def test_server_web_search_blocks_are_not_text_and_not_errors() -> None:
    events = run(anthropic_stream(SERVER), "anthropic")
    a = check_run(events)
    assert a.text == "Voici: Jérusalem 🇮🇱"
    assert "error" not in collect(events)
    assert [c.source_url for c in a.citations] == [WIKI]
    assert anchored(a) == [("Jérusalem 🇮🇱", WIKI)]


def test_all_five_location_types_become_citations() -> None:
    cits = [
        _web(WIKI, "W", "w"),
        {
            "type": "char_location",
            "cited_text": "c",
            "document_index": 0,
            "document_title": "Doc0",
            "start_char_index": 0,
            "end_char_index": 1,
        },
        {
            "type": "page_location",
            "cited_text": "p",
            "document_index": 1,
            "document_title": "Doc1",
            "start_page_number": 2,
            "end_page_number": 3,
        },
        {
            "type": "content_block_location",
            "cited_text": "b",
            "document_index": 2,
            "document_title": "Doc2",
            "start_block_index": 0,
            "end_block_index": 1,
        },
        {
            "type": "search_result_location",
            "cited_text": "s",
            "source": "https://docs.example.org/result",
            "title": "Result",
            "search_result_index": 0,
            "start_block_index": 0,
            "end_block_index": 1,
        },
    ]
    events = run(anthropic_stream([B("text", ["Tout ", "ça."], citations=cits)]), "anthropic")
    a = check_run(events)
    assert "error" not in collect(events)
    assert len(a.citations) == 5
    assert {c.document_title for c in a.citations} == {"W", "Doc0", "Doc1", "Doc2", "Result"}
    assert {c.cited_text for c in a.citations} == {"w", "c", "p", "b", "s"}
    assert len(a.citation_spans) == 5
    assert {a.text[s.start : s.end] for s in a.citation_spans} == {"Tout ça."}


def test_server_blocks_body_equals_stream() -> None:
    from streamcite import answer_from_response

    streamed = check_run(run(anthropic_stream(SERVER), "anthropic"))
    body = answer_from_response(anthropic_body(SERVER), dialect="anthropic")
    assert body.text == streamed.text
    assert body.citations == streamed.citations
    assert anchored(body) == anchored(streamed)


def test_empty_text_delta_is_not_a_token() -> None:
    events = run(anthropic_stream([B("text", ["", "a", ""])]), "anthropic")
    check_run(events)
    assert [e.text for e in collect(events)["token"]] == ["a"]
