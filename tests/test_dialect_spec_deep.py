"""Spec suite, second round: the finer points of each dialect's contract (DESIGN.md "Dialects",
docs/provider-streams.md): what a live consumer sees in the ``citations`` events, grounding
that accumulates, offsets relative to their own part, parallel calls, and bodies beyond text."""

from __future__ import annotations

from typing import Any

import pytest

from tests import test_dialect_spec_anthropic as t_anthropic
from tests import test_dialect_spec_cohere as t_cohere
from tests import test_dialect_spec_gemini as t_gemini
from tests import test_dialect_spec_responses as t_responses
from tests._dialect_streams import (
    AnthropicBlock,
    ResponsesItem,
    anchored,
    anthropic_stream,
    check_run,
    cohere_stream,
    collect,
    gemini_chunk,
    responses_stream,
    run,
    sse,
)

B = AnthropicBlock
R = ResponsesItem

CITED = {
    "anthropic": anthropic_stream([*t_anthropic.SERVER, *t_anthropic.CITED]),
    "responses": responses_stream(t_responses.CITED),
    "gemini": t_gemini._grounded(split=True),
    "cohere": cohere_stream(t_cohere.TEXTS, citations=t_cohere.CITS, thinking=["θ"]),
}


@pytest.mark.parametrize("dialect", sorted(CITED))
def test_last_citations_event_is_the_answers_citations_and_spans(dialect: str) -> None:
    # "every citations event carries the whole list so far and every span so far (consumers
    # replace theirs)": a live consumer ends with what the answer has
    events = run(CITED[dialect], dialect)
    a = check_run(events)
    last = collect(events)["citations"][-1]
    assert last.citations == a.citations
    assert last.spans == a.citation_spans
    for ev in collect(events)["citations"]:
        for s in ev.spans:  # every span a live consumer saw slices the final text the same way
            assert s in a.citation_spans


# --- Gemini grounding that accumulates --------------------------------------------------------

A, B_, C = t_gemini.A, t_gemini.B, t_gemini.C


def _sup(text: str, piece: str, idx: list[int]) -> dict[str, Any]:
    i = text.index(piece)
    return {
        "segment": {
            "startIndex": len(text[:i].encode()),
            "endIndex": len(text[:i].encode()) + len(piece.encode()),
            "text": piece,
        },
        "groundingChunkIndices": idx,
    }


def test_gemini_cumulative_metadata_repeated_on_every_chunk() -> None:
    t1, t2 = "Zürich ☀️ est belle. ", "Tel Aviv 🌊 aussi."
    text = t1 + t2
    web = [{"web": {"uri": A, "title": "a"}}, {"web": {"uri": B_, "title": "b"}}]
    g1 = {"groundingChunks": web[:1], "groundingSupports": [_sup(text, "Zürich ☀️ est belle.", [0])]}
    g2 = {
        "groundingChunks": web,
        "groundingSupports": [
            _sup(text, "Zürich ☀️ est belle.", [0]),
            _sup(text, "Tel Aviv 🌊 aussi.", [1]),
        ],
    }
    data = sse(gemini_chunk([{"text": t1}], grounding=g1)) + sse(
        gemini_chunk([{"text": t2}], finish="STOP", grounding=g2)
    )
    a = check_run(run(data, "gemini"))
    assert [c.source_url for c in a.citations] == [A, B_]
    assert anchored(a) == [("Zürich ☀️ est belle.", A), ("Tel Aviv 🌊 aussi.", B_)]


def test_gemini_support_before_its_text_waits_for_it() -> None:
    # grounding may come early: a support whose bytes have not arrived yet waits
    t1, t2 = "Il pleut à Genève, ", "il neige à Zermatt."
    text = t1 + t2
    g = {
        "groundingChunks": [{"web": {"uri": A, "title": "a"}}],
        "groundingSupports": [_sup(text, "il neige à Zermatt.", [0])],
    }
    data = sse(gemini_chunk([{"text": t1}], grounding=g)) + sse(
        gemini_chunk([{"text": t2}], finish="STOP")
    )
    events = run(data, "gemini")
    a = check_run(events)
    assert anchored(a) == [("il neige à Zermatt.", A)]
    assert "error" not in collect(events)


def test_gemini_other_candidate_is_not_choice_0() -> None:
    c0 = {
        "index": 0,
        "content": {"role": "model", "parts": [{"text": "zéro"}]},
        "finishReason": "STOP",
    }
    c1 = {
        "index": 1,
        "content": {"role": "model", "parts": [{"text": "un"}]},
        "finishReason": "STOP",
    }
    events = run(sse({"candidates": [c0, c1], "responseId": "r"}), "gemini")
    a = check_run(events)
    assert a.text == "zéro"
    toks = collect(events)["token"]
    assert {(e.index, e.text) for e in toks} == {(0, "zéro"), (1, "un")}


# --- Responses: offsets per part, parallel calls --------------------------------------------


