"""Hostile request bodies against the embedded backend's five APIs (httpx over loopback),
and the same content parts through the AI SDK adapter and ``chat_request_as``.

A text part whose ``text`` is not a string — here a JSON array nested 1015 deep, which
orjson accepts — was ``str()``-ed: a ``RecursionError`` answered as a bare 500 (no API
error shape, a traceback in the log). It is no text now: the question is the rest.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from streamcite.local.server import LocalBackend
from streamcite.pipeline.bodies import chat_request_as
from streamcite.web.stream import question_from_ui_messages

M = "streamcite-local"
DEEP = "[" * 1015 + "]" * 1015
PART = '{"type": "%s", "text": ' + DEEP + "}"
Q = '{"type": "%s", "text": "How many days a week can I work from home?"}'
BODIES = {
    "chat": ("/v1/chat/completions", '{"model": "%s", "messages": [{"role": "user", "content": [%s, %s]}]}'),
    "responses": ("/v1/responses", '{"model": "%s", "input": [{"role": "user", "content": [%s, %s]}]}'),
    "anthropic": ("/v1/messages", '{"model": "%s", "max_tokens": 50, "messages": [{"role": "user", "content": [%s, %s]}]}'),
    "cohere": ("/v2/chat", '{"model": "%s", "messages": [{"role": "user", "content": [%s, %s]}]}'),
}  # fmt: skip


@pytest.fixture
async def backend() -> AsyncIterator[LocalBackend]:
    async with LocalBackend() as b:
        yield b


@pytest.mark.parametrize("api", [*BODIES, "gemini"])
async def test_a_deeply_nested_text_part_is_no_text_not_a_500(
    backend: LocalBackend, api: str
) -> None:
    if api == "gemini":
        path = f"/v1beta/models/{M}:generateContent"
        # (Gemini read only string parts already: the control case)
        question = '{"text": "How many days a week can I work from home?"}'
        raw = (
            '{"contents": [{"role": "user", "parts": [{"text": ' + DEEP + "}, " + question + "]}]}"
        )
    else:
        path, template = BODIES[api]
        kind = "input_text" if api == "responses" else "text"
        raw = template % (M, PART % kind, Q % kind)
    async with httpx.AsyncClient(base_url=backend.root_url, timeout=30) as client:
        resp = await client.post(path, content=raw, headers={"Content-Type": "application/json"})
    assert resp.status_code == 200, resp.text[:300]
    assert "remote" in resp.text.lower()  # answered from the string part


def test_ui_messages_and_chat_bodies_skip_a_nested_text() -> None:
    import orjson

    deep = orjson.loads(DEEP)
    parts = [{"type": "text", "text": deep}, {"type": "text", "text": "Where?"}]
    body = {"messages": [{"role": "user", "parts": parts}]}
    assert question_from_ui_messages(body) == "Where?"
    chat = {"model": "m", "messages": [{"role": "user", "content": parts}]}
    assert chat_request_as("anthropic", chat)["messages"] == [{"role": "user", "content": "Where?"}]


NESTED_MODEL = "[" * 300 + "]" * 300  # beyond orjson's 255 levels of dumps
SIMPLE = {
    "chat": ("/v1/chat/completions", '{"model": %s, "messages": [{"role": "user", "content": "Hi?"}]}'),
    "responses": ("/v1/responses", '{"model": %s, "input": "Hi?"}'),
    "anthropic": ("/v1/messages", '{"model": %s, "max_tokens": 50, "messages": [{"role": "user", "content": "Hi?"}]}'),
    "cohere": ("/v2/chat", '{"model": %s, "messages": [{"role": "user", "content": "Hi?"}]}'),
}  # fmt: skip


@pytest.mark.parametrize("api", SIMPLE)
async def test_a_model_nested_beyond_255_levels_is_a_4xx_in_the_apis_shape(
    backend: LocalBackend, api: str
) -> None:
    # Before: orjson.dumps(model) raised in the 404's message: a bare 500 and a traceback.
    path, template = SIMPLE[api]
    async with httpx.AsyncClient(base_url=backend.root_url, timeout=30) as client:
        resp = await client.post(
            path, content=template % NESTED_MODEL, headers={"Content-Type": "application/json"}
        )
    assert 400 <= resp.status_code < 500, resp.text[:300]
    body = resp.json()
    assert isinstance(body, dict) and ("error" in body or "message" in body or "type" in body)
    assert len(resp.text) < 2000
    if api == "chat":
        assert resp.status_code == 400
        assert (
            body["error"]["param"] == "model" and body["error"]["type"] == "invalid_request_error"
        )
