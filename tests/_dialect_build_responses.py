"""OpenAI Responses streams and bodies, hand-written from OpenAI's documented events (spec suite)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from tests._dialect_sse import Obj, sse


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
