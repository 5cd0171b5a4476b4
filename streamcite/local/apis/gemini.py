"""Gemini's ``generateContent`` on the local backend, streamed or not.

``POST /{v1beta,v1}/models/{model}:streamGenerateContent?alt=sse`` and
``…:generateContent`` (google-genai defaults to ``v1``). The model is echoed from the
path as ``modelVersion``. Streamed, each ``data: `` line (with its space: the SDK needs
it) is a GenerateContentResponse in camelCase carrying one piece of the text, the
cumulative ``usageMetadata``, ``modelVersion`` and ``responseId``; the last one carries
no text, the ``finishReason`` (``STOP`` or ``MAX_TOKENS``) and the
``groundingMetadata``:

- ``groundingChunks``: one per cited passage, ``{"retrievedContext": {"uri", "title",
  "text"}}`` (the citation's ``source_url``, document title and passage), in footnote
  order (chunk ``n - 1`` is footnote ``n``);
- ``groundingSupports``: one per cited sentence (footnote ``[n]`` included),
  ``{"segment": {"startIndex", "endIndex", "text"}, "groundingChunkIndices": [n - 1]}``
  where the offsets are UTF-8 BYTES into the answer text, as Gemini sends them
  (``startIndex`` 0 is left out, as Gemini does).

Faults: an HTTP status is Google's ``{"error": {"code", "message", "status"}}`` (429
``RESOURCE_EXHAUSTED``); ``error_at`` sends ``data: {"error": {"code": 503, …,
"status": "UNAVAILABLE"}}`` (the SDK raises it); ``no_done`` has nothing to leave
out (Gemini has no end-of-stream event). Stream positions count text chunks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web

from streamcite.local.apis.google import google_error
from streamcite.local.apis.plan import (
    DialectPlan,
    DialectRequest,
    plan_answer,
    positive_int,
    shown_model,
    utf8_offset,
    word_count,
)
from streamcite.local.apis.stream import Script, cut_of, send_script, sse, sse_malformed
from streamcite.local.config import MODEL
from streamcite.local.faults import FaultSpec
from streamcite.local.replies import json_response, retry_headers
from streamcite.local.request_guards import injected_delay
from streamcite.local.state import STATE

__all__ = ["GEMINI_MODELS_PATH", "GEMINI_PATH", "gemini_body", "gemini_models", "generate_content"]

GEMINI_MODELS_PATH = "/{version:v1|v1beta}/models"
"""``GET``: the model list (``models.list``); ``/v1/models`` is OpenAI's list, registered first."""

GEMINI_PATH = "/{version:v1|v1beta}/models/{target}"
"""``{target}`` is ``MODEL:generateContent`` or ``MODEL:streamGenerateContent``."""

_METHODS = {"generateContent": False, "streamGenerateContent": True}
_UNAVAILABLE = {
    "error": {
        "code": 503,
        "message": "The model is overloaded. Please try again later. (injected fault)",
        "status": "UNAVAILABLE",
    }
}


def _error(status: int, message: str, spec: FaultSpec | None) -> web.Response:
    return google_error(status, message, retry_headers(spec))


def _texts(content: Any) -> list[str]:
    parts = content.get("parts") if isinstance(content, dict) else None
    if not isinstance(parts, list):
        return []
    return [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]


def _parser(model: str) -> Callable[[dict[str, Any]], DialectRequest | str]:
    def parse(body: dict[str, Any]) -> DialectRequest | str:
        contents = body.get("contents")
        if not isinstance(contents, list) or not contents:
            return "* GenerateContentRequest.contents: contents is not specified"
        if not all(isinstance(c, dict) for c in contents):
            return "Invalid JSON payload received. 'contents' must hold Content objects."
        question = ""
        for c in reversed(contents):
            if c.get("role", "user") == "user":
                question = " ".join(_texts(c))
                break
        config = body.get("generationConfig") or {}
        if not isinstance(config, dict):
            return "Invalid JSON payload received. 'generationConfig' must be an object."
        max_tokens = config.get("maxOutputTokens")
        if max_tokens is not None and not positive_int(max_tokens):
            return "* GenerationConfig.max_output_tokens: must be a positive integer"
        system = " ".join(_texts(body.get("systemInstruction")))
        words = word_count(question) + word_count(system)
        return DialectRequest(question, False, max_tokens, model, words)

    return parse


def _model_info() -> dict[str, Any]:
    return {
        "name": f"models/{MODEL}",
        "version": "1",
        "displayName": MODEL,
        "description": "The streamcite local backend's corpus answerer.",
        "supportedGenerationMethods": list(_METHODS),
    }


