"""Minimal streams of each provider API, written for these tests (not recordings).

Shapes follow each vendor's documented stream (DESIGN.md "Dialects"; the recordings in
tests/fixtures/dialects show the full field sets): one text answer, ``text``, split in
two deltas. Used by the pipeline tests, which check what ``stream_chat(api=...)`` sends
and how it reads HTTP errors, not the interpreters (those have their own tests).
"""

from __future__ import annotations

from typing import Any

import orjson


def _sse(event: str | None, data: Any) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + orjson.dumps(data) + b"\n\n"


def chat_stream(text: str) -> list[bytes]:
    half = len(text) // 2
    out = []
    for piece, finish in ((text[:half], None), (text[half:], None), (None, "stop")):
        delta = {} if piece is None else {"content": piece}
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        out.append(_sse(None, {"id": "c1", "model": "m", "created": 1, "choices": [choice]}))
    return [*out, b"data: [DONE]\n\n"]


def responses_stream(text: str) -> list[bytes]:
    half = len(text) // 2
    resp = {"id": "resp_1", "object": "response", "created_at": 1, "model": "m", "output": []}
    msg = {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress"}
    done_msg = {
        **msg,
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    usage = {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"response": {**resp, "status": "in_progress"}}),
        ("response.output_item.added", {"output_index": 0, "item": {**msg, "content": []}}),
        (
            "response.content_part.added",
            {
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "part": {"type": "output_text", "text": "", "annotations": []},
            },
        ),
    ]
    for piece in (text[:half], text[half:]):
        events.append(
            (
                "response.output_text.delta",
                {"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": piece},
            )
        )
    events += [
        (
            "response.output_text.done",
            {"item_id": "msg_1", "output_index": 0, "content_index": 0, "text": text},
        ),
        ("response.output_item.done", {"output_index": 0, "item": done_msg}),
        (
            "response.completed",
            {"response": {**resp, "status": "completed", "output": [done_msg], "usage": usage}},
        ),
    ]
    return [
        _sse(name, {"type": name, "sequence_number": i, **data})
        for i, (name, data) in enumerate(events)
    ]


def anthropic_stream(text: str) -> list[bytes]:
    half = len(text) // 2
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
    out = [
        _sse("message_start", {"type": "message_start", "message": message}),
        _sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
    ]
    for piece in (text[:half], text[half:]):
        delta = {"type": "text_delta", "text": piece}
        out.append(
            _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
        )
    out += [
        _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 2},
            },
        ),
        _sse("message_stop", {"type": "message_stop"}),
    ]
    return out


def gemini_stream(text: str) -> list[bytes]:
    half = len(text) // 2
    out = []
    for piece, finish in ((text[:half], None), (text[half:], "STOP")):
        cand: dict[str, Any] = {"content": {"parts": [{"text": piece}], "role": "model"}}
        if finish:
            cand["finishReason"] = finish
        body: dict[str, Any] = {"candidates": [cand], "modelVersion": "m", "responseId": "g1"}
        if finish:
            body["usageMetadata"] = {
                "promptTokenCount": 3,
                "candidatesTokenCount": 2,
                "totalTokenCount": 5,
            }
        out.append(_sse(None, body))
    return out


def cohere_stream(text: str) -> list[bytes]:
    half = len(text) // 2
    start = {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}
    out = [
        _sse("message-start", {"id": "co1", "type": "message-start", "delta": {"message": start}}),
        _sse(
            "content-start",
            {
                "type": "content-start",
                "index": 0,
                "delta": {"message": {"content": {"type": "text", "text": ""}}},
            },
        ),
    ]
    for piece in (text[:half], text[half:]):
        out.append(
            _sse(
                "content-delta",
                {
                    "type": "content-delta",
                    "index": 0,
                    "delta": {"message": {"content": {"text": piece}}},
                },
            )
        )
    tokens = {"input_tokens": 3, "output_tokens": 2}
    out += [
        _sse("content-end", {"type": "content-end", "index": 0}),
        _sse(
            "message-end",
            {
                "type": "message-end",
                "delta": {
                    "finish_reason": "COMPLETE",
                    "usage": {"billed_units": tokens, "tokens": tokens},
                },
            },
        ),
    ]
    return out


STREAMS = {
    "chat": chat_stream,
    "responses": responses_stream,
    "anthropic": anthropic_stream,
    "gemini": gemini_stream,
    "cohere": cohere_stream,
}

REQUESTS: dict[str, dict[str, Any]] = {
    "chat": {"model": "m", "messages": [{"role": "user", "content": "q"}], "stream": True},
    "responses": {"model": "m", "input": "q", "stream": True},
    "anthropic": {
        "model": "m",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "q"}],
        "stream": True,
    },
    "gemini": {"model": "m", "contents": [{"role": "user", "parts": [{"text": "q"}]}]},
    "cohere": {"model": "m", "messages": [{"role": "user", "content": "q"}], "stream": True},
}
"""One request body per API, in that API's own shape."""
