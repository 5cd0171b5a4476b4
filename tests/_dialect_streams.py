"""Hand-written byte streams of the four non-chat dialects, built from the vendors' documented
wire formats (DESIGN.md "Dialects"), for the spec suite ``tests/test_dialect_spec_*.py``.

Nothing here reads the implementation: every builder writes what the API itself sends
(OpenAI Responses SSE, Anthropic Messages SSE, Gemini ``streamGenerateContent?alt=sse``,
Cohere v2 chat SSE) and, for each, the API's non-streaming JSON body with the same answer,
so that a test can compare a stream and a body of one answer. Provenance of the shapes:
tests/fixtures/dialect_spec/SOURCES.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

__all__ = [
    "AnthropicBlock",
    "CohereCitation",
    "GeminiSupport",
    "ResponsesItem",
    "anchored",
    "anthropic_body",
    "anthropic_error",
    "anthropic_stream",
    "byte_span",
    "check_run",
    "check_spans",
    "cohere_body",
    "cohere_stream",
    "collect",
    "flat_values",
    "gemini_body",
    "gemini_chunk",
    "gemini_stream",
    "responses_body",
    "responses_stream",
    "run",
    "split_at",
    "sse",
    "utf16_len",
    "wire",
]

Obj = dict[str, Any]


# ---------------------------------------------------------------------------------------------
# framing and helpers
# ---------------------------------------------------------------------------------------------


def sse(payload: Obj | str | bytes, event: str | None = None) -> bytes:
    """One SSE block: an optional ``event:`` line, one ``data:`` line, a blank line."""
    if isinstance(payload, dict):
        data = orjson.dumps(payload)
    elif isinstance(payload, str):
        data = payload.encode()
    else:
        data = payload
    head = b"" if event is None else b"event: " + event.encode() + b"\n"
    return head + b"data: " + data + b"\n\n"


def split_at(data: bytes, cuts: Iterable[int]) -> list[bytes]:
    """``data`` cut at the given byte positions (sorted, deduplicated, clamped)."""
    points = sorted({c for c in cuts if 0 < c < len(data)})
    out: list[bytes] = []
    prev = 0
    for p in points:
        out.append(data[prev:p])
        prev = p
    out.append(data[prev:])
    return out


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units (what JavaScript's ``length`` says)."""
    return len(text.encode("utf-16-le")) // 2


def byte_span(text: str, piece: str) -> tuple[int, int]:
    """UTF-8 byte offsets of the first ``piece`` in ``text`` (Gemini's segment units)."""
    i = text.index(piece)
    start = len(text[:i].encode())
    return start, start + len(piece.encode())


def collect(events: Iterable[Any]) -> dict[str, list[Any]]:
    """Events grouped by ``type``."""
    out: dict[str, list[Any]] = {}
    for e in events:
        out.setdefault(e.type, []).append(e)
    return out


# ---------------------------------------------------------------------------------------------
# Anthropic Messages
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
# OpenAI Responses
# ---------------------------------------------------------------------------------------------


@dataclass
class ResponsesItem:
    """One output item: ``message`` (text deltas; ``annotations`` as ``(after_delta, annotation)``
    so each arrives mid-stream), ``reasoning`` (summary deltas), ``function_call``
    (``call_id``/``name``/argument fragments) or ``refusal`` (a message whose part is a refusal)."""

    kind: str
    deltas: Sequence[str] = ()
    annotations: Sequence[tuple[int, Obj]] = ()
    call_id: str = ""
    name: str = ""
    id: str = ""


class _Seq:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self, obj: Obj) -> bytes:
        obj["sequence_number"] = self.n
        self.n += 1
        return sse(obj, str(obj["type"]))


