"""The embedded backend under the strictest reading each vendor SDK offers, streamed and
whole: ``openai`` and ``anthropic`` with ``_strict_response_validation=True`` (every
response validated against the SDK's types: a required field missing is an
``APIResponseValidationError``), and every raw body and event of the Gemini and Cohere
endpoints validated by ``google-genai``'s types (which forbid unknown fields) and
``cohere``'s, in pydantic's strict mode."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pydantic
import pytest
from cohere import V2ChatResponse
from cohere.v2 import V2ChatStreamResponse
from google.genai import types as genai_types

from streamcite.local.server import LocalBackend
from tests.test_backend_dialects_sdk import CASES, EN_Q, MODEL, backends, expected

__all__ = ["backends"]  # the fixture, shared with the SDK tests


def _openai(backend: LocalBackend) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        base_url=backend.base_url,
        api_key="sk-local",
        max_retries=0,
        _strict_response_validation=True,
    )


def _anthropic(backend: LocalBackend) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        base_url=backend.root_url,
        api_key="sk-local",
        max_retries=0,
        _strict_response_validation=True,
    )


@pytest.mark.parametrize(("corpus", "question"), CASES)
async def test_openai_strict_responses_and_chat(
    backends: dict[str, LocalBackend], corpus: str, question: str
) -> None:
    backend = backends[corpus]
    want = expected(backend, question).text
    client = _openai(backend)
    whole = await client.responses.create(model=MODEL, input=question)
    assert whole.output_text == want
    assert whole.usage is not None and whole.usage.input_tokens_details.cache_write_tokens == 0
    async with client.responses.stream(model=MODEL, input=question) as stream:
        kinds = [event.type async for event in stream]
        streamed = await stream.get_final_response()
    assert streamed.output_text == want and kinds[-1] == "response.completed"
    cut = await client.responses.create(model=MODEL, input=question, max_output_tokens=2)
    assert cut.status == "incomplete"

    messages: Any = [{"role": "user", "content": question}]
    chat = await client.chat.completions.create(model=MODEL, messages=messages)
    assert chat.choices[0].message.content
    chunks = await client.chat.completions.create(
        model=MODEL, messages=messages, stream=True, stream_options={"include_usage": True}
    )
    text = "".join([c.choices[0].delta.content or "" async for c in chunks if c.choices])
    assert text == chat.choices[0].message.content
    assert [m.id async for m in client.models.list()] == [MODEL]


@pytest.mark.parametrize(("corpus", "question"), CASES)
async def test_anthropic_strict_messages(
    backends: dict[str, LocalBackend], corpus: str, question: str
) -> None:
    backend = backends[corpus]
    want = expected(backend, question).text
    client = _anthropic(backend)
    request: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": question}],
    }
    whole = await client.messages.create(**request)
    assert "".join(b.text for b in whole.content if b.type == "text") == want
    async with client.messages.stream(**request) as stream:
        async for _ in stream:
            pass
        streamed = await stream.get_final_message()
    assert _blocks(streamed) == _blocks(whole)
    short = await client.messages.create(**{**request, "max_tokens": 5})
    assert short.stop_reason == "max_tokens"
    models = [m async for m in client.models.list()]
    assert [(m.id, m.lifecycle) for m in models] == [(MODEL, "active")]


def _blocks(message: Any) -> list[tuple[str, list[str]]]:
    return [(b.text, [c.cited_text for c in b.citations or []]) for b in message.content]


def _data_lines(body: str) -> Iterator[str]:
    for block in body.replace("\r\n", "\n").split("\n\n"):
        for line in block.split("\n"):
            if line.startswith("data:"):
                yield line[5:].strip()


def test_strict_validators_can_fail() -> None:
    """The validators below reject what they must (else the tests could not fail)."""
    with pytest.raises(pydantic.ValidationError):  # an unknown field: forbidden
        genai_types.GenerateContentResponse.model_validate_json('{"candidatez": []}', strict=True)
    with pytest.raises(pydantic.ValidationError):  # a required field missing
        pydantic.TypeAdapter(V2ChatStreamResponse).validate_json(
            '{"type": "content-delta", "index": "0"}', strict=True
        )
    with pytest.raises(pydantic.ValidationError):
        V2ChatResponse.model_validate_json('{"id": "x", "finish_reason": "COMPLETE"}', strict=True)


@pytest.mark.parametrize("version", ["v1beta", "v1"])
@pytest.mark.parametrize(("corpus", "question"), CASES)
async def test_gemini_bodies_and_chunks_as_google_genai_types(
    backends: dict[str, LocalBackend], corpus: str, question: str, version: str
) -> None:
    backend = backends[corpus]
    want = expected(backend, question).text
    base = f"{backend.root_url.rstrip('/')}/{version}/models/{MODEL}"
    body = {"contents": [{"role": "user", "parts": [{"text": question}]}]}
    read = genai_types.GenerateContentResponse.model_validate_json
    async with httpx.AsyncClient(timeout=10) as http:
        streamed = await http.post(f"{base}:streamGenerateContent?alt=sse", json=body)
        whole = await http.post(f"{base}:generateContent", json=body)
    chunks = [read(d, strict=True) for d in _data_lines(streamed.text)]
    assert "".join(c.text or "" for c in chunks) == want
    assert read(whole.text, strict=True).text == want


@pytest.mark.parametrize(("corpus", "question"), CASES)
async def test_cohere_bodies_and_events_as_cohere_types(
    backends: dict[str, LocalBackend], corpus: str, question: str
) -> None:
    backend = backends[corpus]
    want = expected(backend, question).text
    url = f"{backend.root_url.rstrip('/')}/v2/chat"
    body = {"model": MODEL, "messages": [{"role": "user", "content": question}]}
    async with httpx.AsyncClient(timeout=10) as http:
        streamed = await http.post(url, json={**body, "stream": True})
        whole = await http.post(url, json={**body, "stream": False})
    event = pydantic.TypeAdapter(V2ChatStreamResponse)
    data = list(_data_lines(streamed.text))
    assert data[-1] == "[DONE]"
    events = [event.validate_json(d, strict=True) for d in data[:-1]]
    text = "".join(
        e.delta.message.content.text or ""
        for e in events
        if e.type == "content-delta" and e.delta and e.delta.message and e.delta.message.content
    )
    assert text == want
    answer = V2ChatResponse.model_validate_json(whole.text, strict=True)
    assert "".join(getattr(c, "text", "") for c in answer.message.content or []) == want


async def test_each_sdk_at_its_own_root(backends: dict[str, LocalBackend]) -> None:
    """The strict clients at the base URL each SDK documents (OpenAI ``…/v1``,
    Anthropic the server's root) read the same answer."""
    backend = backends["builtin"]
    want = expected(backend, EN_Q).text
    oa = await _openai(backend).responses.create(model=MODEL, input=EN_Q)
    an = await _anthropic(backend).messages.create(
        model=MODEL, max_tokens=1024, messages=[{"role": "user", "content": EN_Q}]
    )
    assert oa.output_text == want == "".join(b.text for b in an.content if b.type == "text")
