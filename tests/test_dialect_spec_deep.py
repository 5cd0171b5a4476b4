"""Spec suite, second round: the finer points of each dialect's contract (DESIGN.md "Dialects",
docs/provider-streams.md): what a live consumer sees in the ``citations`` events, grounding
that accumulates, offsets relative to their own part, parallel calls, and bodies beyond text."""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest

from tests import test_dialect_spec_anthropic as t_anthropic
from tests import test_dialect_spec_cohere as t_cohere
from tests import test_dialect_spec_gemini as t_gemini
from tests import test_dialect_spec_responses as t_responses
from tests._dialect_streams import (
    AnthropicBlock,
    ResponsesItem,
    anchored,
    anthropic_body,
    anthropic_error,
    anthropic_stream,
    check_run,
    check_spans,
    cohere_stream,
    collect,
    gemini_body,
    gemini_chunk,
    responses_body,
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


# --- bodies beyond text ----------------------------------------------------------------------


def test_bodies_carry_reasoning_tools_usage_and_finish_like_streams() -> None:
    from streamcite import answer_from_response

    blocks = [
        B("thinking", ["Je ", "pense."]),
        B("text", ["Oui [1]."]),
        B("tool_use", ['{"q": 1}'], id="t", name="f"),
    ]
    s = check_run(run(anthropic_stream(blocks, stop_reason="tool_use"), "anthropic"))
    b = answer_from_response(anthropic_body(blocks, stop_reason="tool_use"))
    assert (b.text, b.reasoning_text, b.finish_reason) == (
        s.text,
        s.reasoning_text,
        s.finish_reason,
    )
    assert [(t.id, t.name, orjson.loads(t.arguments)) for t in b.tool_calls] == [
        ("t", "f", {"q": 1})
    ]
    assert [r.number for r in b.citation_refs] == [r.number for r in s.citation_refs] == [1]
    assert b.usage == s.usage
    assert b.complete is True

    items = [R("reasoning", ["Je ", "pense."]), R("message", ["Oui."])]
    s = check_run(run(responses_stream(items), "responses"))
    b = answer_from_response(responses_body(items))
    assert (b.text, b.reasoning_text, b.finish_reason, b.usage) == (
        s.text,
        s.reasoning_text,
        s.finish_reason,
        s.usage,
    )

    items = [R("refusal", ["Non."])]
    s = check_run(run(responses_stream(items), "responses"))
    b = answer_from_response(responses_body(items))
    assert b.refusal == s.refusal == "Non."


def test_error_bodies_are_errors() -> None:
    from streamcite import answer_from_response

    bodies = {
        "anthropic": {
            "type": "error",
            "error": {"type": "overloaded_error", "message": "Overloaded"},
        },
        "gemini": {
            "error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}
        },
        "responses": {
            "id": "resp_f",
            "object": "response",
            "status": "failed",
            "error": {"code": "server_error", "message": "boom"},
            "output": [],
        },
    }
    for dialect, body in bodies.items():
        for d in (dialect, "auto"):
            a = answer_from_response(orjson.dumps(body), dialect=d)
            assert a.errors, (dialect, d)
            assert a.complete is False, (dialect, d)
            if dialect != "responses":
                assert a.errors[0].retryable is True, (dialect, d)


def test_gemini_body_max_tokens_and_spans() -> None:
    from streamcite import answer_from_response

    body = gemini_body(
        t_gemini.TEXTS, web=t_gemini.WEB, supports=t_gemini.SUPPORTS, finish="MAX_TOKENS"
    )
    a = answer_from_response(body, dialect="gemini")
    check_spans(a)
    assert a.finish_reason == "length"
    assert len(a.citation_spans) == 4


BODIES = [
    b"",
    b"{",
    b"[]",
    b"null",
    b'{"candidates": 5}',
    b'{"type": "message", "content": "x"}',
    b'{"object": "response", "output": {}}',
    b'{"object": "response", "status": "completed"}',
    b'{"message": [], "finish_reason": 3}',
    b'{"message": {"content": "x"}, "finish_reason": "COMPLETE"}',
    b"{}",
]

_RESPONSES_BUG = "responses body: an `output` that is absent or not a list is skipped in silence, the answer complete with finish 'stop'"
_NO_ANSWER_BUG = "a body holding no answer (no candidates/choices, nothing the dialect knows) gives complete=false and no error saying why"
_COHERE_BUG = (
    "cohere body: `message.content` that is not a list is skipped in silence, the answer complete"
)
_XFAIL = {
    **{("responses", b): _RESPONSES_BUG for b in BODIES[4:]},
    **{("gemini", b): _NO_ANSWER_BUG for b in BODIES[5:]},
    **{("chat", b): _NO_ANSWER_BUG for b in BODIES[4:]},
    ("cohere", BODIES[9]): _COHERE_BUG,
    ("auto", BODIES[5]): _NO_ANSWER_BUG,
    ("auto", BODIES[6]): _RESPONSES_BUG,
    ("auto", BODIES[7]): _RESPONSES_BUG,
    ("auto", BODIES[8]): _NO_ANSWER_BUG,
    ("auto", BODIES[9]): _COHERE_BUG,
    ("auto", BODIES[10]): _NO_ANSWER_BUG,
}


def _body_cases() -> list[Any]:
    out = []
    for d in ("chat", "anthropic", "responses", "gemini", "cohere", "auto"):
        for b in BODIES:
            reason = _XFAIL.get((d, b))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(d, b, marks=marks, id=f"{d}-{b[:24]!r}"))
    return out