def _responses_output(items: Sequence[ResponsesItem]) -> list[Obj]:
    out: list[Obj] = []
    for k, it in enumerate(items):
        iid = it.id or f"item_{k}"
        if it.kind == "message":
            out.append(
                {
                    "type": "message",
                    "id": iid,
                    "status": "completed",
                    "role": "assistant",
                    "content": [
                        {
                            "type": "output_text",
                            "text": "".join(it.deltas),
                            "annotations": [a for _, a in it.annotations],
                            "logprobs": [],
                        }
                    ],
                }
            )
        elif it.kind == "refusal":
            out.append(
                {
                    "type": "message",
                    "id": iid,
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "refusal", "refusal": "".join(it.deltas)}],
                }
            )
        elif it.kind == "web_search":
            out.append(
                {
                    "type": "web_search_call",
                    "id": iid,
                    "status": "completed",
                    "action": {"type": "search", "query": "spec suite"},
                }
            )
        elif it.kind == "reasoning":
            out.append(
                {
                    "type": "reasoning",
                    "id": iid,
                    "summary": [{"type": "summary_text", "text": "".join(it.deltas)}],
                }
            )
        else:
            out.append(
                {
                    "type": "function_call",
                    "id": iid,
                    "call_id": it.call_id,
                    "name": it.name,
                    "arguments": "".join(it.deltas),
                    "status": "completed",
                }
            )
    return out


def _responses_usage(usage: tuple[int, int]) -> Obj:
    return {
        "input_tokens": usage[0],
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": usage[1],
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage[0] + usage[1],
    }


def _response_obj(
    rid: str, model: str, status: str, output: list[Obj], usage: Obj | None, **extra: Any
) -> Obj:
    obj: Obj = {
        "id": rid,
        "object": "response",
        "created_at": 1_764_000_000,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    }
    obj.update(extra)
    return obj


