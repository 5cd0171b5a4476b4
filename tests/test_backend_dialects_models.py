"""Unknown model names on the backend's Responses, Messages, Gemini and Cohere endpoints.

Each API refuses a model other than ``streamcite.local.MODEL`` with its own 404 (as
``/v1/chat/completions`` answers OpenAI's ``model_not_found``), before any answer is made,
and lists the model it serves: ``GET /v1/models`` (Anthropic's shape with
``anthropic-version``) and ``GET /{v1beta,v1}/models``. Read on the wire (httpx over
loopback) and through each vendor's SDK, which must raise its not-found error.

Before: each API answered 200 and echoed whatever model it was asked for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anthropic
import cohere
import httpx
import openai
import orjson
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamcite.local import MODEL
from streamcite.local.server import LocalBackend
from streamcite.local.state import STATE

Q = "How many days a week can I work from home?"
USER = [{"role": "user", "content": Q}]
WRONG = "gpt-4o"


@pytest.fixture
async def backend() -> AsyncIterator[LocalBackend]:
    async with LocalBackend() as b:
        yield b


def _request(api: str, model: str, stream: bool) -> tuple[str, dict[str, Any]]:
    if api == "responses":
        return "/v1/responses", {"model": model, "input": Q, "stream": stream}
    if api == "anthropic":
        body = {"model": model, "max_tokens": 64, "messages": USER, "stream": stream}
        return "/v1/messages", body
    if api == "cohere":
        return "/v2/chat", {"model": model, "messages": USER, "stream": stream}
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    path = f"/v1beta/models/{httpx.URL(model).raw_path.decode()}:{method}"
    return path, {"contents": [{"role": "user", "parts": [{"text": Q}]}]}


async def _post(backend: LocalBackend, api: str, model: str, stream: bool) -> httpx.Response:
    path, body = _request(api, model, stream)
    async with httpx.AsyncClient(base_url=backend.root_url, timeout=10) as client:
        return await client.post(path, content=orjson.dumps(body))


def _message(api: str, body: Any) -> str:
    """The error message of ``body`` in ``api``'s own error shape (asserting the shape)."""
    if api == "responses":
        assert body["error"]["code"] == "model_not_found"
        assert body["error"]["type"] == "invalid_request_error"
        return str(body["error"]["message"])
    if api == "anthropic":
        assert body["type"] == "error" and body["error"]["type"] == "not_found_error"
        return str(body["error"]["message"])
    if api == "cohere":
        assert set(body) == {"id", "message"}
        return str(body["message"])
    assert body["error"]["code"] == 404 and body["error"]["status"] == "NOT_FOUND"
    return str(body["error"]["message"])


APIS = ["responses", "anthropic", "gemini", "cohere"]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("api", APIS)
async def test_an_unknown_model_gets_the_apis_own_404(
    backend: LocalBackend, api: str, stream: bool
) -> None:
    before = len(backend.app[STATE].store)
    response = await _post(backend, api, WRONG, stream)
    assert response.status_code == 404, response.text
    assert response.headers["content-type"].startswith("application/json")
    message = _message(api, response.json())
    assert WRONG in message and MODEL in message
    assert len(backend.app[STATE].store) == before  # refused before any answer was made


@pytest.mark.parametrize("api", APIS)
async def test_the_served_model_is_answered_and_echoed(backend: LocalBackend, api: str) -> None:
    response = await _post(backend, api, MODEL, False)
    assert response.status_code == 200, response.text
    body = response.json()
    echoed = body.get("modelVersion") if api == "gemini" else body.get("model")
    assert echoed in (MODEL, None)  # Cohere's v2 body carries no model


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=st.text(min_size=1, max_size=300).filter(lambda m: m != MODEL))
async def test_any_other_model_name_is_refused_and_quoted_inert(model: str) -> None:
    async with LocalBackend() as backend:
        for api in ("responses", "anthropic", "cohere"):
            response = await _post(backend, api, model, False)
            assert response.status_code == 404
            message = _message(api, response.json())
            assert len(message) < 400
            assert all(c.isprintable() for c in message)


async def test_a_missing_model_is_a_400_on_responses(backend: LocalBackend) -> None:
    async with httpx.AsyncClient(base_url=backend.root_url, timeout=10) as client:
        response = await client.post("/v1/responses", json={"input": Q})
    assert response.status_code == 400
    assert "model" in response.json()["error"]["message"]


# --- the model lists -------------------------------------------------------------


async def test_model_lists_in_each_shape(backend: LocalBackend) -> None:
    async with httpx.AsyncClient(base_url=backend.root_url, timeout=10) as client:
        oai = (await client.get("/v1/models")).json()
        claude = (
            await client.get("/v1/models", headers={"anthropic-version": "2023-06-01"})
        ).json()
        gem = (await client.get("/v1beta/models")).json()
        one = await client.get(f"/v1beta/models/{MODEL}")
        other = await client.get("/v1/models/gemini-2.0-flash")
    assert [m["id"] for m in oai["data"]] == [MODEL] and oai["object"] == "list"
    assert [(m["type"], m["id"]) for m in claude["data"]] == [("model", MODEL)]
    assert claude["has_more"] is False
    assert [m["name"] for m in gem["models"]] == [f"models/{MODEL}"]
    assert one.status_code == 200 and one.json()["name"] == f"models/{MODEL}"
    assert other.status_code == 404 and other.json()["error"]["status"] == "NOT_FOUND"


# --- through the vendors' SDKs ----------------------------------------------------


async def test_sdks_raise_their_not_found_error(backend: LocalBackend) -> None:
    oai = openai.AsyncOpenAI(base_url=backend.base_url, api_key="x", max_retries=0)
    with pytest.raises(openai.NotFoundError):
        await oai.responses.create(model=WRONG, input=Q)
    claude = anthropic.AsyncAnthropic(base_url=backend.root_url, api_key="x", max_retries=0)
    with pytest.raises(anthropic.NotFoundError):
        await claude.messages.create(model="claude-x", max_tokens=10, messages=USER)  # type: ignore[arg-type]
    listed = await claude.models.list()
    assert [m.id for m in listed.data] == [MODEL]
    gemini = genai.Client(
        api_key="x", http_options=genai_types.HttpOptions(base_url=backend.root_url)
    )
    with pytest.raises(genai_errors.ClientError) as caught:
        await gemini.aio.models.generate_content(model="gemini-x", contents=Q)
    assert caught.value.code == 404
    co = cohere.AsyncClientV2(api_key="x", base_url=backend.root_url)
    with pytest.raises(cohere.errors.NotFoundError):
        await co.chat(model="command-x", messages=USER)  # type: ignore[arg-type]
