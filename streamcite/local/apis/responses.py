"""OpenAI's Responses API on the local backend: ``POST /v1/responses``, stream or not.

The answer is one ``message`` output item with one ``output_text`` part; each cited
sentence is a ``url_citation`` annotation (``url`` = the citation's ``source_url``,
``title`` = its document title) whose ``start_index:end_index`` are CHARACTER offsets
into the text (the sentence, its footnote ``[n]`` included). Streamed, the events are
the ones the ``openai`` SDK's ``responses.stream()`` helper needs, each with its
``sequence_number``: ``response.created``, ``response.in_progress``,
``response.output_item.added``, ``response.content_part.added``, then per piece
``response.output_text.delta`` (``logprobs: []``) followed, as soon as a cited
sentence is complete, by ``response.output_text.annotation.added``; then
``response.output_text.done``, ``response.content_part.done``,
``response.output_item.done`` and ``response.completed`` (or ``response.incomplete``
with ``reason: "max_output_tokens"``) carrying the whole output and the usage.

Faults: an HTTP status is OpenAI's error body; ``error_at`` sends an ``error`` event
then ``response.failed``; ``no_done`` leaves out the final ``response.completed``.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from streamcite.local.answerer import question_from_messages
from streamcite.local.apis.openai import model_not_found
from streamcite.local.apis.plan import (
    DialectPlan,
    DialectRequest,
    plan_answer,
    positive_int,
    word_count,
)
from streamcite.local.apis.stream import Script, cut_of, send_script, sse, sse_malformed
from streamcite.local.faults import FaultSpec
from streamcite.local.replies import json_response, openai_error
from streamcite.local.request_guards import injected_delay
from streamcite.local.state import STATE

__all__ = ["responses", "responses_body"]

_ERROR = {
    "type": "server_error",
    "code": "server_error",
    "message": "The upstream model is overloaded (injected fault).",
    "param": None,
}


def _error(status: int, message: str, spec: FaultSpec | None) -> web.Response:
    return openai_error(status, message, spec=spec)


def _parse(body: dict[str, Any]) -> DialectRequest | str:
    source = body.get("input")
    if isinstance(source, str):
        question = source
    elif isinstance(source, list) and source and all(isinstance(i, dict) for i in source):
        question = question_from_messages(source)
    else:
        return "'input' must be a string or a non-empty array of input items"
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        return "'stream' must be a boolean"
    max_tokens = body.get("max_output_tokens")
    if max_tokens is not None and not positive_int(max_tokens):
        return "'max_output_tokens' must be a positive integer"
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return "Missing required parameter: 'model'."
    instructions = body.get("instructions")
    words = word_count(question) + (
        word_count(instructions) if isinstance(instructions, str) else 0
    )
    return DialectRequest(question, stream, max_tokens, model, words)


async def responses(request: web.Request) -> web.StreamResponse:
    """``POST /v1/responses``: the corpus's answer as a Response, streamed or whole."""
    plan = await plan_answer(request, _error, _parse, unknown_model=model_not_found, prefix="resp_")
    if isinstance(plan, web.Response):
        return plan
    log = request.app[STATE].log.bind(response_id=plan.answer_id, stream=plan.stream)
    if plan.stream:
        return await send_script(request, _script(plan), plan, log)
    await injected_delay(plan.first_delay)
    return json_response(responses_body(plan))


def _item_id(plan: DialectPlan) -> str:
    return "msg_" + plan.answer_id.removeprefix("resp_")


def _annotations(plan: DialectPlan) -> list[dict[str, Any]]:
    cites = plan.citations
    return [
        {
            "type": "url_citation",
            "start_index": s.start,
            "end_index": s.end,
            "url": cites[s.number - 1]["source_url"],
            "title": cites[s.number - 1]["document_title"],
        }
        for s in plan.segments
    ]


def _usage(plan: DialectPlan) -> dict[str, Any]:
    return {
        "input_tokens": plan.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": plan.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": plan.prompt_tokens + plan.completion_tokens,
    }


