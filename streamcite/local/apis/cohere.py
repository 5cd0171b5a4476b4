"""Cohere's v2 chat on the local backend: ``POST /v2/chat`` (``stream`` true or false).

Each cited sentence (its footnote ``[n]`` included) is a citation with ``start``/``end``
CHARACTER offsets into the text, ``text`` = that slice, ``type: "TEXT_CONTENT"``,
``content_index: 0`` and one ``document`` source: ``id`` ``doc_{n-1}`` and the
document ``{id, title, text, url}`` (the passage and the citation's ``source_url``).
Streamed: ``message-start`` (``citations: []``), ``content-start``, the
``content-delta``s — each cited sentence's ``citation-start`` (its ``citations`` one
object, not a list, as the SDK requires) and ``citation-end`` right after the delta
that completes it — ``content-end``, ``message-end`` (``finish_reason`` ``COMPLETE``
or ``MAX_TOKENS``, ``usage.billed_units`` and ``usage.tokens``) and ``data: [DONE]``;
each event with its ``event:`` line, as Cohere sends them.

Faults: an HTTP status is Cohere's ``{"id", "message"}`` error body; ``error_at`` ends
with ``message-end`` ``finish_reason: "ERROR"`` and its ``error`` (Cohere's mid-stream
error); ``no_done`` leaves out ``data: [DONE]``. Stream positions count
``content-delta``s.
"""

from __future__ import annotations

import uuid
from typing import Any

from aiohttp import web

from streamcite.local.answerer import question_from_messages
from streamcite.local.apis.plan import (
    DialectPlan,
    DialectRequest,
    plan_answer,
    positive_int,
    word_count,
)
from streamcite.local.apis.stream import Script, cut_of, send_script, sse, sse_malformed
from streamcite.local.config import MODEL
from streamcite.local.faults import FaultSpec
from streamcite.local.replies import json_response, retry_headers
from streamcite.local.request_guards import injected_delay
from streamcite.local.state import STATE

__all__ = ["cohere_body", "cohere_chat", "cohere_error"]

_DONE = b"data: [DONE]\n\n"
_STREAM_ERROR = "the upstream model is overloaded (injected fault)"


def cohere_error(status: int, message: str, spec: FaultSpec | None = None) -> web.Response:
    """Cohere's error body (``{"id", "message"}``) with ``status``."""
    body = {"id": str(uuid.uuid4()), "message": message}
    return json_response(body, status, retry_headers(spec))


def _parse(body: dict[str, Any]) -> DialectRequest | str:
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs or not all(isinstance(m, dict) for m in msgs):
        return "invalid request: messages must be a non-empty array of message objects"
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return "invalid request: model must be specified"
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        return "invalid request: stream must be a boolean"
    max_tokens = body.get("max_tokens")
    if max_tokens is not None and not positive_int(max_tokens):
        return "invalid request: max_tokens must be a positive integer"
    question = question_from_messages(msgs)
    return DialectRequest(question, stream, max_tokens, model, word_count(question))


def _unknown_model(model: str) -> web.Response:
    """Cohere's 404 for a model it does not serve (``{"id", "message"}``)."""
    return cohere_error(
        404,
        f"model '{model}' not found, make sure the correct model ID was used and that you"
        f" have access to the model. This backend serves '{MODEL}'.",
    )


async def cohere_chat(request: web.Request) -> web.StreamResponse:
    """``POST /v2/chat``: the corpus's answer, streamed or whole."""
    plan = await plan_answer(
        request,
        cohere_error,
        _parse,
        unknown_model=_unknown_model,
        make_id=lambda: str(uuid.uuid4()),
    )
    if isinstance(plan, web.Response):
        return plan
    log = request.app[STATE].log.bind(response_id=plan.answer_id, stream=plan.stream)
    if plan.stream:
        return await send_script(request, _script(plan), plan, log)
    await injected_delay(plan.first_delay)
    return json_response(cohere_body(plan))


def _citations(plan: DialectPlan) -> list[dict[str, Any]]:
    out = []
    for s in plan.segments:
        cite = plan.citations[s.number - 1]
        doc_id = f"doc_{s.number - 1}"
        document = {
            "id": doc_id,
            "title": cite["document_title"],
            "text": cite["cited_text"],
            "url": cite["source_url"],
        }
        out.append(
            {
                "start": s.start,
                "end": s.end,
                "text": plan.text[s.start : s.end],
                "sources": [{"type": "document", "id": doc_id, "document": document}],
                "type": "TEXT_CONTENT",
                "content_index": 0,
            }
        )
    return out


def _usage(plan: DialectPlan) -> dict[str, Any]:
    counts = {"input_tokens": plan.prompt_tokens, "output_tokens": plan.completion_tokens}
    return {"billed_units": dict(counts), "tokens": dict(counts)}


def _finish(plan: DialectPlan) -> str:
    return "COMPLETE" if plan.finish == "stop" else "MAX_TOKENS"


def cohere_body(plan: DialectPlan) -> dict[str, Any]:
    """The whole (non-streamed) v2 chat response."""
    return {
        "id": plan.answer_id,
        "finish_reason": _finish(plan),
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": plan.text}],
            "citations": _citations(plan),
        },
        "usage": _usage(plan),
    }


def _event(payload: dict[str, Any], malformed: bool = False) -> bytes:
    kind = payload["type"]
    return sse_malformed(kind, payload) if malformed else sse(kind, payload)


def _script(plan: DialectPlan) -> Script:
    """The v2 chat stream of ``plan``, its faults applied."""
    cut = cut_of(plan.spec, len(plan.pieces))
    empty = {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}
    opening = _event(
        {"id": plan.answer_id, "type": "message-start", "delta": {"message": empty}}
    ) + _event(
        {
            "type": "content-start",
            "index": 0,
            "delta": {"message": {"content": {"type": "text", "text": ""}}},
        }
    )
    citations = _citations(plan)
    units: list[bytes] = []
    at = 0
    noted = 0
    for i, piece in enumerate(plan.pieces[: cut.sent]):
        at += len(piece)
        delta = {
            "type": "content-delta",
            "index": 0,
            "delta": {"message": {"content": {"text": piece}}},
        }
        unit = [_event(delta, cut.malformed == i)]
        while noted < len(citations) and citations[noted]["end"] <= at:
            start = {
                "type": "citation-start",
                "index": noted,
                "delta": {"message": {"citations": citations[noted]}},
            }
            unit += [_event(start), _event({"type": "citation-end", "index": noted})]
            noted += 1
        units.append(b"".join(unit))
    if cut.action == "error":
        end = {
            "type": "message-end",
            "delta": {"finish_reason": "ERROR", "usage": {}, "error": _STREAM_ERROR},
        }
        return Script(opening, units, _event(end) + _DONE, "error")
    closing = _event({"type": "content-end", "index": 0}) + _event(
        {"type": "message-end", "delta": {"finish_reason": _finish(plan), "usage": _usage(plan)}},
        cut.finish_malformed,
    )
    if not plan.spec.no_done:
        closing += _DONE
    return Script(opening, units, closing, cut.action)
