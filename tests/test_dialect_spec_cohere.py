"""Spec suite, Cohere v2 chat dialect (DESIGN.md "Dialects"), written against the spec and
Cohere's documented stream events, independently of the interpreter's code."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests._dialect_streams import (
    CohereCitation,
    anchored,
    check_run,
    check_spans,
    cohere_body,
    cohere_stream,
    collect,
    flat_values,
    run,
    split_at,
    sse,
    wire,
)

K = CohereCitation

TEXTS = [
    "Selon le manuel 📘 de la pompe, ",
    "graisser toutes les 500 h",
    " (עברית: כל 500 שעות)",
    "; bulletin 2026-04 ",
    "confirme.",
]
MANUAL = ("doc-manual", "Pompe P-301 — manuel", "Graisser toutes les 500 heures.")
BULLETIN = ("doc-bulletin", "Bulletin 2026-04", "Confirmé.", "https://example.org/bulletin")
CITS = [
    K("graisser toutes les 500 h", [MANUAL], after_delta=1),
    K("כל 500 שעות", [MANUAL], after_delta=2),
    K("bulletin 2026-04", [BULLETIN, MANUAL], after_delta=3),
]


def test_text_tokens_exactly_as_sent_finish_usage() -> None:
    events = run(cohere_stream(TEXTS), "cohere")
    a = check_run(events)
    g = collect(events)
    assert [e.text for e in g["token"]] == TEXTS
    assert [(e.reason, e.raw_reason) for e in g["finish"]] == [("stop", "COMPLETE")]
    assert (a.usage.prompt_tokens, a.usage.completion_tokens, a.usage.total_tokens) == (40, 17, 57)
    assert a.complete is True
    assert "error" not in g


def test_thinking_content_is_reasoning() -> None:
    events = run(cohere_stream(["Oui."], thinking=["Now", " I think…"]), "cohere")
    a = check_run(events)
    assert [e.text for e in collect(events)["reasoning"]] == ["Now", " I think…"]
    assert a.reasoning_text == "Now I think…"
    assert a.text == "Oui."


def test_tool_calls() -> None:
    frags = ['{\n    "', 'city": "Zürich"', "\n}"]
    events = run(
        cohere_stream(
            [],
            tools=[("get_weather_abc", "get_weather", frags), ("t2", "other", ["{}"])],
            finish="TOOL_CALL",
        ),
        "cohere",
    )
    a = check_run(events)
    calls = collect(events)["tool_call"]
    assert calls[0].id == "get_weather_abc" and calls[0].name == "get_weather"
    assert len({e.tool_index for e in calls}) == 2
    assert [(t.id, t.name, t.arguments) for t in a.tool_calls] == [
        ("get_weather_abc", "get_weather", "".join(frags)),
        ("t2", "other", "{}"),
    ]
    fin = collect(events)["finish"]
    assert (fin[0].reason, fin[0].raw_reason) == ("tool_calls", "TOOL_CALL")


def test_citations_live_deduplicated_spans_exact() -> None:
    for thinking in ((), ("Hmm",)):
        events = run(cohere_stream(TEXTS, citations=CITS, thinking=thinking), "cohere")
        a = check_run(events)
        types = [e.type for e in events]
        first = types.index("citations")
        assert "".join(e.text for e in events[:first] if e.type == "token") == "".join(TEXTS[:2])
        titles = [c.document_title for c in a.citations]
        assert titles == ["Pompe P-301 — manuel", "Bulletin 2026-04"]
        assert a.citations[1].source_url == "https://example.org/bulletin"
        # "cited_text <- cited_text/segment/text": Cohere's citation `text` (the answer's
        # span) or its document's `text`; docs/provider-streams.md chose the document's
        assert a.citations[0].cited_text in ("graisser toutes les 500 h", MANUAL[2])
        check_spans(a)
        assert sorted(anchored(a)) == sorted(
            [
                ("graisser toutes les 500 h", "Pompe P-301 — manuel"),
                ("כל 500 שעות", "Pompe P-301 — manuel"),
                ("bulletin 2026-04", "https://example.org/bulletin"),
                ("bulletin 2026-04", "Pompe P-301 — manuel"),
            ]
        )
        s = a.citation_spans[0]
        assert s.start_utf16 == s.start + 1  # the 📘 before it is two UTF-16 units


def test_error_finish_is_error_incomplete() -> None:
    data = cohere_stream(
        ["Part"],
        error=("INVALID_TOOL_GENERATION", "your request resulted in an invalid tool generation"),
    )
    events = run(data, "cohere")
    a = check_run(events)
    errs = collect(events)["error"]
    assert errs and "invalid" in (errs[0].code + errs[0].message).lower()
    assert a.complete is False
    assert a.text == "Part"


def test_max_tokens_is_length() -> None:
    fin = collect(run(cohere_stream(["x"], finish="MAX_TOKENS"), "cohere"))["finish"]
    assert (fin[0].reason, fin[0].raw_reason) == ("length", "MAX_TOKENS")


def test_footnote_markers_still_citation_refs() -> None:
    refs = collect(run(cohere_stream(["Vrai [", "1]. Faux[2", "]."]), "cohere"))["citation_ref"]
    assert [r.number for r in refs] == [1, 2]


def test_unknown_events_and_tool_plan_never_crash() -> None:
    tail = sse(
        {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "I will…"}}},
        "tool-plan-delta",
    ) + sse({"type": "quantum-delta", "index": 0}, "quantum-delta")
    events = run(cohere_stream(["ok"], tail=tail), "cohere")
    a = check_run(events)
    assert a.text == "ok"


def test_malformed_shapes_are_typed_errors() -> None:
    bad = [
        sse(
            {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": 7}}}},
            "content-delta",
        ),
        sse(
            {
                "type": "citation-start",
                "index": 0,
                "delta": {"message": {"citations": {"start": "a", "end": 2, "sources": []}}},
            },
            "citation-start",
        ),
        sse(b"{broken", "content-delta"),
    ]
    for tail in bad:
        events = run(cohere_stream(["ok"], tail=tail), "cohere")
        a = check_run(events)
        assert collect(events).get("error"), tail
        assert a.text == "ok"


def test_auto_detects_from_message_start() -> None:
    data = cohere_stream(TEXTS, citations=CITS)
    assert wire(run(data, "auto")) == wire(run(data, "cohere"))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=1 << 20), max_size=12))
def test_any_rechunking_gives_the_same_events(cuts: list[int]) -> None:
    data = cohere_stream(TEXTS, citations=CITS, thinking=["θ"], tools=[("t", "f", ['{"a"', ":1}"])])
    whole = wire(run(data, "cohere"))
    assert wire(run(split_at(data, [c % len(data) for c in cuts]), "cohere")) == whole


def test_answer_from_response_equals_stream() -> None:
    from streamcite import answer_from_response

    streamed = check_run(run(cohere_stream(TEXTS, citations=CITS), "cohere"))
    for dialect in ("cohere", "auto"):
        body = answer_from_response(cohere_body(TEXTS, citations=CITS), dialect=dialect)
        assert body.text == streamed.text
        assert body.citations == streamed.citations
        assert sorted(anchored(body)) == sorted(anchored(streamed))
        check_spans(body)
        assert body.finish_reason == "stop"
        assert body.usage.prompt_tokens == 40 and body.usage.completion_tokens == 17


def test_tool_source_citation() -> None:
    text = "The magic number is 5, twice: 5."
    src = {"type": "tool", "id": "magic_function_yy:0", "tool_output": {"output": "5"}}
    cits = [
        {
            "start": 20,
            "end": 21,
            "text": "5",
            "sources": [src],
            "type": "TEXT_CONTENT",
            "content_index": 0,
        },
        {
            "start": 30,
            "end": 31,
            "text": "5",
            "sources": [src],
            "type": "TEXT_CONTENT",
            "content_index": 0,
        },
    ]
    tail = b"".join(
        sse(
            {"type": "citation-start", "index": k, "delta": {"message": {"citations": c}}},
            "citation-start",
        )
        + sse({"type": "citation-end", "index": k}, "citation-end")
        for k, c in enumerate(cits)
    )
    events = run(cohere_stream([text], tail=tail), "cohere")
    a = check_run(events)
    assert "error" not in collect(events)
    assert len(a.citations) == 1  # one source, cited twice
    assert (
        "magic_function_yy:0" in flat_values(a.citations[0].provider_metadata)
        or a.citations[0].document_title
    )
    assert [(a.text[s.start : s.end], s.start) for s in a.citation_spans] == [("5", 20), ("5", 30)]


def test_empty_content_delta_is_not_a_token() -> None:
    events = run(cohere_stream(["", "a"]), "cohere")
    check_run(events)
    assert [e.text for e in collect(events)["token"]] == ["a"]


def test_citation_outside_the_text_is_a_typed_error() -> None:
    src = {"type": "document", "id": "d1", "document": {"id": "d1", "title": "T", "text": "x"}}
    for start, end in ((0, 999), (3, 1), (-2, 1)):
        c = {
            "start": start,
            "end": end,
            "sources": [src],
            "type": "TEXT_CONTENT",
            "content_index": 0,
        }
        tail = sse(
            {"type": "citation-start", "index": 0, "delta": {"message": {"citations": c}}},
            "citation-start",
        )
        events = run(cohere_stream(["court"], tail=tail), "cohere")
        a = check_run(events)
        assert a.text == "court"
        assert collect(events).get("error"), (start, end)
