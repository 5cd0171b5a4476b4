"""Spec suite, Gemini ``streamGenerateContent?alt=sse`` dialect (DESIGN.md "Dialects"): grounding
supports in UTF-8 BYTES converted to character and UTF-16 spans, written against the spec and
Google's documented GenerateContentResponse, independently of the interpreter's code."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests._dialect_streams import (
    GeminiSupport,
    anchored,
    check_run,
    check_spans,
    collect,
    gemini_body,
    gemini_chunk,
    gemini_stream,
    run,
    split_at,
    sse,
    wire,
)

S = GeminiSupport

A = "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AAA"
B = "https://vertexaisearch.cloud.google.com/grounding-api-redirect/BBB"
C = "https://vertexaisearch.cloud.google.com/grounding-api-redirect/CCC"

TEXTS = [
    "Il fait beau à Zürich ☀️ aujourd’hui. ",
    "Jérusalem: ירושלים 🇮🇱 est ",
    "ensoleillée. ",
    "Fin.",
]
WEB = [(A, "météo.ch"), (B, "ynet.co.il"), (A, "météo.ch (dup)"), (C, "wetter.de")]
SUPPORTS = [
    S("Il fait beau à Zürich ☀️ aujourd’hui.", [0]),
    S("Jérusalem: ירושלים 🇮🇱 est ensoleillée.", [1, 3]),
    S("Fin.", [2]),
]


def _grounded(split: bool = False) -> bytes:
    return gemini_stream(TEXTS, web=WEB, supports=SUPPORTS, split_grounding=split)


def test_text_tokens_exactly_as_sent_finish_usage() -> None:
    events = run(gemini_stream(TEXTS), "gemini")
    a = check_run(events)
    g = collect(events)
    assert [e.text for e in g["token"]] == TEXTS
    assert [(e.reason, e.raw_reason) for e in g["finish"]] == [("stop", "STOP")]
    # usageMetadata is cumulative on every chunk: the answer keeps the last
    assert (a.usage.prompt_tokens, a.usage.completion_tokens, a.usage.total_tokens) == (11, 29, 40)
    assert a.complete is True
    assert "error" not in g


def test_thought_parts_are_reasoning() -> None:
    events = run(gemini_stream(["Réponse."], thoughts=["**Planning** ", "the answer…"]), "gemini")
    a = check_run(events)
    assert [e.text for e in collect(events)["reasoning"]] == ["**Planning** ", "the answer…"]
    assert a.reasoning_text == "**Planning** the answer…"
    assert a.text == "Réponse."


def test_function_call_part_is_tool_call() -> None:
    import orjson

    args = {"city": "Zürich", "days": 2}
    data = sse(
        gemini_chunk(
            [{"functionCall": {"name": "get_weather", "args": args}}], finish="STOP", usage=(5, 6)
        )
    )
    events = run(data, "gemini")
    a = check_run(events)
    calls = collect(events)["tool_call"]
    assert calls[0].name == "get_weather"
    assert orjson.loads("".join(e.arguments for e in calls)) == args
    assert len(a.tool_calls) == 1 and a.tool_calls[0].name == "get_weather"
    assert orjson.loads(a.tool_calls[0].arguments) == args


def test_grounding_bytes_converted_to_exact_spans_and_dedup_by_uri() -> None:
    for split in (False, True):
        events = run(_grounded(split), "gemini")
        a = check_run(events)
        assert [c.source_url for c in a.citations] == [A, B, C]
        assert a.citations[0].document_title == "météo.ch"
        check_spans(a)
        assert sorted(anchored(a)) == sorted(
            [
                ("Il fait beau à Zürich ☀️ aujourd’hui.", A),
                ("Jérusalem: ירושלים 🇮🇱 est ensoleillée.", B),
                ("Jérusalem: ירושלים 🇮🇱 est ensoleillée.", C),
                ("Fin.", A),
            ]
        ), split
        # bytes, characters and UTF-16 all differ on the last span
        last = max(a.citation_spans, key=lambda s: s.start)
        assert last.start != len("".join(TEXTS[:3]).encode())
        assert last.start_utf16 != last.start


def test_citations_event_carries_the_grounding() -> None:
    events = run(_grounded(), "gemini")
    cits = collect(events)["citations"]
    assert cits
    assert {c.source_url for ev in cits for c in ev.citations} == {A, B, C}


def test_multibyte_char_straddling_every_chunk_boundary() -> None:
    data = _grounded()
    whole = wire(run(data, "gemini"))
    for needle in ("ü".encode(), "☀️".encode(), "ירושלים".encode(), "🇮🇱".encode()):
        at = data.index(needle)
        for cut in range(at + 1, at + len(needle)):
            assert wire(run(split_at(data, [cut]), "gemini")) == whole, (needle, cut)


def test_error_object_in_stream_is_error() -> None:
    err = sse(
        {
            "error": {
                "code": 429,
                "message": "Resource has been exhausted (e.g. check quota).",
                "status": "RESOURCE_EXHAUSTED",
            }
        }
    )
    events = run(sse(gemini_chunk([{"text": "Par"}])) + err, "gemini")
    a = check_run(events)
    errs = collect(events)["error"]
    assert len(errs) == 1
    assert errs[0].retryable is True
    assert "RESOURCE_EXHAUSTED" in errs[0].code + errs[0].message or errs[0].status == 429
    assert a.complete is False
    assert a.text == "Par"


def test_error_object_as_first_event_auto() -> None:
    err = sse(
        {"error": {"code": 400, "message": "API key not valid.", "status": "INVALID_ARGUMENT"}}
    )
    events = run(err, "auto")
    a = check_run(events)
    errs = collect(events)["error"]
    assert errs and errs[0].retryable is False
    assert a.complete is False


def test_safety_is_content_filter_and_max_tokens_length() -> None:
    for raw, mapped in (("SAFETY", "content_filter"), ("MAX_TOKENS", "length"), ("STOP", "stop")):
        fin = collect(run(gemini_stream(["x"], finish=raw), "gemini"))["finish"]
        assert (fin[0].reason, fin[0].raw_reason) == (mapped, raw)


def test_refusal_by_prompt_feedback_is_not_silent() -> None:
    blocked = sse(
        {
            "promptFeedback": {"blockReason": "SAFETY"},
            "usageMetadata": {"promptTokenCount": 8, "totalTokenCount": 8},
        }
    )
    events = run(blocked, "gemini")
    a = check_run(events)
    g = collect(events)
    assert g.get("error") or g.get("refusal") or a.finish_reason == "content_filter"


def test_footnote_markers_still_citation_refs() -> None:
    events = run(gemini_stream(["Vrai [", "1]. Faux[2", "]."]), "gemini")
    refs = collect(events)["citation_ref"]
    assert [r.number for r in refs] == [1, 2]


def test_unknown_keys_never_crash() -> None:
    odd = sse(
        {
            "candidates": [
                {
                    "index": 0,
                    "content": {
                        "role": "model",
                        "parts": [{"executableCode": {"code": "print(1)"}}],
                    },
                }
            ],
            "novelField": {"a": 1},
        }
    )
    events = run(
        sse(gemini_chunk([{"text": "a"}]))
        + odd
        + sse(gemini_chunk([{"text": "b"}], finish="STOP")),
        "gemini",
    )
    a = check_run(events)
    assert a.text == "ab"


def test_malformed_shapes_are_typed_errors() -> None:
    bad = [
        sse({"candidates": "nope"}),
        sse({"candidates": [{"index": 0, "content": {"parts": [{"text": 5}]}}]}),
        sse(b"{oops"),
        sse(
            {
                "candidates": [
                    {
                        "index": 0,
                        "groundingMetadata": {
                            "groundingSupports": [
                                {"segment": {"endIndex": "x"}, "groundingChunkIndices": [0]}
                            ]
                        },
                    }
                ]
            }
        ),
    ]
    for b in bad:
        events = run(
            sse(gemini_chunk([{"text": "ok"}]))
            + b
            + sse(gemini_chunk([{"text": ""}], finish="STOP")),
            "gemini",
        )
        a = check_run(events)
        assert collect(events).get("error"), b
        assert a.text == "ok"


def test_support_beyond_the_text_is_a_typed_error_not_a_wrong_span() -> None:
    g = {
        "groundingChunks": [{"web": {"uri": A, "title": "t"}}],
        "groundingSupports": [
            {"segment": {"startIndex": 0, "endIndex": 999}, "groundingChunkIndices": [0]}
        ],
    }
    events = run(sse(gemini_chunk([{"text": "short"}], finish="STOP", grounding=g)), "gemini")
    check_run(events)  # every span within the text
    assert collect(events).get("error")


def test_support_pointing_past_the_chunks_or_inside_a_character_never_crashes() -> None:
    text = "é😀x"
    bad_supports = [
        {"segment": {"startIndex": 0, "endIndex": 2}, "groundingChunkIndices": [5]},
        {"segment": {"startIndex": 4, "endIndex": 2}, "groundingChunkIndices": [0]},
        {"segment": {"startIndex": -3, "endIndex": 2}, "groundingChunkIndices": [0]},
    ]
    for sup in bad_supports:
        g = {"groundingChunks": [{"web": {"uri": A, "title": "t"}}], "groundingSupports": [sup]}
        events = run(sse(gemini_chunk([{"text": text}], finish="STOP", grounding=g)), "gemini")
        a = check_run(events)
        assert a.text == text
        assert collect(events).get("error"), sup
    # a byte inside a character: documented as widened to the whole character (never a
    # span that cuts one)
    g = {
        "groundingChunks": [{"web": {"uri": A, "title": "t"}}],
        "groundingSupports": [
            {"segment": {"startIndex": 1, "endIndex": 4}, "groundingChunkIndices": [0]}
        ],
    }
    events = run(sse(gemini_chunk([{"text": text}], finish="STOP", grounding=g)), "gemini")
    a = check_run(events)
    assert [a.text[s.start : s.end] for s in a.citation_spans] in ([], ["é😀"])


def test_auto_detects_from_first_chunk() -> None:
    data = _grounded()
    assert wire(run(data, "auto")) == wire(run(data, "gemini"))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=1 << 20), max_size=12))
def test_any_rechunking_gives_the_same_events(cuts: list[int]) -> None:
    data = _grounded(split=True)
    whole = wire(run(data, "gemini"))
    assert wire(run(split_at(data, [c % len(data) for c in cuts]), "gemini")) == whole


def test_answer_from_response_equals_stream() -> None:
    from streamcite import answer_from_response

    streamed = check_run(run(_grounded(), "gemini"))
    for dialect in ("gemini", "auto"):
        body = answer_from_response(gemini_body(TEXTS, web=WEB, supports=SUPPORTS), dialect=dialect)
        assert body.text == streamed.text
        assert body.citations == streamed.citations
        assert sorted(anchored(body)) == sorted(anchored(streamed))
        check_spans(body)
        assert body.finish_reason == "stop"
        assert body.usage.prompt_tokens == 11 and body.usage.completion_tokens == 29


def test_retrieved_context_chunks_are_citations() -> None:
    text = "Le rapport 2025 indique une hausse de 3 %."
    g = {
        "groundingChunks": [
            {
                "retrievedContext": {
                    "uri": "gs://bucket/rapport-2025.pdf",
                    "title": "rapport-2025.pdf",
                    "text": "hausse de 3 %",
                }
            }
        ],
        "groundingSupports": [
            {
                "segment": {
                    "startIndex": len(b"Le rapport 2025 indique "),
                    "endIndex": len(text.encode()) - 1,
                    "text": "une hausse de 3 %",
                },
                "groundingChunkIndices": [0],
            }
        ],
    }
    events = run(sse(gemini_chunk([{"text": text}], finish="STOP", grounding=g)), "gemini")
    a = check_run(events)
    assert [(c.source_url, c.document_title) for c in a.citations] == [
        ("gs://bucket/rapport-2025.pdf", "rapport-2025.pdf")
    ]
    assert anchored(a) == [("une hausse de 3 %", "gs://bucket/rapport-2025.pdf")]


def test_empty_text_parts_are_not_tokens() -> None:
    data = sse(gemini_chunk([{"text": "a"}])) + sse(
        gemini_chunk([{"text": ""}], finish="STOP", usage=(1, 1))
    )
    events = run(data, "gemini")
    check_run(events)
    assert [e.text for e in collect(events)["token"]] == ["a"]
    assert collect(events)["finish"][0].reason == "stop"


def test_text_and_function_call_in_one_chunk() -> None:
    data = sse(
        gemini_chunk(
            [{"text": "Je vérifie."}, {"functionCall": {"name": "f", "args": {"x": "é"}}}],
            finish="STOP",
        )
    )
    events = run(data, "gemini")
    a = check_run(events)
    assert a.text == "Je vérifie."
    assert [t.name for t in a.tool_calls] == ["f"]
