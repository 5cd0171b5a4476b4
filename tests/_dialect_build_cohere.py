"""Cohere v2 chat streams and bodies, hand-written from Cohere's documented events (spec suite)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from tests._dialect_sse import Obj, sse


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