@pytest.mark.parametrize(("dialect", "body"), _body_cases())
def test_malformed_body_is_a_typed_error(dialect: str, body: bytes) -> None:
    from streamcite import answer_from_response

    a = answer_from_response(body, dialect=dialect)  # never raises
    assert a.errors, "no error for a malformed body"
    assert a.complete is False


# --- bounds: nothing new, no event --------------------------------------------------------


def _many_same_source(dialect: str, n: int) -> bytes:
    words = [f"w{i}" for i in range(n)]
    text = " ".join(words)
    if dialect == "responses":
        anns, pos = [], 0
        for w in words:
            ann = {
                "type": "url_citation",
                "url": "https://e.org/x",
                "title": "t",
                "start_index": pos,
                "end_index": pos + len(w),
            }
            anns.append((0, ann))
            pos += len(w) + 1
        return responses_stream([R("message", [text], annotations=anns)])
    if dialect == "anthropic":
        cit = {
            "type": "web_search_result_location",
            "cited_text": "c",
            "url": "https://e.org/x",
            "title": "t",
            "encrypted_index": "E",
        }
        return anthropic_stream([B("text", [w + " "], citations=[cit]) for w in words])
    src = {"type": "document", "id": "d", "document": {"id": "d", "title": "T", "text": "t"}}
    tail, pos = [], 0
    for i, w in enumerate(words):
        c = {
            "start": pos,
            "end": pos + len(w),
            "text": w,
            "sources": [src],
            "type": "TEXT_CONTENT",
            "content_index": 0,
        }
        tail.append(
            sse(
                {"type": "citation-start", "index": i, "delta": {"message": {"citations": c}}},
                "citation-start",
            )
        )
        pos += len(w) + 1
    return cohere_stream([text], tail=b"".join(tail))


@pytest.mark.xfail(
    strict=True,
    reason="past the 1,024-span cap every further citation of a known source still emits a "
    "citations event identical to the previous one (1,024 spans each): 1.8 MB of Responses "
    "annotations became 204 MB of events (x111)",
)
@pytest.mark.parametrize("dialect", ["anthropic", "cohere", "responses"])
def test_no_citations_event_without_anything_new(dialect: str) -> None:
    events = run(_many_same_source(dialect, 1300), dialect)
    a = check_run(events)
    assert len(a.citation_spans) < 1300  # the cap held
    cits = collect(events)["citations"]
    repeats = sum(
        1
        for x, y in itertools.pairwise(cits)
        if len(x.spans) >= 1024 and x.spans == y.spans and x.citations == y.citations
    )
    assert repeats == 0


@pytest.mark.xfail(
    strict=True,
    reason="an input_json_delta on a text or thinking block (not a tool use) is dropped in "
    "silence: no event, no error",
)
@pytest.mark.parametrize("index", [0, 2])
def test_anthropic_mismatched_input_json_delta_is_not_silent(index: int) -> None:
    blocks = [B("text", ["a"]), B("tool_use", ["{}"], id="t", name="f"), B("thinking", ["th"])]
    tail = sse(
        {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "input_json_delta", "partial_json": "ZZ"},
        },
        "content_block_delta",
    )
    events = run(anthropic_stream(blocks, tail=tail), "anthropic")
    a = check_run(events)
    seen = a.text + a.reasoning_text + "".join(t.arguments for t in a.tool_calls)
    assert "ZZ" in seen or collect(events).get("error")


# --- truncation and retryable errors ---------------------------------------------------------

TRUNCATED = {
    "anthropic": anthropic_stream([B("text", ["Coupé ", "net"])], stop=False),
    "responses": responses_stream([R("message", ["Coupé ", "net"])], end=False),
    "gemini": sse(gemini_chunk([{"text": "Coupé "}])) + sse(gemini_chunk([{"text": "net"}])),
    "cohere": cohere_stream(["Coupé ", "net"])[
        : cohere_stream(["Coupé ", "net"]).index(b"event: message-end")
    ],
}


