"""Spec suite: "the same bounds as the chat dialect (choices, tool calls, citations, text size)
hold in every dialect" (issue 24). Each dialect's overflow is compared with the chat dialect's
own answer to the same overflow, so the test holds whatever the caps' values are."""

from __future__ import annotations

from typing import Any

import pytest

from tests._dialect_streams import (
    AnthropicBlock,
    CohereCitation,
    GeminiSupport,
    ResponsesItem,
    anthropic_stream,
    check_run,
    cohere_stream,
    collect,
    gemini_stream,
    responses_stream,
    run,
    sse,
)

N = 2000


def _chat(chunks: list[dict[str, Any]]) -> bytes:
    return (
        b"".join(
            sse({"id": "c", "object": "chat.completion.chunk", "model": "m", **c}) for c in chunks
        )
        + b"data: [DONE]\n\n"
    )


def _chat_citations() -> bytes:
    urls = [f"https://example.org/{i}" for i in range(N)]
    return _chat(
        [
            {
                "choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": "stop"}],
                "citations": urls,
            }
        ]
    )


def _chat_tools() -> bytes:
    calls = [
        {
            "index": i,
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": "f", "arguments": "{}"},
        }
        for i in range(N)
    ]
    return _chat(
        [{"choices": [{"index": 0, "delta": {"tool_calls": calls}, "finish_reason": "tool_calls"}]}]
    )


def _words() -> tuple[str, list[str]]:
    words = [f"w{i}é " for i in range(N)]
    return "".join(words), words


def _citations_stream(dialect: str) -> bytes:
    text, words = _words()
    if dialect == "anthropic":
        cits = [
            {
                "type": "web_search_result_location",
                "cited_text": "c",
                "url": f"https://example.org/{i}",
                "title": f"t{i}",
                "encrypted_index": "E",
            }
            for i in range(N)
        ]
        return anthropic_stream([AnthropicBlock("text", [text], citations=cits)])
    if dialect == "responses":
        anns = []
        pos = 0
        for i, w in enumerate(words):
            anns.append(
                (
                    0,
                    {
                        "type": "url_citation",
                        "url": f"https://example.org/{i}",
                        "title": f"t{i}",
                        "start_index": pos,
                        "end_index": pos + len(w) - 1,
                    },
                )
            )
            pos += len(w)
        return responses_stream([ResponsesItem("message", [text], annotations=anns)])
    if dialect == "gemini":
        web = [(f"https://example.org/{i}", f"t{i}") for i in range(N)]
        sups = [GeminiSupport(w.strip(), [i]) for i, w in enumerate(words)]
        return gemini_stream([text], web=web, supports=sups)
    cits = [CohereCitation(w.strip(), [(f"doc-{i}", f"t{i}", "x")]) for i, w in enumerate(words)]
    return cohere_stream([text], citations=cits)


def _tools_stream(dialect: str) -> bytes:
    if dialect == "anthropic":
        return anthropic_stream(
            [AnthropicBlock("tool_use", ["{}"], id=f"t{i}", name="f") for i in range(N)],
            stop_reason="tool_use",
        )
    if dialect == "responses":
        return responses_stream(
            [ResponsesItem("function_call", ["{}"], call_id=f"c{i}", name="f") for i in range(N)]
        )
    if dialect == "gemini":
        from tests._dialect_streams import gemini_chunk

        return sse(
            gemini_chunk(
                [{"functionCall": {"name": "f", "args": {}}} for _ in range(N)], finish="STOP"
            )
        )
    return cohere_stream([], tools=[(f"t{i}", "f", ["{}"]) for i in range(N)], finish="TOOL_CALL")


DIALECTS = ["anthropic", "cohere", "gemini", "responses"]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_citations_capped_like_chat(dialect: str) -> None:
    chat_events = run(_chat_citations(), "chat")
    chat = check_run(chat_events)
    assert len(chat.citations) < N  # the chat dialect's own cap
    chat_codes = {e.code for e in collect(chat_events).get("error", [])}
    events = run(_citations_stream(dialect), dialect)
    a = check_run(events)
    assert len(a.citations) == len(chat.citations)
    assert {e.code for e in collect(events).get("error", [])} & chat_codes
    assert len(a.citation_spans) <= N


@pytest.mark.parametrize("dialect", DIALECTS)
def test_tool_calls_capped_like_chat(dialect: str) -> None:
    chat_events = run(_chat_tools(), "chat")
    chat = check_run(chat_events)
    assert len(chat.tool_calls) < N
    chat_codes = {e.code for e in collect(chat_events).get("error", [])}
    events = run(_tools_stream(dialect), dialect)
    a = check_run(events)
    assert len(a.tool_calls) == len(chat.tool_calls)
    assert {e.code for e in collect(events).get("error", [])} & chat_codes
