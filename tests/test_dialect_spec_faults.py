"""Spec suite, faults and bodies: every malformed body a typed error, truncation and the
providers' retryable errors, and bounds that hold without amplifying (DESIGN.md "Dialects",
docs/provider-streams.md). The strict xfails here are code bugs found by this suite."""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest

from tests import test_dialect_spec_gemini as t_gemini
from tests._dialect_streams import (
    AnthropicBlock,
    ResponsesItem,
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


def _body_cases() -> list[Any]:
    out = []
    for d in ("chat", "anthropic", "responses", "gemini", "cohere", "auto"):
        for b in BODIES:
            out.append(pytest.param(d, b, id=f"{d}-{b[:24]!r}"))
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
        "responses",
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
