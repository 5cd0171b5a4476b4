"""The routes of the four other APIs the local backend speaks (beside chat completions).

- ``POST /v1/responses``: OpenAI Responses (:mod:`~streamcite.local.responses_api`);
- ``POST /v1/messages``: Anthropic Messages (:mod:`~streamcite.local.anthropic_api`);
- ``POST /{v1beta,v1}/models/{model}:generateContent`` and ``:streamGenerateContent``:
  Gemini (:mod:`~streamcite.local.gemini_api`);
- ``POST /v2/chat``: Cohere v2 chat (:mod:`~streamcite.local.cohere_api`).

Each accepts its API's auth header (``Authorization: Bearer``, ``x-api-key`` with
``anthropic-version``, ``x-goog-api-key``) without checking it, as the chat endpoint
does; bodies are capped by ``BackendConfig.max_body_bytes``.
"""

from __future__ import annotations

from aiohttp import web

from streamcite.local.anthropic_api import messages
from streamcite.local.cohere_api import cohere_chat
from streamcite.local.gemini_api import GEMINI_PATH, generate_content
from streamcite.local.responses_api import responses

__all__ = ["add_dialect_routes"]


def add_dialect_routes(app: web.Application) -> None:
    """Serve the Responses, Messages, Gemini and Cohere v2 endpoints on ``app``."""
    app.router.add_post("/v1/responses", responses)
    app.router.add_post("/v1/messages", messages)
    app.router.add_post(GEMINI_PATH, generate_content)
    app.router.add_post("/v2/chat", cohere_chat)
