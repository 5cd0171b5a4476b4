"""Provider stream shapes the local backend produces on request (fault keys ``profile``,
``tool_call`` and ``provider_error``), so reasoning, tool calls, refusals, Mistral
content parts and provider errors can be exercised over real loopback HTTP.

Each shape is built from the same answer pieces as the plain stream and returned as
(role chunk, body chunks, closing chunks) like the plain stream's events, so the other
faults (delays, ``drop_after``, ``malformed_at``…) apply to the body chunks.
"""

from __future__ import annotations

from typing import Any

import orjson

from streamcite.local.faults import FaultSpec

__all__ = ["REASONING_TEXT", "REFUSAL_TEXT", "profile_events"]

REASONING_TEXT = "Looking for the passages that answer the question, then citing them."
REFUSAL_TEXT = "I'm sorry, but I can't help with that request."
_Shape = tuple[bytes, list[bytes], list[bytes]]


def _words(text: str) -> list[str]:
    out: list[str] = []
    for w in text.split(" "):
        out.append(w if not out else " " + w)
    return out


class _Chunks:
    def __init__(self, completion_id: str, created: int, model: str) -> None:
        self.top: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
        }
        self.model = model

    def event(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        obj = {
            **self.top,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            **extra,
        }
        return b"data: " + orjson.dumps(obj) + b"\n\n"

    def usage(self, usage: dict[str, int] | None) -> list[bytes]:
        if usage is None:
            return []
        obj = {**self.top, "model": self.model, "choices": [], "usage": usage}
        return [b"data: " + orjson.dumps(obj) + b"\n\n"]


def profile_events(
    spec: FaultSpec,
    *,
    completion_id: str,
    created: int,
    model: str,
    pieces: list[str],
    finish_reason: str,
    citations: list[dict[str, Any]],
    usage: dict[str, int] | None,
) -> _Shape | None:
    """The requested shape's events, or ``None`` when no shape was requested."""
    c = _Chunks(completion_id, created, model)
    if spec.tool_call:
        return _tool_call(c, spec.tool_call, pieces, usage)
    if spec.profile == "refusal":
        role = c.event({"role": "assistant", "content": None, "refusal": ""})
        body = [c.event({"refusal": w}) for w in _words(REFUSAL_TEXT)]
        return role, body, [c.event({}, "stop"), *c.usage(usage)]
    if spec.profile == "mistral_parts":
        return _mistral(c, pieces, finish_reason, citations, usage)
    body_pieces = pieces
    closing = [c.event({}, finish_reason, citations=citations), *c.usage(usage)]
    if spec.provider_error is not None:
        body_pieces = pieces[: max(1, len(pieces) // 2)]
        err = {"code": spec.provider_error, "message": "Provider returned error (injected)"}
        closing = [c.event({"content": ""}, "error", error=err)]
    elif spec.profile != "reasoning":
        return None
    role = c.event({"role": "assistant", "content": ""})
    body = []
    if spec.profile == "reasoning":
        body = [c.event({"content": None, "reasoning_content": w}) for w in _words(REASONING_TEXT)]
    body += [c.event({"content": p}) for p in body_pieces]
    return role, body, closing


def _tool_call(c: _Chunks, name: str, pieces: list[str], usage: dict[str, int] | None) -> _Shape:
    args = orjson.dumps({"query": "".join(pieces)[:60]}).decode()
    third = max(1, len(args) // 3)
    frags = [args[:third], args[third : 2 * third], args[2 * third :]]
    role = c.event(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_" + c.top["id"][-12:],
                    "type": "function",
                    "function": {"name": name, "arguments": ""},
                }
            ],
        }
    )
    body = [c.event({"tool_calls": [{"index": 0, "function": {"arguments": f}}]}) for f in frags]
    return role, body, [c.event({}, "tool_calls"), *c.usage(usage)]


def _mistral(
    c: _Chunks,
    pieces: list[str],
    finish_reason: str,
    citations: list[dict[str, Any]],
    usage: dict[str, int] | None,
) -> _Shape:
    role = c.event({"role": "assistant", "content": ""})
    body = [
        c.event({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": w}]}]})
        for w in _words(REASONING_TEXT)
    ]
    body += [c.event({"content": [{"type": "text", "text": p}]}) for p in pieces]
    refs = [{"type": "reference", "reference_ids": list(range(1, len(citations) + 1))}]
    closing = [
        c.event({"content": refs}, finish_reason, citations=citations),
        *c.usage(usage),
    ]
    return role, body, closing