def test_responses_annotation_in_a_second_content_part() -> None:
    # start_index counts within its own output_text part (content_index 1 here)
    p0, p1 = "Première partie 😀. ", "Deuxième: le Mont Blanc."
    piece = "le Mont Blanc"
    i = p1.index(piece)
    ann = {
        "type": "url_citation",
        "url": t_responses.LEMONDE,
        "title": "t",
        "start_index": i,
        "end_index": i + len(piece),
    }
    seq = 0

    def ev(obj: dict[str, Any]) -> bytes:
        nonlocal seq
        obj["sequence_number"] = seq
        seq += 1
        return sse(obj, obj["type"])

    resp = {
        "id": "resp_x",
        "object": "response",
        "created_at": 1,
        "status": "in_progress",
        "model": "m",
        "output": [],
    }
    out = [ev({"type": "response.created", "response": resp})]
    out.append(
        ev(
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {
                    "type": "message",
                    "id": "m1",
                    "role": "assistant",
                    "status": "in_progress",
                    "content": [],
                },
            }
        )
    )
    for ci, p in enumerate((p0, p1)):
        out.append(
            ev(
                {
                    "type": "response.content_part.added",
                    "item_id": "m1",
                    "output_index": 0,
                    "content_index": ci,
                    "part": {"type": "output_text", "text": "", "annotations": []},
                }
            )
        )
        out.append(
            ev(
                {
                    "type": "response.output_text.delta",
                    "item_id": "m1",
                    "output_index": 0,
                    "content_index": ci,
                    "delta": p,
                }
            )
        )
        if ci == 1:
            out.append(
                ev(
                    {
                        "type": "response.output_text.annotation.added",
                        "item_id": "m1",
                        "output_index": 0,
                        "content_index": 1,
                        "annotation_index": 0,
                        "annotation": ann,
                    }
                )
            )
        out.append(
            ev(
                {
                    "type": "response.content_part.done",
                    "item_id": "m1",
                    "output_index": 0,
                    "content_index": ci,
                    "part": {"type": "output_text", "text": p, "annotations": []},
                }
            )
        )
    done = dict(
        resp, status="completed", usage={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}
    )
    out.append(ev({"type": "response.completed", "response": done}))
    events = run(b"".join(out), "responses")
    a = check_run(events)
    assert a.text == p0 + p1
    assert anchored(a) == [(piece, t_responses.LEMONDE)]


def test_responses_interleaved_parallel_function_calls_keep_their_arguments() -> None:
    seq = 0

    def ev(obj: dict[str, Any]) -> bytes:
        nonlocal seq
        obj["sequence_number"] = seq
        seq += 1
        return sse(obj, obj["type"])

    resp = {
        "id": "resp_p",
        "object": "response",
        "created_at": 1,
        "status": "in_progress",
        "model": "m",
        "output": [],
    }
    out = [ev({"type": "response.created", "response": resp})]
    for k, (iid, cid, name) in enumerate(
        (("fc_a", "call_a", "weather"), ("fc_b", "call_b", "time"))
    ):
        out.append(
            ev(
                {
                    "type": "response.output_item.added",
                    "output_index": k,
                    "item": {
                        "type": "function_call",
                        "id": iid,
                        "call_id": cid,
                        "name": name,
                        "arguments": "",
                        "status": "in_progress",
                    },
                }
            )
        )
    for iid, k, frag in (
        ("fc_a", 0, '{"city":'),
        ("fc_b", 1, '{"tz":'),
        ("fc_a", 0, ' "Zürich"}'),
        ("fc_b", 1, ' "CET"}'),
    ):
        out.append(
            ev(
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": iid,
                    "output_index": k,
                    "delta": frag,
                }
            )
        )
    out.append(ev({"type": "response.completed", "response": dict(resp, status="completed")}))
    a = check_run(run(b"".join(out), "responses"))
    assert [(t.name, t.arguments) for t in a.tool_calls] == [
        ("weather", '{"city": "Zürich"}'),
        ("time", '{"tz": "CET"}'),
    ]


# --- Anthropic: footnote offsets across blocks, parallel tool use ---------------------------


def test_anthropic_footnote_offset_counts_every_earlier_block() -> None:
    blocks = [
        B("thinking", ["θ"]),
        B("text", ["Avant 😀 "]),
        B("tool_use", ["{}"], id="t", name="f"),
        B("text", ["texte [1]."]),
    ]
    events = run(anthropic_stream(blocks), "anthropic")
    a = check_run(events)
    refs = collect(events)["citation_ref"]
    assert [(r.number, r.offset) for r in refs] == [(1, len("Avant 😀 texte "))]
    assert a.text[refs[0].offset] == "["


def test_anthropic_parallel_tool_use_blocks() -> None:
    blocks = [
        B("tool_use", ['{"a":', " 1}"], id="t1", name="f"),
        B("tool_use", ['{"b":', " 2}"], id="t2", name="g"),
    ]
    events = run(anthropic_stream(blocks, stop_reason="tool_use"), "anthropic")
    a = check_run(events)
    assert [(t.id, t.name, t.arguments) for t in a.tool_calls] == [
        ("t1", "f", '{"a": 1}'),
        ("t2", "g", '{"b": 2}'),
    ]
    by_index: dict[int, str] = {}
    for e in collect(events)["tool_call"]:
        by_index[e.tool_index] = by_index.get(e.tool_index, "") + e.arguments
    assert sorted(by_index.values()) == ['{"a": 1}', '{"b": 2}']


# --- Cohere: a thinking citation is no span ------------------------------------------------


def test_cohere_thinking_citation_is_not_an_answer_span() -> None:
    src = {"type": "document", "id": "d1", "document": {"id": "d1", "title": "T", "text": "x"}}
    c = {
        "start": 0,
        "end": 3,
        "text": "Now",
        "sources": [src],
        "type": "THINKING_CONTENT",
        "content_index": 0,
    }
    tail = sse(
        {"type": "citation-start", "index": 0, "delta": {"message": {"citations": c}}},
        "citation-start",
    )
    events = run(cohere_stream(["Answer."], thinking=["Now", " I think"], tail=tail), "cohere")
    a = check_run(events)
    assert a.text == "Answer."
    assert a.citation_spans == [] or all(a.text[s.start : s.end] != "Now" for s in a.citation_spans)