async def gemini_models(request: web.Request) -> web.Response:
    """``GET /{v1,v1beta}/models``: the one model; ``GET …/models/{model}``: it, or
    Google's 404 ``NOT_FOUND``."""
    target = request.match_info.get("target")
    if target is None:
        return json_response({"models": [_model_info()]})
    if target.removeprefix("models/") != MODEL:
        return google_error(404, f"models/{shown_model(target)} is not found.")
    return json_response(_model_info())


async def generate_content(request: web.Request) -> web.StreamResponse:
    """``POST /{v1,v1beta}/models/{model}:{generateContent,streamGenerateContent}``."""
    model, _, method = request.match_info["target"].rpartition(":")
    stream = _METHODS.get(method)
    if not model or stream is None:
        return google_error(404, f"The requested URL {request.path} was not found on this server.")
    version = request.match_info["version"]

    def unknown_model(shown: str) -> web.Response:
        return google_error(
            404,
            f"models/{shown} is not found for API version {version}, or is not supported"
            f" for {method}. Call ListModels to see the list of available models and their"
            f" supported methods. This backend serves models/{MODEL}.",
        )

    plan = await plan_answer(
        request, _error, _parser(model), unknown_model=unknown_model, stream=stream
    )
    if isinstance(plan, web.Response):
        return plan
    log = request.app[STATE].log.bind(response_id=plan.answer_id, stream=plan.stream)
    if plan.stream:
        return await send_script(request, _script(plan), plan, log)
    await injected_delay(plan.first_delay)
    return json_response(gemini_body(plan))


def grounding_metadata(plan: DialectPlan) -> dict[str, Any]:
    """Gemini's ``groundingMetadata`` of the answer (segment offsets in UTF-8 bytes)."""
    chunks = [
        {
            "retrievedContext": {
                "uri": c["source_url"],
                "title": c["document_title"],
                "text": c["cited_text"],
            }
        }
        for c in plan.citations
    ]
    supports = []
    text = plan.text
    for s in plan.segments:
        segment: dict[str, Any] = {
            "endIndex": utf8_offset(text, s.end),
            "text": text[s.start : s.end],
        }
        start = utf8_offset(text, s.start)
        if start:
            segment["startIndex"] = start
        supports.append({"segment": segment, "groundingChunkIndices": [s.number - 1]})
    return {"groundingChunks": chunks, "groundingSupports": supports}


def _usage(plan: DialectPlan, completion: int) -> dict[str, int]:
    return {
        "promptTokenCount": plan.prompt_tokens,
        "candidatesTokenCount": completion,
        "totalTokenCount": plan.prompt_tokens + completion,
    }


def _finish(plan: DialectPlan) -> str:
    return "STOP" if plan.finish == "stop" else "MAX_TOKENS"


def gemini_body(plan: DialectPlan) -> dict[str, Any]:
    """The whole (non-streamed) GenerateContentResponse."""
    return {
        "candidates": [
            {
                "content": {"parts": [{"text": plan.text}], "role": "model"},
                "finishReason": _finish(plan),
                "index": 0,
                "groundingMetadata": grounding_metadata(plan),
            }
        ],
        "usageMetadata": _usage(plan, plan.completion_tokens),
        "modelVersion": plan.model,
        "responseId": plan.answer_id,
    }


def _script(plan: DialectPlan) -> Script:
    """The streamed chunks of ``plan``, its faults applied."""
    cut = cut_of(plan.spec, len(plan.pieces))
    tail = {"modelVersion": plan.model, "responseId": plan.answer_id}
    units = []
    for i, piece in enumerate(plan.pieces[: cut.sent]):
        chunk = {
            "candidates": [{"content": {"parts": [{"text": piece}], "role": "model"}, "index": 0}],
            "usageMetadata": _usage(plan, i + 1),
            **tail,
        }
        units.append(sse_malformed(None, chunk) if cut.malformed == i else sse(None, chunk))
    if cut.action == "error":
        return Script(b"", units, sse(None, _UNAVAILABLE), "error")
    last = {
        "candidates": [
            {
                "finishReason": _finish(plan),
                "index": 0,
                "groundingMetadata": grounding_metadata(plan),
            }
        ],
        "usageMetadata": _usage(plan, plan.completion_tokens),
        **tail,
    }
    closing = sse_malformed(None, last) if cut.finish_malformed else sse(None, last)
    return Script(b"", units, closing, cut.action)
