"""Anthropic's Messages API on the local backend: ``POST /v1/messages``, stream or not.

The answer is a run of ``text`` content blocks: each cited sentence (its footnote
``[n]`` included) is a block of its own carrying one citation, and the text between
them (the spaces) is in uncited blocks — as Claude answers with citations. A corpus
passage is what Anthropic calls a search result, so the citation is a
``search_result_location``: ``source`` = the citation's ``source_url``, ``title`` =
the document title, ``cited_text`` = the sentence as the passage says it,
``search_result_index`` = footnote - 1, ``start_block_index``/``end_block_index`` 0
(a passage is one block). The cited span is the block: no offsets are sent.

Streamed: ``message_start`` (``content: []``, ``usage``), ``ping``, then per block
``content_block_start`` (``citations: []`` on a cited block), its ``citations_delta``,
its ``text_delta``s and ``content_block_stop``; then ``message_delta`` (``stop_reason``
``end_turn`` or ``max_tokens``, ``usage.output_tokens``) and ``message_stop``. Every
event has its ``event:`` line (the SDK skips events without one).

Faults: an HTTP status is Anthropic's ``{"type":"error","error":{"type",...}}`` (529
``overloaded_error``); ``error_at`` sends ``event: error`` with ``overloaded_error``;
``no_done`` leaves out ``message_stop``. Stream positions count ``text_delta``s.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from streamcite.local.answerer import question_from_messages
from streamcite.local.apis.plan import (
    CitedSegment,
    DialectPlan,
    DialectRequest,
    plan_answer,
    positive_int,
    split_at,
    word_count,
)
from streamcite.local.apis.stream import Script, cut_of, send_script, sse, sse_malformed
from streamcite.local.config import MODEL
from streamcite.local.faults import FaultSpec
from streamcite.local.replies import json_response, retry_headers
from streamcite.local.request_guards import injected_delay
from streamcite.local.state import STATE

__all__ = ["ANTHROPIC_ERRORS", "anthropic_error", "message_body", "messages"]

ANTHROPIC_ERRORS: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
"""HTTP status -> Anthropic's error ``type``."""

_OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


def anthropic_error(status: int, message: str, spec: FaultSpec | None = None) -> web.Response:
    """Anthropic's error body with ``status``."""
    kind = ANTHROPIC_ERRORS.get(status, "api_error" if status >= 500 else "invalid_request_error")
    body = {
        "type": "error",
        "error": {"type": kind, "message": message},
        "request_id": "req_" + secrets.token_hex(12),
    }
    return json_response(body, status, retry_headers(spec))


def _parse(body: dict[str, Any]) -> DialectRequest | str:
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs or not all(isinstance(m, dict) for m in msgs):
        return "messages: must be a non-empty array of message objects"
    max_tokens = body.get("max_tokens")
    if not positive_int(max_tokens):
        return "max_tokens: a positive integer is required"
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        return "stream: must be a boolean"
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return "model: Field required"
    question = question_from_messages(msgs)
    system = body.get("system")
    words = word_count(question) + (word_count(system) if isinstance(system, str) else 0)
    return DialectRequest(question, stream, max_tokens, model, words)


def _unknown_model(model: str) -> web.Response:
    """Anthropic's 404 for a model it does not serve (``not_found_error``, ``model: …``)."""
    return anthropic_error(404, f"model: {model} (this backend serves {MODEL})")


def anthropic_models() -> web.Response:
    """``GET /v1/models`` asked with ``anthropic-version``: Anthropic's model list shape."""
    created = "2023-11-14T22:13:20Z"  # /v1/models' ``created`` 1_700_000_000
    model = {
        "type": "model",
        "id": MODEL,
        "display_name": MODEL,
        "created_at": created,
        "lifecycle": "active",  # required by the anthropic SDK's ModelInfo
    }
    return json_response({"data": [model], "has_more": False, "first_id": MODEL, "last_id": MODEL})


async def messages(request: web.Request) -> web.StreamResponse:
    """``POST /v1/messages``: the corpus's answer as a Message, streamed or whole."""
    plan = await plan_answer(
        request, anthropic_error, _parse, unknown_model=_unknown_model, prefix="msg_"
    )
    if isinstance(plan, web.Response):
        return plan
    log = request.app[STATE].log.bind(message_id=plan.answer_id, stream=plan.stream)
    if plan.stream:
        return await send_script(request, _script(plan), plan, log)
    await injected_delay(plan.first_delay)
    return json_response(message_body(plan))