def responses_stream(
    items: Sequence[ResponsesItem],
    *,
    status: str = "completed",
    incomplete_reason: str | None = None,
    usage: tuple[int, int] = (30, 12),
    rid: str = "resp_spec01",
    model: str = "gpt-4.1-mini",
    tail: bytes = b"",
    end: bool = True,
) -> bytes:
    """A Responses stream: created, in_progress, per item added/part/deltas/done, then
    ``response.completed`` (or ``response.incomplete``) with the full output and usage.
    ``tail`` goes before the terminal event; ``end=False`` leaves it out."""
    seq = _Seq()
    out = [
        seq(
            {
                "type": "response.created",
                "response": _response_obj(rid, model, "in_progress", [], None),
            }
        ),
        seq(
            {
                "type": "response.in_progress",
                "response": _response_obj(rid, model, "in_progress", [], None),
            }
        ),
    ]
    full = _responses_output(items)
    for k, it in enumerate(items):
        iid = full[k]["id"]
        if it.kind in ("message", "refusal"):
            out.append(
                seq(
                    {
                        "type": "response.output_item.added",
                        "output_index": k,
                        "item": {
                            "type": "message",
                            "id": iid,
                            "status": "in_progress",
                            "role": "assistant",
                            "content": [],
                        },
                    }
                )
            )
            part: Obj = (
                {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
                if it.kind == "message"
                else {"type": "refusal", "refusal": ""}
            )
            out.append(
                seq(
                    {
                        "type": "response.content_part.added",
                        "item_id": iid,
                        "output_index": k,
                        "content_index": 0,
                        "part": part,
                    }
                )
            )
            anns = list(it.annotations)
            for j, d in enumerate(it.deltas):
                ev = (
                    "response.output_text.delta"
                    if it.kind == "message"
                    else "response.refusal.delta"
                )
                body: Obj = {
                    "type": ev,
                    "item_id": iid,
                    "output_index": k,
                    "content_index": 0,
                    "delta": d,
                }
                if it.kind == "message":
                    body["logprobs"] = []
                out.append(seq(body))
                for a_no, (after, ann) in enumerate(anns):
                    if after == j:
                        out.append(
                            seq(
                                {
                                    "type": "response.output_text.annotation.added",
                                    "item_id": iid,
                                    "output_index": k,
                                    "content_index": 0,
                                    "annotation_index": a_no,
                                    "annotation": ann,
                                }
                            )
                        )
            if it.kind == "message":
                out.append(
                    seq(
                        {
                            "type": "response.output_text.done",
                            "item_id": iid,
                            "output_index": k,
                            "content_index": 0,
                            "text": "".join(it.deltas),
                            "logprobs": [],
                        }
                    )
                )
            else:
                out.append(
                    seq(
                        {
                            "type": "response.refusal.done",
                            "item_id": iid,
                            "output_index": k,
                            "content_index": 0,
                            "refusal": "".join(it.deltas),
                        }
                    )
                )
            out.append(
                seq(
                    {
                        "type": "response.content_part.done",
                        "item_id": iid,
                        "output_index": k,
                        "content_index": 0,
                        "part": full[k]["content"][0],
                    }
                )
            )
        elif it.kind == "web_search":
            out.append(
                seq(
                    {
                        "type": "response.output_item.added",
                        "output_index": k,
                        "item": {
                            "type": "web_search_call",
                            "id": iid,
                            "status": "in_progress",
                            "action": {"type": "search", "query": "spec suite"},
                        },
                    }
                )
            )
            for phase in ("in_progress", "searching", "completed"):
                out.append(
                    seq(
                        {
                            "type": f"response.web_search_call.{phase}",
                            "item_id": iid,
                            "output_index": k,
                        }
                    )
                )
        elif it.kind == "reasoning":
            out.append(
                seq(
                    {
                        "type": "response.output_item.added",
                        "output_index": k,
                        "item": {"type": "reasoning", "id": iid, "summary": []},
                    }
                )
            )
            out.append(
                seq(
                    {
                        "type": "response.reasoning_summary_part.added",
                        "item_id": iid,
                        "output_index": k,
                        "summary_index": 0,
                        "part": {"type": "summary_text", "text": ""},
                    }
                )
            )
            for d in it.deltas:
                out.append(
                    seq(
                        {
                            "type": "response.reasoning_summary_text.delta",
                            "item_id": iid,
                            "output_index": k,
                            "summary_index": 0,
                            "delta": d,
                        }
                    )
                )
            out.append(
                seq(
                    {
                        "type": "response.reasoning_summary_text.done",
                        "item_id": iid,
                        "output_index": k,
                        "summary_index": 0,
                        "text": "".join(it.deltas),
                    }
                )
            )
        else:
            out.append(
                seq(
                    {
                        "type": "response.output_item.added",
                        "output_index": k,
                        "item": {
                            "type": "function_call",
                            "id": iid,
                            "call_id": it.call_id,
                            "name": it.name,
                            "arguments": "",
                            "status": "in_progress",
                        },
                    }
                )
            )
            for d in it.deltas:
                out.append(
                    seq(
                        {
                            "type": "response.function_call_arguments.delta",
                            "item_id": iid,
                            "output_index": k,
                            "delta": d,
                        }
                    )
                )
            out.append(
                seq(
                    {
                        "type": "response.function_call_arguments.done",
                        "item_id": iid,
                        "output_index": k,
                        "arguments": "".join(it.deltas),
                    }
                )
            )
        out.append(seq({"type": "response.output_item.done", "output_index": k, "item": full[k]}))
    out.append(tail)
    if end:
        u = _responses_usage(usage)
        extra: Obj = {}
        if incomplete_reason is not None:
            extra["incomplete_details"] = {"reason": incomplete_reason}
        terminal = "response.completed" if status == "completed" else f"response.{status}"
        out.append(
            seq({"type": terminal, "response": _response_obj(rid, model, status, full, u, **extra)})
        )
    return b"".join(out)


def responses_body(
    items: Sequence[ResponsesItem],
    *,
    usage: tuple[int, int] = (30, 12),
    rid: str = "resp_spec01",
    model: str = "gpt-4.1-mini",
) -> bytes:
    """The non-streaming Responses body of the same answer."""
    u = _responses_usage(usage)
    return orjson.dumps(_response_obj(rid, model, "completed", _responses_output(items), u))


# ---------------------------------------------------------------------------------------------
# Gemini streamGenerateContent
# ---------------------------------------------------------------------------------------------


@dataclass
class GeminiSupport:
    """A grounding support over ``piece`` (its UTF-8 byte offsets in the whole answer)."""

    piece: str
    chunks: Sequence[int]


def _grounding(text: str, web: Sequence[tuple[str, str]], supports: Sequence[GeminiSupport]) -> Obj:
    sups: list[Obj] = []
    for s in supports:
        b0, b1 = byte_span(text, s.piece)
        seg: Obj = {"endIndex": b1, "text": s.piece}
        if b0:  # a startIndex of 0 is omitted, as the API does
            seg["startIndex"] = b0
        sups.append({"segment": seg, "groundingChunkIndices": list(s.chunks)})
    return {
        "webSearchQueries": ["spec suite query"],
        "groundingChunks": [{"web": {"uri": u, "title": t}} for u, t in web],
        "groundingSupports": sups,
    }


def gemini_chunk(
    parts: Sequence[Obj] | None = None,
    *,
    finish: str | None = None,
    grounding: Obj | None = None,
    usage: tuple[int, int] | None = None,
    response_id: str = "spec-gemini-01",
) -> Obj:
    """One GenerateContentResponse of a stream."""
    cand: Obj = {"index": 0}
    if parts is not None:
        cand["content"] = {"role": "model", "parts": list(parts)}
    if finish is not None:
        cand["finishReason"] = finish
    if grounding is not None:
        cand["groundingMetadata"] = grounding
    obj: Obj = {"candidates": [cand], "modelVersion": "gemini-2.5-flash", "responseId": response_id}
    if usage is not None:
        obj["usageMetadata"] = {
            "promptTokenCount": usage[0],
            "candidatesTokenCount": usage[1],
            "totalTokenCount": usage[0] + usage[1],
        }
    return obj


def gemini_stream(
    texts: Sequence[str],
    *,
    web: Sequence[tuple[str, str]] = (),
    supports: Sequence[GeminiSupport] = (),
    finish: str = "STOP",
    usage: tuple[int, int] = (11, 29),
    thoughts: Sequence[str] = (),
    split_grounding: bool = False,
) -> bytes:
    """A Gemini stream: thought parts, one text part per chunk (usage cumulative on each, as
    the API sends it), the finish reason and the grounding metadata on the last chunk
    (``split_grounding``: the chunks list one chunk early, the supports on the last)."""
    text = "".join(texts)
    out: list[bytes] = []
    for t in thoughts:
        out.append(sse(gemini_chunk([{"text": t, "thought": True}], usage=(usage[0], 1))))
    grounding = _grounding(text, web, supports) if (web or supports) else None
    for n, t in enumerate(texts):
        last = n == len(texts) - 1
        g: Obj | None = None
        if grounding is not None:
            if last:
                g = grounding
            elif split_grounding and n == len(texts) - 2:
                g = {"groundingChunks": grounding["groundingChunks"]}
        out.append(
            sse(
                gemini_chunk(
                    [{"text": t}],
                    finish=finish if last else None,
                    grounding=g,
                    usage=(usage[0], usage[1] if last else n + 1),
                )
            )
        )
    return b"".join(out)


def gemini_body(
    texts: Sequence[str],
    *,
    web: Sequence[tuple[str, str]] = (),
    supports: Sequence[GeminiSupport] = (),
    finish: str = "STOP",
    usage: tuple[int, int] = (11, 29),
) -> bytes:
    """The non-streaming ``generateContent`` body of the same answer."""
    text = "".join(texts)
    grounding = _grounding(text, web, supports) if (web or supports) else None
    return orjson.dumps(
        gemini_chunk([{"text": text}], finish=finish, grounding=grounding, usage=usage)
    )


# ---------------------------------------------------------------------------------------------
# Cohere v2 chat
# ---------------------------------------------------------------------------------------------


@dataclass
class CohereCitation:
    """A citation over ``piece`` of the text content; ``docs`` are ``(id, title, text)``
    document sources (``url`` optional in the fourth place)."""

    piece: str
    docs: Sequence[tuple[str, ...]]
    after_delta: int = -1
    occurrence: int = 0
    extra: Obj = field(default_factory=dict)


def _cohere_cit(text: str, c: CohereCitation, content_index: int) -> Obj:
    i = -1
    for _ in range(c.occurrence + 1):
        i = text.index(c.piece, i + 1)
    sources: list[Obj] = []
    for d in c.docs:
        doc: Obj = {"id": d[0], "title": d[1], "text": d[2]}
        if len(d) > 3:
            doc["url"] = d[3]
        sources.append({"type": "document", "id": d[0], "document": doc})
    return {
        "start": i,
        "end": i + len(c.piece),
        "text": c.piece,
        "sources": sources,
        "type": "TEXT_CONTENT",
        "content_index": content_index,
    }


def _cohere(ev: str, **body: Any) -> bytes:
    return sse({"type": ev, **body}, ev)


def cohere_stream(
    texts: Sequence[str],
    *,
    thinking: Sequence[str] = (),
    citations: Sequence[CohereCitation] = (),
    tools: Sequence[tuple[str, str, Sequence[str]]] = (),
    finish: str = "COMPLETE",
    usage: tuple[int, int] = (40, 17),
    tail: bytes = b"",
    error: tuple[str, str] | None = None,
    done: bool = True,
) -> bytes:
    """A Cohere v2 stream: message-start, a thinking content (index 0) when given, the text
    content, each citation-start/-end right after the delta it follows (default: after the
    last), tool calls, message-end (finish reason, usage ``tokens``), ``[DONE]``."""
    out = [
        _cohere(
            "message-start",
            id="c0ffee00-0000-4000-8000-000000000001",
            delta={
                "message": {
                    "role": "assistant",
                    "content": [],
                    "tool_plan": "",
                    "tool_calls": [],
                    "citations": [],
                }
            },
        )
    ]
    ci = 0
    if thinking:
        out.append(
            _cohere(
                "content-start",
                index=0,
                delta={"message": {"content": {"type": "thinking", "thinking": ""}}},
            )
        )
        for t in thinking:
            out.append(
                _cohere("content-delta", index=0, delta={"message": {"content": {"thinking": t}}})
            )
        out.append(_cohere("content-end", index=0))
        ci = 1
    text = "".join(texts)
    if texts:
        out.append(
            _cohere(
                "content-start",
                index=ci,
                delta={"message": {"content": {"type": "text", "text": ""}}},
            )
        )
        for j, t in enumerate(texts):
            out.append(
                _cohere("content-delta", index=ci, delta={"message": {"content": {"text": t}}})
            )
            for k, c in enumerate(citations):
                at = c.after_delta if c.after_delta >= 0 else len(texts) - 1
                if at == j:
                    out.append(
                        _cohere(
                            "citation-start",
                            index=k,
                            delta={"message": {"citations": _cohere_cit(text, c, ci)}},
                        )
                    )
                    out.append(_cohere("citation-end", index=k))
        out.append(_cohere("content-end", index=ci))
    for k, (tid, name, frags) in enumerate(tools):
        out.append(
            _cohere(
                "tool-call-start",
                index=k,
                delta={
                    "message": {
                        "tool_calls": {
                            "id": tid,
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    }
                },
            )
        )
        for f in frags:
            out.append(
                _cohere(
                    "tool-call-delta",
                    index=k,
                    delta={"message": {"tool_calls": {"function": {"arguments": f}}}},
                )
            )
        out.append(_cohere("tool-call-end", index=k))
    out.append(tail)
    end: Obj = {"finish_reason": finish}
    if error is not None:
        end["finish_reason"] = "ERROR"
        end["error"] = error[1]
        end["error_type"] = error[0]
        end["usage"] = {}
    else:
        end["usage"] = {
            "billed_units": {"input_tokens": usage[0], "output_tokens": usage[1]},
            "tokens": {"input_tokens": usage[0], "output_tokens": usage[1]},
        }
    out.append(_cohere("message-end", delta=end))
    if done:
        out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def cohere_body(
    texts: Sequence[str],
    *,
    citations: Sequence[CohereCitation] = (),
    finish: str = "COMPLETE",
    usage: tuple[int, int] = (40, 17),
) -> bytes:
    """The non-streaming v2 ``/chat`` body of the same answer."""
    text = "".join(texts)
    return orjson.dumps(
        {
            "id": "c0ffee00-0000-4000-8000-000000000001",
            "finish_reason": finish,
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "citations": [_cohere_cit(text, c, 0) for c in citations],
            },
            "usage": {
                "billed_units": {"input_tokens": usage[0], "output_tokens": usage[1]},
                "tokens": {"input_tokens": usage[0], "output_tokens": usage[1]},
            },
        }
    )


# ---------------------------------------------------------------------------------------------
# running a stream and the spec's invariants
# ---------------------------------------------------------------------------------------------


def run(data: bytes | Sequence[bytes], dialect: str = "auto") -> list[Any]:
    """Every event of ``data`` (one chunk or a list of chunks) through ``iter_events``."""
    from streamcite import iter_events

    chunks = [data] if isinstance(data, bytes) else list(data)
    return list(iter_events(chunks, dialect=dialect))  # type: ignore[call-arg]


def wire(events: Iterable[Any]) -> list[Obj]:
    """Wire dicts, the done answer's wall-clock timings removed (two runs compare equal)."""
    out = []
    for e in events:
        d = e.to_dict()
        if d.get("type") == "done":
            d["answer"].pop("timings", None)
        out.append(d)
    return out


def check_run(events: Sequence[Any]) -> Any:
    """The invariants of every run: ``done`` last and once, text = tokens of choice 0 joined;
    every span slices the text and its UTF-16 offsets agree. Returns the answer."""
    assert events, "no event at all"
    assert events[-1].type == "done"
    assert [e.type for e in events].count("done") == 1
    answer = events[-1].answer
    assert answer.text == "".join(e.text for e in events if e.type == "token" and e.index == 0)
    check_spans(answer)
    return answer


def check_spans(answer: Any) -> None:
    """Each span: characters within the text, UTF-16 offsets those of the same characters,
    document index into ``answer.citations``."""
    text = answer.text
    for s in answer.citation_spans:
        assert s.start is not None and s.end is not None, s
        assert 0 <= s.start <= s.end <= len(text), (s, len(text))
        assert s.start_utf16 == utf16_len(text[: s.start]), s
        assert s.end_utf16 == utf16_len(text[: s.end]), s
        assert s.document_index is not None and 0 <= s.document_index < len(answer.citations), s


def anchored(answer: Any) -> list[tuple[str, Any]]:
    """``(sliced text, cited source's URL or title)`` of every span, in order."""
    out = []
    for s in answer.citation_spans:
        c = answer.citations[s.document_index]
        out.append((answer.text[s.start : s.end], c.source_url or c.document_title))
    return out


def flat_values(obj: Any) -> list[Any]:
    """All scalar values found in a nested dict/list (to look for a provider field)."""
    if isinstance(obj, dict):
        return [v for x in obj.values() for v in flat_values(x)]
    if isinstance(obj, list):
        return [v for x in obj for v in flat_values(x)]
    return [obj]
