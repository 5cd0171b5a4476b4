"""Anthropic Messages streams and bodies, hand-written from Anthropic's documented format (spec suite)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from tests._dialect_sse import Obj, sse


@dataclass
class AnthropicBlock:
    """One content block: ``text`` (deltas, citations sent before its text as Anthropic
    does), ``thinking`` (deltas, then a ``signature_delta``) or ``tool_use``
    (``id``/``name``, ``input_json_delta`` fragments)."""

    kind: str
    deltas: Sequence[str] = ()
    citations: Sequence[Obj] = ()
    id: str = ""
    name: str = ""


def _anthropic_start(msg_id: str, model: str, input_tokens: int) -> bytes:
    return sse(
        {
            "type": "message_start",
            "message": {
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": input_tokens, "output_tokens": 1},
            },
        },
        "message_start",
    )


def anthropic_stream(
    blocks: Sequence[AnthropicBlock],
    *,
    stop_reason: str | None = "end_turn",
    input_tokens: int = 21,
    output_tokens: int = 34,
    msg_id: str = "msg_01SpecSuite",
    model: str = "claude-sonnet-4-5",
    ping: bool = True,
    tail: bytes = b"",
    stop: bool = True,
) -> bytes:
    """A Messages stream: ``message_start``, a ``ping``, each block's start/deltas/stop,
    ``message_delta`` (stop reason, cumulative ``output_tokens``), ``message_stop``.
    ``tail`` is inserted before ``message_delta`` (for errors or unknown events)."""
    out = [_anthropic_start(msg_id, model, input_tokens)]
    if ping:
        out.append(sse({"type": "ping"}, "ping"))
    for i, b in enumerate(blocks):
        if b.kind == "text":
            start: Obj = {"type": "text", "text": ""}
            if b.citations:
                start["citations"] = []
        elif b.kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
        elif b.kind == "tool_use":
            start = {"type": "tool_use", "id": b.id, "name": b.name, "input": {}}
        elif b.kind == "server_tool_use":
            start = {"type": "server_tool_use", "id": b.id, "name": b.name, "input": {}}
        else:  # a result block sent whole at its start (web_search_tool_result)
            start = {"type": b.kind, "tool_use_id": b.id, "content": list(b.citations)}
        out.append(
            sse(
                {"type": "content_block_start", "index": i, "content_block": start},
                "content_block_start",
            )
        )
        for c in b.citations if b.kind == "text" else ():
            out.append(
                sse(
                    {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {"type": "citations_delta", "citation": c},
                    },
                    "content_block_delta",
                )
            )
        for d in b.deltas:
            if b.kind == "text":
                delta: Obj = {"type": "text_delta", "text": d}
            elif b.kind == "thinking":
                delta = {"type": "thinking_delta", "thinking": d}
            else:
                delta = {"type": "input_json_delta", "partial_json": d}
            out.append(
                sse(
                    {"type": "content_block_delta", "index": i, "delta": delta},
                    "content_block_delta",
                )
            )
        if b.kind == "thinking":
            out.append(
                sse(
                    {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {
                            "type": "signature_delta",
                            "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3h",
                        },
                    },
                    "content_block_delta",
                )
            )
        out.append(sse({"type": "content_block_stop", "index": i}, "content_block_stop"))
    out.append(tail)
    if stop:
        out.append(
            sse(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": output_tokens},
                },
                "message_delta",
            )
        )
        out.append(sse({"type": "message_stop"}, "message_stop"))
    return b"".join(out)


def anthropic_error(kind: str = "overloaded_error", message: str = "Overloaded") -> bytes:
    """Anthropic's mid-stream ``error`` event."""
    return sse({"type": "error", "error": {"type": kind, "message": message}}, "error")


def anthropic_body(
    blocks: Sequence[AnthropicBlock],
    *,
    stop_reason: str = "end_turn",
    input_tokens: int = 21,
    output_tokens: int = 34,
    msg_id: str = "msg_01SpecSuite",
    model: str = "claude-sonnet-4-5",
) -> bytes:
    """The non-streaming Messages body of the same answer."""
    content: list[Obj] = []
    for b in blocks:
        if b.kind == "text":
            block: Obj = {"type": "text", "text": "".join(b.deltas)}
            if b.citations:
                block["citations"] = list(b.citations)
        elif b.kind == "thinking":
            block = {"type": "thinking", "thinking": "".join(b.deltas), "signature": "EqQBCgIYAhIM"}
        elif b.kind in ("tool_use", "server_tool_use"):
            args = orjson.loads("".join(b.deltas))
            block = {"type": b.kind, "id": b.id, "name": b.name, "input": args}
        else:
            block = {"type": b.kind, "tool_use_id": b.id, "content": list(b.citations)}
        content.append(block)
    return orjson.dumps(
        {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        }
    )