@dataclass(slots=True, frozen=True)
class _Block:
    start: int
    end: int
    segment: CitedSegment | None


def _blocks(plan: DialectPlan) -> list[_Block]:
    """The text blocks: each cited sentence, and the (non-empty) text around them."""
    blocks: list[_Block] = []
    at = 0
    for s in plan.segments:
        if s.start > at:
            blocks.append(_Block(at, s.start, None))
        blocks.append(_Block(s.start, s.end, s))
        at = s.end
    if at < len(plan.text) or not blocks:
        blocks.append(_Block(at, len(plan.text), None))
    return blocks


def _citation(plan: DialectPlan, s: CitedSegment) -> dict[str, Any]:
    cite = plan.citations[s.number - 1]
    return {
        "type": "search_result_location",
        "cited_text": s.quote,
        "source": cite["source_url"],
        "title": cite["document_title"],
        "search_result_index": s.number - 1,
        "start_block_index": 0,
        "end_block_index": 0,
    }


def _stop_reason(plan: DialectPlan) -> str:
    return "end_turn" if plan.finish == "stop" else "max_tokens"


def message_body(plan: DialectPlan) -> dict[str, Any]:
    """The whole (non-streamed) Message."""
    content = []
    for b in _blocks(plan):
        block: dict[str, Any] = {"type": "text", "text": plan.text[b.start : b.end]}
        block["citations"] = [_citation(plan, b.segment)] if b.segment else None
        content.append(block)
    return {
        "id": plan.answer_id,
        "type": "message",
        "role": "assistant",
        "model": plan.model,
        "content": content,
        "stop_reason": _stop_reason(plan),
        "stop_sequence": None,
        "usage": {
            "input_tokens": plan.prompt_tokens,
            "output_tokens": plan.completion_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def _event(payload: dict[str, Any], malformed: bool = False) -> bytes:
    kind = payload["type"]
    return sse_malformed(kind, payload) if malformed else sse(kind, payload)


def _script(plan: DialectPlan) -> Script:
    """The Messages stream of ``plan``, its faults applied."""
    blocks = _blocks(plan)
    runs = split_at(plan.pieces, [b.start for b in blocks[1:]])
    deltas = sum(len(r) for r in runs)
    cut = cut_of(plan.spec, deltas)
    start = message_body(plan)
    start.update(content=[], stop_reason=None)
    start["usage"] = dict(start["usage"], output_tokens=1)
    opening = _event({"type": "message_start", "message": start}) + _event({"type": "ping"})
    units: list[bytes] = []
    for index, (block, run) in enumerate(zip(blocks, runs, strict=True)):
        head: dict[str, Any] = {"type": "text", "text": ""}
        lead = []
        if block.segment is not None:
            head["citations"] = []
        lead.append(_event({"type": "content_block_start", "index": index, "content_block": head}))
        if block.segment is not None:
            citation = {"type": "citations_delta", "citation": _citation(plan, block.segment)}
            lead.append(_event({"type": "content_block_delta", "index": index, "delta": citation}))
        for j, piece in enumerate(run):
            if len(units) == cut.sent:
                break
            text = {"type": "text_delta", "text": piece}
            delta = _event(
                {"type": "content_block_delta", "index": index, "delta": text},
                cut.malformed == len(units),
            )
            stop = (
                _event({"type": "content_block_stop", "index": index}) if j == len(run) - 1 else b""
            )
            units.append((b"".join(lead) if j == 0 else b"") + delta + stop)
    if cut.action == "error":
        return Script(opening, units, _event(_OVERLOADED), "error")
    closing = _event(
        {
            "type": "message_delta",
            "delta": {"stop_reason": _stop_reason(plan), "stop_sequence": None},
            "usage": {"output_tokens": plan.completion_tokens},
        },
        cut.finish_malformed,
    )
    if not plan.spec.no_done:
        closing += _event({"type": "message_stop"})
    return Script(opening, units, closing, cut.action)
