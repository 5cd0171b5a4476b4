"""The routes of the four other APIs the local backend speaks (beside chat completions).

- ``POST /v1/responses``: OpenAI Responses (:mod:`~streamcite.local.apis.responses`);
- ``POST /v1/messages``: Anthropic Messages (:mod:`~streamcite.local.apis.anthropic`);
- ``POST /{v1beta,v1}/models/{model}:generateContent`` and ``:streamGenerateContent``:
  Gemini (:mod:`~streamcite.local.apis.gemini`);
- ``POST /v2/chat``: Cohere v2 chat (:mod:`~streamcite.local.apis.cohere`).

Each accepts its API's auth header (``Authorization: Bearer``, ``x-api-key`` with
``anthropic-version``, ``x-goog-api-key``) without checking it, as the chat endpoint
does; bodies are capped by ``BackendConfig.max_body_bytes``. Each refuses a model other
than ``streamcite.local.MODEL`` with its own 404, and lists it: ``GET /v1/models``
(Anthropic's shape when asked with ``anthropic-version``), ``GET /v1beta/models``
(Gemini's; ``GET /v1/models`` is OpenAI's, registered first).
"""

from __future__ import annotations

import re

from aiohttp import web

from streamcite.local.apis.anthropic import anthropic_error, messages
from streamcite.local.apis.cohere import cohere_chat, cohere_error
from streamcite.local.apis.gemini import (
    GEMINI_MODELS_PATH,
    GEMINI_PATH,
    gemini_models,
    generate_content,
)
from streamcite.local.apis.google import google_error
from streamcite.local.apis.responses import responses

__all__ = ["add_dialect_routes", "dialect_refusal"]

_GEMINI_RE = re.compile(r"^/v1(?:beta)?/models/[^/]+:")


def add_dialect_routes(app: web.Application) -> None:
    """Serve the Responses, Messages, Gemini and Cohere v2 endpoints on ``app``."""
    app.router.add_post("/v1/responses", responses)
    app.router.add_post("/v1/messages", messages)
    app.router.add_post(GEMINI_PATH, generate_content)
    app.router.add_get(GEMINI_MODELS_PATH, gemini_models)
    app.router.add_get(GEMINI_PATH, gemini_models)
    app.router.add_post("/v2/chat", cohere_chat)


def dialect_refusal(path: str, status: int, message: str) -> web.Response | None:
    """The error response, in the API's own shape, for a refused request to ``path``
    (None when ``path`` is not one of these APIs'; ``/v1/responses`` is OpenAI's, as
    every other ``/v1/`` path)."""
    if path == "/v1/messages":
        return anthropic_error(status, message)
    if path == "/v2/chat":
        return cohere_error(status, message)
    if _GEMINI_RE.match(path):
        return google_error(status, message)
    return None
