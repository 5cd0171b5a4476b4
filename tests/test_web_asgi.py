"""The ASGI adapter and examples/fastapi_app.py, served by uvicorn on 127.0.0.1 (real loopback)."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route

from streamcite.events import DoneEvent, TokenEvent
from streamcite.local.server import BackendConfig, LocalBackend
from streamcite.relay.memlog import MemoryStreamLog
from streamcite.web.asgi import EventStreamResponse, UIMessageStreamResponse
from streamcite.web.eventsse import record_events
from tests.test_web import chunks
from tests.test_web_node import READY, run_node

EXAMPLE = Path(__file__).parent.parent / "examples" / "fastapi_app.py"
QUESTION = "Combien de jours de télétravail par semaine ?"


def body(question: str) -> dict[str, Any]:
    parts = [{"type": "text", "text": question}]
    return {"id": "c", "messages": [{"id": "u", "role": "user", "parts": parts}]}


async def test_fastapi_example_serves_cited_answers(
    uvicorn_serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with LocalBackend(BackendConfig()) as backend:
        monkeypatch.setenv("STREAMCITE_LOCAL_URL", backend.root_url)
        spec = importlib.util.spec_from_file_location("fastapi_app_test", EXAMPLE)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        url = await uvicorn_serve(module.app) + "/api/chat"
        async with httpx.AsyncClient(timeout=30) as client:
            r = await client.post(url, json=body(QUESTION))
            assert r.status_code == 200
            assert r.headers["x-vercel-ai-ui-message-stream"] == "v1"
            got = chunks(r.content)
            assert (await client.post(url, json={"messages": []})).status_code == 400
        types = [c["type"] for c in got]
        assert "[1]" in "".join(c["delta"] for c in got if c["type"] == "text-delta")
        assert types.count("data-sources") == 1 and types.count("data-grounding") == 1
        if READY:  # the AI SDK's own client against the example
            result = await run_node(url, QUESTION)
            parts = result["message"]["parts"]
            assert result["errors"] == []
            assert any(p["type"] == "data-grounding" for p in parts)
            assert any(p["type"].startswith("source-") for p in parts)


async def test_a_client_abort_closes_the_upstream(uvicorn_serve: Any) -> None:
    closed = asyncio.Event()

    async def endless() -> AsyncIterator[Any]:
        try:
            while True:
                yield TokenEvent(text="tok ")
                await asyncio.sleep(0.01)
        finally:
            closed.set()

    async def chat(request: Request) -> UIMessageStreamResponse:
        return UIMessageStreamResponse(endless())

    url = await uvicorn_serve(Starlette(routes=[Route("/api/chat", chat, methods=["POST"])]))
    async with (
        httpx.AsyncClient(timeout=10) as client,
        client.stream("POST", url + "/api/chat", json=body("q")) as r,
    ):
        async for _ in r.aiter_bytes():
            break
    await asyncio.wait_for(closed.wait(), 10)


async def test_event_stream_resumes_after_last_event_id(uvicorn_serve: Any) -> None:
    log = MemoryStreamLog()

    async def events() -> AsyncIterator[Any]:
        for t in ("a", "b", "c"):
            yield TokenEvent(text=t)
        yield DoneEvent()

    await record_events(log, "s1", events())

    async def stream(request: Request) -> EventStreamResponse:
        return EventStreamResponse(log=log, stream_id="s1", request=request)

    url = await uvicorn_serve(Starlette(routes=[Route("/events", stream)]))
    async with httpx.AsyncClient(timeout=10) as client:
        full = (await client.get(url + "/events")).text
        rest = (await client.get(url + "/events", headers={"Last-Event-ID": "2"})).text
    assert [line for line in full.split("\n") if line.startswith("id:")] == [
        "id: 1", "id: 2", "id: 3", "id: 4",
    ]  # fmt: skip
    assert rest.startswith("id: 3\ndata: ") and '"text":"c"' in rest and "id: 2" not in rest
    await log.aclose()


@pytest.mark.parametrize("value", ["²", "①", "-3", "x"])
async def test_a_bad_last_event_id_is_a_400_not_a_500(uvicorn_serve: Any, value: str) -> None:
    log = MemoryStreamLog()
    await record_events(log, "s1", _one_token())

    async def stream(request: Request) -> EventStreamResponse:
        return EventStreamResponse(log=log, stream_id="s1", request=request)

    url = await uvicorn_serve(Starlette(routes=[Route("/events", stream)]))
    async with httpx.AsyncClient(timeout=10) as client:
        r = await client.get(url + "/events", headers={"Last-Event-ID": value.encode()})
    assert r.status_code == 400 and r.json()["code"] == "bad_message"
    await log.aclose()


async def _one_token() -> AsyncIterator[Any]:
    yield TokenEvent(text="a")
    yield DoneEvent()
