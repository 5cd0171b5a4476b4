"""The OpenAI-compatible API of the local backend: ``POST /v1/chat/completions`` and
``GET /v1/models``.

Answers come from the local corpus, with footnotes ``[n]`` in the text and
Magisterium-style ``citations`` on the last chunk (or the completion); the streamed
form is :mod:`streamcite.local.apis.openai_stream`. Each answer is kept in the store under
its completion id, for the Wikit endpoints.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from streamcite.local.answerer import question_from_messages, token_pieces, with_wrong_number
from streamcite.local.apis.anthropic import anthropic_models
from streamcite.local.apis.openai_stream import StreamPlan, stream_completion
from streamcite.local.apis.plan import shown_model
from streamcite.local.config import MODEL
from streamcite.local.faults import FaultSpec, FaultSpecError
from streamcite.local.replies import json_response, openai_error
from streamcite.local.request_guards import fault_status, faults_of, injected_delay, read_body
from streamcite.local.state import STATE, BackendState, root_url
from streamcite.local.store import StoredAnswer

__all__ = ["chat_completions", "model_not_found", "models"]


@dataclass(slots=True)
class _ChatRequest:
    """The parts of a chat completion request the backend reads (validated)."""

    body: dict[str, Any]
    messages: list[dict[str, Any]]
    stream: bool
    include_usage: bool
    max_tokens: int | None


def _parse_chat(raw: bytes) -> _ChatRequest | web.Response:
    """The validated request, or the HTTP 400 to send."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return openai_error(400, "the request body is not valid JSON")
    if not isinstance(body, dict):
        return openai_error(400, "the request body must be a JSON object")
    messages = body.get("messages")
    if (
        not isinstance(messages, list)
        or not messages
        or not all(isinstance(m, dict) for m in messages)
    ):
        return openai_error(
            400, "'messages' must be a non-empty array of message objects", param="messages"
        )
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        return openai_error(400, "'stream' must be a boolean", param="stream")
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        return openai_error(400, "'stream_options' must be an object", param="stream_options")
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
    ):
        return openai_error(400, "'max_tokens' must be a positive integer", param="max_tokens")
    include_usage = bool(options and options.get("include_usage"))
    model = body.get("model")
    if model is None:
        return openai_error(400, "you must provide a model parameter", param="model")
    if not isinstance(model, str):
        return openai_error(
            400, "Invalid type for 'model': expected a string", param="model", code="invalid_type"
        )
    if model != MODEL:
        return model_not_found(model)
    return _ChatRequest(body, messages, stream, include_usage, max_tokens)


def model_not_found(model: object) -> web.Response:
    """OpenAI's 404 for a model it does not serve, word for word (``code``
    ``model_not_found``), with the one model this backend does serve (``/v1/responses``
    answers the same)."""
    shown = shown_model(model)  # inert when echoed, bounded at any depth
    return openai_error(
        404,
        f"The model `{shown}` does not exist or you do not have access to it. "
        f"This backend serves `{MODEL}` (GET /v1/models lists it).",
        code="model_not_found",
    )


def _usage(request_body: dict[str, Any], completion_tokens: int) -> dict[str, int]:
    """Token counts as OpenAI reports them (words stand in for tokens)."""
    prompt = 0
    for msg in request_body.get("messages") or ():
        if isinstance(msg, dict):
            content = msg.get("content")
            if isinstance(content, str):
                prompt += len(content.split()) + 4
            elif isinstance(content, list):
                prompt += 4 + sum(
                    len(p["text"].split())
                    for p in content
                    if isinstance(p, dict) and isinstance(p.get("text"), str)
                )
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt + completion_tokens,
    }


async def chat_completions(request: web.Request) -> web.StreamResponse:
    """``POST /v1/chat/completions``: the corpus's answer, streamed or whole."""
    state = request.app[STATE]
    try:
        spec = faults_of(request)
    except FaultSpecError as exc:
        return openai_error(fault_status(exc), f"fault spec: {exc}", param="X-Streamcite-Fault")
    if spec.status is not None:
        return openai_error(spec.status, f"injected fault: HTTP {spec.status}", spec=spec)
    limit = state.config.max_body_bytes
    raw = await read_body(request, limit)
    if raw is None:
        return openai_error(413, f"the request body is larger than {limit} bytes")
    chat = _parse_chat(raw)
    if isinstance(chat, web.Response):
        return chat
    question = question_from_messages(chat.messages)
    if len(question) > state.config.max_question_chars:
        return openai_error(
            413,
            f"the question is longer than {state.config.max_question_chars} characters",
            param="messages",
        )
    plan, log = _plan(request, state, chat, question, spec)
    if chat.stream:
        return await stream_completion(request, plan, log)
    await injected_delay(plan.first_delay)
    return json_response(_completion(plan, _usage(chat.body, len(plan.pieces))))


def _plan(
    request: web.Request, state: BackendState, chat: _ChatRequest, question: str, spec: FaultSpec
) -> tuple[StreamPlan, Any]:
    """Answer ``question``, keep the answer for the Wikit endpoints, and plan the reply
    (with the logger bound to the completion)."""
    answer = state.answer(question)
    if spec.hallucinate:
        answer = with_wrong_number(answer)
    completion_id = "chatcmpl-" + secrets.token_hex(12)
    created = int(time.time())
    state.store.put(StoredAnswer(completion_id, created, answer, spec.sources_404_until))
    pieces = token_pieces(answer.text)
    finish_reason = "stop"
    if chat.max_tokens is not None and len(pieces) > chat.max_tokens:
        pieces, finish_reason = pieces[: chat.max_tokens], "length"
    first_delay = spec.first_token_delay
    if first_delay is None:
        first_delay = state.config.first_token_delay
    token_delay = spec.token_delay if spec.token_delay is not None else state.config.token_delay
    log = state.log.bind(completion_id=completion_id, stream=chat.stream)
    log.debug(
        "chat completion", found=answer.found, pieces=len(pieces), faults=spec.to_spec() or None
    )
    plan = StreamPlan(
        completion_id=completion_id,
        created=created,
        pieces=pieces,
        finish_reason=finish_reason,
        citations=answer.citations(root_url(request)),
        usage=_usage(chat.body, len(pieces)) if chat.include_usage else None,
        spec=spec,
        first_delay=first_delay or 0.0,
        token_delay=token_delay or 0.0,
    )
    return plan, log


def _completion(plan: StreamPlan, usage: dict[str, int]) -> dict[str, Any]:
    """The whole (non-streamed) chat completion object."""
    return {
        "id": plan.completion_id,
        "object": "chat.completion",
        "created": plan.created,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "".join(plan.pieces), "refusal": None},
                "logprobs": None,
                "finish_reason": plan.finish_reason,
            }
        ],
        "usage": usage,
        "citations": plan.citations,
    }


async def models(request: web.Request) -> web.Response:
    """``GET /v1/models``: the one model (in Anthropic's list shape when the request has
    an ``anthropic-version`` header, as Anthropic's SDK sends)."""
    if "anthropic-version" in request.headers:
        return anthropic_models()
    return json_response(
        {
            "object": "list",
            "data": [
                {"id": MODEL, "object": "model", "created": 1_700_000_000, "owned_by": "streamcite"}
            ],
        }
    )