def _part(plan: DialectPlan) -> dict[str, Any]:
    return {
        "type": "output_text",
        "text": plan.text,
        "annotations": _annotations(plan),
        "logprobs": [],
    }


def _item(plan: DialectPlan, status: str) -> dict[str, Any]:
    return {
        "id": _item_id(plan),
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": [_part(plan)] if status != "in_progress" else [],
    }


def _response(plan: DialectPlan, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    done = status in ("completed", "incomplete")
    return {
        "id": plan.answer_id,
        "object": "response",
        "created_at": plan.created,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "instructions": None,
        "max_output_tokens": None,
        "model": plan.model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": _usage(plan) if done else None,
        "user": None,
        "metadata": {},
    }


def responses_body(plan: DialectPlan) -> dict[str, Any]:
    """The whole (non-streamed) Response object."""
    status = "completed" if plan.finish == "stop" else "incomplete"
    item_status = "completed" if plan.finish == "stop" else "incomplete"
    return _response(plan, status, [_item(plan, item_status)])


class _Events:
    """Serialises events with consecutive ``sequence_number``s."""

    __slots__ = ("seq",)

    def __init__(self) -> None:
        self.seq = 0

    def __call__(self, payload: dict[str, Any], *, malformed: bool = False) -> bytes:
        payload["sequence_number"] = self.seq
        self.seq += 1
        kind = payload["type"]
        return sse_malformed(kind, payload) if malformed else sse(kind, payload)


def _script(plan: DialectPlan) -> Script:
    """The Responses stream of ``plan``, its faults applied."""
    cut = cut_of(plan.spec, len(plan.pieces))
    ev = _Events()
    where = {"item_id": _item_id(plan), "output_index": 0, "content_index": 0}
    opening = b"".join(
        (
            ev({"type": "response.created", "response": _response(plan, "in_progress", [])}),
            ev({"type": "response.in_progress", "response": _response(plan, "in_progress", [])}),
            ev(
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": _item(plan, "in_progress"),
                }
            ),
            ev(
                {
                    "type": "response.content_part.added",
                    **where,
                    "part": {"type": "output_text", "text": "", "annotations": [], "logprobs": []},
                }
            ),
        )
    )
    annotations = _annotations(plan)
    units: list[bytes] = []
    at = 0
    noted = 0
    for i, piece in enumerate(plan.pieces[: cut.sent]):
        at += len(piece)
        delta = {"type": "response.output_text.delta", **where, "delta": piece, "logprobs": []}
        unit = [ev(delta, malformed=cut.malformed == i)]
        while noted < len(annotations) and annotations[noted]["end_index"] <= at:
            unit.append(
                ev(
                    {
                        "type": "response.output_text.annotation.added",
                        **where,
                        "annotation_index": noted,
                        "annotation": annotations[noted],
                    }
                )
            )
            noted += 1
        units.append(b"".join(unit))
    if cut.action == "error":
        return Script(opening, units, _failure(plan, ev), "error")
    return Script(opening, units, _closing(plan, ev, cut.finish_malformed), cut.action)


def _failure(plan: DialectPlan, ev: _Events) -> bytes:
    failed = _response(plan, "failed", [])
    failed["error"] = {"code": _ERROR["code"], "message": _ERROR["message"]}
    fields = {k: _ERROR[k] for k in ("code", "message", "param")}
    return ev({"type": "error", **fields, "error": dict(_ERROR)}) + ev(
        {"type": "response.failed", "response": failed}
    )


def _closing(plan: DialectPlan, ev: _Events, malformed: bool) -> bytes:
    where = {"item_id": _item_id(plan), "output_index": 0, "content_index": 0}
    final = responses_body(plan)
    item = final["output"][0]
    events = [
        ev(
            {"type": "response.output_text.done", **where, "text": plan.text, "logprobs": []},
            malformed=malformed,
        ),
        ev({"type": "response.content_part.done", **where, "part": _part(plan)}),
        ev({"type": "response.output_item.done", "output_index": 0, "item": item}),
    ]
    if not plan.spec.no_done:
        events.append(ev({"type": f"response.{final['status']}", "response": final}))
    return b"".join(events)
