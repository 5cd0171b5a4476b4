"""Spec suite, OpenAI Responses dialect (DESIGN.md "Dialects"), written against the spec and
OpenAI's documented streaming events, independently of the interpreter's code."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests._dialect_streams import (
    ResponsesItem,
    anchored,
    check_run,
    check_spans,
    collect,
    flat_values,
    responses_body,
    responses_stream,
    run,
    split_at,
    sse,
    wire,
)

R = ResponsesItem

LEMONDE = "https://www.lemonde.fr/café"
YNET = "https://www.ynet.co.il/שלום"

TEXT = [
    "Selon Le Monde, ",
    "le café coûte 2 € 😀 ",
    "à Paris",
    "; en Israël, ",
    "שלום עולם",
    " dit Ynet.",
]
JOINED = "".join(TEXT)


def _url(url: str, title: str, piece: str) -> dict[str, Any]:
    i = JOINED.index(piece)
    return {
        "type": "url_citation",
        "url": url,
        "title": title,
        "start_index": i,
        "end_index": i + len(piece),
    }


ANNS = [
    (2, _url(LEMONDE, "Le café à Paris", "le café coûte 2 € 😀 à Paris")),
    (4, _url(YNET, "ynet", "שלום עולם")),
    (5, _url(LEMONDE, "Le café à Paris (again)", "Selon Le Monde")),
]
CITED = [R("message", TEXT, annotations=ANNS, id="msg_1")]


def test_text_tokens_exactly_as_sent_finish_usage() -> None:
    events = run(responses_stream([R("message", TEXT)]), "responses")
    a = check_run(events)
    g = collect(events)
    assert [e.text for e in g["token"]] == TEXT
    assert [(e.reason, e.raw_reason) for e in g["finish"]] == [("stop", "completed")]
    assert (a.usage.prompt_tokens, a.usage.completion_tokens, a.usage.total_tokens) == (30, 12, 42)
    assert a.id == "resp_spec01" and a.model == "gpt-4.1-mini"
    assert a.complete is True
    assert "error" not in g
    # the full text again in output_text.done / output_item.done / completed is not repeated
    assert a.text == JOINED


def test_reasoning_summary_is_reasoning() -> None:
    summ = ["**Pondering**", " the café…"]
    events = run(responses_stream([R("reasoning", summ), R("message", ["Oui."])]), "responses")
    a = check_run(events)
    g = collect(events)
    assert [e.text for e in g["reasoning"]] == summ
    assert a.reasoning_text == "".join(summ)
    assert a.text == "Oui."


def test_reasoning_text_delta_is_reasoning() -> None:
    tail = sse(
        {
            "type": "response.reasoning_text.delta",
            "item_id": "rs_1",
            "output_index": 0,
            "content_index": 0,
            "delta": "raw θ",
            "sequence_number": 99,
        },
        "response.reasoning_text.delta",
    )
    events = run(responses_stream([R("message", ["x"])], tail=tail), "responses")
    assert [e.text for e in collect(events)["reasoning"]] == ["raw θ"]


def test_function_call_is_tool_call() -> None:
    frags = ['{"ci', 'ty": "Zürich', '"}']
    events = run(
        responses_stream(
            [R("function_call", frags, call_id="call_abc", name="get_weather", id="fc_1")]
        ),
        "responses",
    )
    a = check_run(events)
    calls = collect(events)["tool_call"]
    assert calls[0].name == "get_weather"
    assert calls[0].id in ("call_abc", "fc_1")
    assert "".join(e.arguments for e in calls) == "".join(frags)
    assert len(a.tool_calls) == 1
    assert (a.tool_calls[0].name, a.tool_calls[0].arguments) == ("get_weather", "".join(frags))
    assert a.tool_calls[0].id == calls[0].id


def test_url_citations_live_deduplicated_spans_exact() -> None:
    events = run(responses_stream(CITED), "responses")
    a = check_run(events)
    types = [e.type for e in events]
    first = types.index("citations")
    # live: right after the delta it follows, before the next token
    assert "".join(e.text for e in events[:first] if e.type == "token") == "".join(TEXT[:3])
    assert [c.source_url for c in a.citations] == [LEMONDE, YNET]
    assert a.citations[0].document_title == "Le café à Paris"
    check_spans(a)
    assert anchored(a) == [
        ("le café coûte 2 € 😀 à Paris", LEMONDE),
        ("שלום עולם", YNET),
        ("Selon Le Monde", LEMONDE),
    ]
    # the emoji before the Ynet span makes UTF-16 and characters differ
    s = a.citation_spans[1]
    assert s.start_utf16 == s.start + 1


def test_file_citation_deduplicated_by_file_id() -> None:
    text = ["The manual says grease every 500 h.", " Use NLGI 2."]
    anns = [
        (
            0,
            {"type": "file_citation", "file_id": "file-9Rh", "filename": "manual.pdf", "index": 35},
        ),
        (
            1,
            {"type": "file_citation", "file_id": "file-9Rh", "filename": "manual.pdf", "index": 47},
        ),
        (
            1,
            {
                "type": "file_citation",
                "file_id": "file-XY",
                "filename": "bulletin.txt",
                "index": 47,
            },
        ),
    ]
    events = run(responses_stream([R("message", text, annotations=anns)]), "responses")
    a = check_run(events)
    assert [c.document_title for c in a.citations] == ["manual.pdf", "bulletin.txt"]
    assert "file-9Rh" in flat_values(a.citations[0].provider_metadata)
    assert a.citations[0].source_url is None


def test_response_failed_is_error_incomplete() -> None:
    failed = sse(
        {
            "type": "response.failed",
            "sequence_number": 50,
            "response": {
                "id": "resp_spec01",
                "object": "response",
                "status": "failed",
                "error": {"code": "server_error", "message": "The model failed."},
                "output": [],
            },
        },
        "response.failed",
    )
    events = run(responses_stream([R("message", ["Half"])], tail=failed, end=False), "responses")
    a = check_run(events)
    errs = collect(events)["error"]
    assert errs and "server_error" in errs[0].code + errs[0].message
    assert a.complete is False
    assert a.text == "Half"


def test_error_event_is_error() -> None:
    err = sse(
        {
            "type": "error",
            "sequence_number": 2,
            "code": "insufficient_quota",
            "message": "You exceeded your quota.",
            "param": None,
        },
        "error",
    )
    events = run(responses_stream([], tail=err, end=False), "responses")
    a = check_run(events)
    errs = collect(events)["error"]
    assert errs and "insufficient_quota" in errs[0].code + errs[0].message
    assert a.complete is False


def test_error_event_with_nested_error_object_is_error() -> None:
    # as recorded from the API (the error fields under "error"), beside the documented flat form
    err = sse(
        {
            "type": "error",
            "sequence_number": 2,
            "error": {
                "type": "server_error",
                "code": "server_error",
                "message": "Try again.",
                "param": None,
            },
        },
        "error",
    )
    events = run(responses_stream([R("message", ["a"])], tail=err, end=False), "responses")
    a = check_run(events)
    errs = collect(events)["error"]
    assert errs and "server_error" in errs[0].code + errs[0].message
    assert a.complete is False


def test_refusal_delta_is_refusal() -> None:
    events = run(responses_stream([R("refusal", ["I'm sorry, ", "I can't help."])]), "responses")
    a = check_run(events)
    g = collect(events)
    assert [e.text for e in g["refusal"]] == ["I'm sorry, ", "I can't help."]
    assert a.refusal == "I'm sorry, I can't help."
    assert a.text == ""


def test_incomplete_max_output_tokens_is_length() -> None:
    events = run(
        responses_stream(
            [R("message", ["Cut"])], status="incomplete", incomplete_reason="max_output_tokens"
        ),
        "responses",
    )
    a = check_run(events)
    fin = collect(events)["finish"]
    assert fin[0].reason == "length"
    assert fin[0].raw_reason in ("max_output_tokens", "incomplete")
    assert a.finish_reason == "length"


def test_footnote_markers_still_citation_refs() -> None:
    events = run(responses_stream([R("message", ["Vrai [", "1]. Faux[2", "]."])]), "responses")
    refs = collect(events)["citation_ref"]
    assert [r.number for r in refs] == [1, 2]
    assert refs[0].offset == len("Vrai ")


def test_unknown_and_progress_events_never_crash() -> None:
    tail = sse(
        {
            "type": "response.web_search_call.searching",
            "item_id": "ws_1",
            "output_index": 0,
            "sequence_number": 77,
        },
        "response.web_search_call.searching",
    ) + sse(
        {"type": "response.teleport.delta", "sequence_number": 78, "delta": "?"},
        "response.teleport.delta",
    )
    events = run(responses_stream([R("message", ["ok"])], tail=tail), "responses")
    a = check_run(events)
    assert a.text == "ok"
    for e in collect(events).get("error", []):
        assert e.code


def test_malformed_shapes_are_typed_errors() -> None:
    bad = [
        sse(
            {
                "type": "response.output_text.delta",
                "item_id": "m",
                "output_index": 0,
                "content_index": 0,
                "delta": ["x"],
                "sequence_number": 60,
            },
            "response.output_text.delta",
        ),
        sse(b"[1, 2", "response.output_text.delta"),
        sse(
            {
                "type": "response.output_text.annotation.added",
                "annotation": "nope",
                "sequence_number": 61,
            },
            "response.output_text.annotation.added",
        ),
    ]
    for tail in bad:
        events = run(responses_stream([R("message", ["ok"])], tail=tail), "responses")
        a = check_run(events)
        assert collect(events).get("error"), tail
        assert a.text == "ok"


def test_auto_detects_from_response_created() -> None:
    data = responses_stream(CITED)
    assert wire(run(data, "auto")) == wire(run(data, "responses"))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=1 << 20), max_size=12))
def test_any_rechunking_gives_the_same_events(cuts: list[int]) -> None:
    data = responses_stream(
        [R("reasoning", ["θ"]), *CITED, R("function_call", ['{"a":', "1}"], call_id="c", name="f")]
    )
    whole = wire(run(data, "responses"))
    assert wire(run(split_at(data, [c % len(data) for c in cuts]), "responses")) == whole


def test_answer_from_response_equals_stream() -> None:
    from streamcite import answer_from_response

    items = [*CITED, R("function_call", ['{"q": "x"}'], call_id="call_9", name="search")]
    streamed = check_run(run(responses_stream(items), "responses"))
    for dialect in ("responses", "auto"):
        body = answer_from_response(responses_body(items), dialect=dialect)
        assert body.text == streamed.text
        assert body.citations == streamed.citations
        assert anchored(body) == anchored(streamed)
        check_spans(body)
        assert [(t.name, t.arguments) for t in body.tool_calls] == [("search", '{"q": "x"}')]
        assert body.usage.prompt_tokens == 30 and body.usage.completion_tokens == 12


def test_annotations_of_a_second_message_index_its_own_text() -> None:
    # start_index/end_index count within the output_text part: the second message's spans
    # must be shifted by the text before it
    first = "Je cherche 🙂 — "
    second = ["Le Mont Columbia (3 747 m) ", "est le plus haut d’Alberta."]
    piece = "est le plus haut d’Alberta"
    i = "".join(second).index(piece)
    ann = {
        "type": "url_citation",
        "url": LEMONDE,
        "title": "t",
        "start_index": i,
        "end_index": i + len(piece),
    }
    items = [
        R("reasoning", ["θ"]),
        R("message", [first]),
        R("web_search", id="ws_1"),
        R("message", second, annotations=[(1, ann)]),
    ]
    events = run(responses_stream(items), "responses")
    a = check_run(events)
    assert a.text == first + "".join(second)
    assert "error" not in collect(events)  # web-search progress events are documented-ignored
    assert anchored(a) == [(piece, LEMONDE)]
    from streamcite import answer_from_response

    body = answer_from_response(responses_body(items), dialect="responses")
    assert body.text == a.text
    assert anchored(body) == [(piece, LEMONDE)]


def test_annotation_outside_the_text_is_a_typed_error() -> None:
    for start, end in ((0, 999), (3, 1), (-1, 2)):
        ann = {
            "type": "url_citation",
            "url": YNET,
            "title": "t",
            "start_index": start,
            "end_index": end,
        }
        events = run(
            responses_stream([R("message", ["court"], annotations=[(0, ann)])]), "responses"
        )
        a = check_run(events)  # never a span outside the text
        assert a.text == "court"
        assert collect(events).get("error"), (start, end)