@pytest.mark.parametrize("dialect", sorted(TRUNCATED))
def test_stream_cut_before_its_end_is_incomplete_and_retryable(dialect: str) -> None:
    for d in (dialect, "auto"):
        events = run(TRUNCATED[dialect], d)
        a = check_run(events)
        assert a.text == "Coupé net"
        assert a.complete is False
        errs = collect(events)["error"]
        assert errs and errs[-1].retryable is True


@pytest.mark.parametrize(
    ("kind", "retryable"),
    [
        ("overloaded_error", True),
        ("api_error", True),
        ("rate_limit_error", True),
        ("authentication_error", False),
        ("permission_error", False),
    ],
)
def test_anthropic_error_types_retryable(kind: str, retryable: bool) -> None:
    events = run(
        anthropic_stream([B("text", ["x"])], tail=anthropic_error(kind, "m"), stop=False),
        "anthropic",
    )
    errs = collect(events)["error"]
    assert errs[0].retryable is retryable


@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [
        ("RESOURCE_EXHAUSTED", 429, True),
        ("UNAVAILABLE", 503, True),
        ("INTERNAL", 500, True),
        ("PERMISSION_DENIED", 403, False),
        ("INVALID_ARGUMENT", 400, False),
    ],
)
def test_gemini_error_status_retryable(status: str, code: int, retryable: bool) -> None:
    for err in (
        {"code": code, "message": "m", "status": status},
        {"message": "m", "status": status},
    ):
        events = run(sse(gemini_chunk([{"text": "x"}])) + sse({"error": err}), "gemini")
        errs = collect(events)["error"]
        assert errs[0].retryable is retryable, err


def test_responses_refusal_only_finishes_as_refusal() -> None:
    events = run(responses_stream([R("refusal", ["Non."])]), "responses")
    fin = collect(events)["finish"]
    assert fin[0].reason in ("refusal", "content_filter")


def test_responses_incomplete_content_filter() -> None:
    events = run(
        responses_stream(
            [R("message", ["x"])], status="incomplete", incomplete_reason="content_filter"
        ),
        "responses",
    )
    fin = collect(events)["finish"]
    assert (fin[0].reason, fin[0].raw_reason) == ("content_filter", "content_filter")


def test_cohere_timeout_is_a_retryable_error() -> None:
    events = run(
        cohere_stream(["x"], error=("TIMEOUT", "timed out")).replace(
            b'"finish_reason":"ERROR"', b'"finish_reason":"TIMEOUT"'
        ),
        "cohere",
    )
    a = check_run(events)
    errs = collect(events)["error"]
    assert errs and errs[0].retryable is True
    assert a.complete is False


# --- an answer within the bounds is read whole in every dialect ------------------------------


def _parse(data: bytes, dialect: str, max_event_size: int) -> Any:
    from streamcite import ChatStreamParser

    p = ChatStreamParser(max_event_size=max_event_size, dialect=dialect)  # type: ignore[call-arg]
    events = p.feed(data) + p.close()
    events.append(p.done_event())
    return check_run(events), collect(events)


@pytest.mark.parametrize(
    "dialect",
    [
        "anthropic",
        "cohere",
        "gemini",
        pytest.param(
            "responses",
            marks=pytest.mark.xfail(
                strict=True,
                reason="Responses repeats the whole text in its ignored echo events and in "
                "response.completed: once the answer's bytes pass max_event_size (16 MiB by "
                "default: 5.6 M CJK characters, under the 8 M-character answer cap) those events "
                "are dropped by the decoder (event_too_large) and the answer ends truncated, "
                "incomplete, without finish or usage",
            ),
        ),
    ],
)
def test_answer_larger_than_max_event_size_in_small_deltas_is_read_whole(dialect: str) -> None:
    parts = ["中文字" * 300] * 40  # 36,000 characters, 108 kB, in 900-character deltas
    data = {
        "anthropic": anthropic_stream([B("text", parts)]),
        "cohere": cohere_stream(parts),
        "gemini": b"".join(
            sse(gemini_chunk([{"text": p}], finish="STOP" if i == len(parts) - 1 else None))
            for i, p in enumerate(parts)
        ),
        "responses": responses_stream([R("message", parts)]),
    }[dialect]
    a, g = _parse(data, dialect, 1 << 16)
    assert a.text == "".join(parts)
    assert "error" not in g
    assert a.complete is True and a.finish_reason == "stop"
