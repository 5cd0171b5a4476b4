"""A scriptable OpenAI-style upstream for pipeline tests (real HTTP on loopback)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web


def chunk(
    content: str | None = None, finish: str | None = None, *, index: int = 0, **extra: Any
) -> bytes:
    delta: dict[str, Any] = {} if content is None else {"content": content}
    body = {
        "id": "chatcmpl-t1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": index, "delta": delta, "finish_reason": finish}],
        **extra,
    }
    return b"data: " + orjson.dumps(body) + b"\n\n"


CITATIONS = [
    {
        "cited_text": "Titanic was directed by James Cameron.",
        "document_title": "Films",
        "document_index": 0,
    },
    {
        "cited_text": "It stars Leonardo DiCaprio and Kate Winslet.",
        "document_title": "Cast",
        "document_index": 1,
    },
]

WORDS = [
    "Titanic",
    " was",
    " directed",
    " by",
    " James",
    " Cameron",
    " [",
    "1",
    "].",
    " It",
    " stars",
    " Kate",
    " Winslet",
    " [2].",
]


def full_stream(words: list[str] = WORDS) -> list[bytes]:
    parts = [chunk(w) for w in words]
    parts.append(chunk(None, "stop", citations=CITATIONS))
    parts.append(b"data: [DONE]\n\n")
    return parts


@dataclass
class Upstream:
    """Behaviour per request; counters let tests see what the client did."""

    parts: list[bytes] = field(default_factory=full_stream)
    status: int = 200
    status_times: int = 0
    """Answer ``status`` for the first N requests, then stream."""
    retry_after: str | None = None
    error_body: bytes = b'{"error": {"message": "nope", "type": "rate_limit_exceeded"}}'
    delay_between: float = 0.0
    stall_after: int | None = None
    reset_after: int | None = None
    content_type: str = "text/event-stream"
    json_body: bytes | None = None
    requests: int = 0
    open_streams: int = 0
    closed_by_client: int = 0
    seen_auth: list[str] = field(default_factory=list)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self.handle)
        return app

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests += 1
        self.seen_auth.append(request.headers.get("Authorization", ""))
        await request.read()
        if self.status != 200 and self.requests <= (self.status_times or 10**9):
            headers = {"Retry-After": self.retry_after} if self.retry_after else {}
            return web.Response(
                status=self.status,
                body=self.error_body,
                headers=headers,
                content_type="application/json",
            )
        if self.json_body is not None:
            return web.Response(body=self.json_body, content_type="application/json")
        resp = web.StreamResponse(headers={"Content-Type": self.content_type})
        await resp.prepare(request)
        self.open_streams += 1
        try:
            for i, part in enumerate(self.parts):
                if self.stall_after is not None and i == self.stall_after:
                    await asyncio.sleep(3600)
                if self.reset_after is not None and i == self.reset_after:
                    assert request.transport is not None
                    request.transport.abort()
                    return resp
                await resp.write(part)
                if self.delay_between:
                    await asyncio.sleep(self.delay_between)
        except (ConnectionResetError, asyncio.CancelledError):
            self.closed_by_client += 1
            return resp
        finally:
            self.open_streams -= 1
        return resp


@contextlib.contextmanager
def threaded_upstream(stream: bytes, path: str = "/v1/chat/completions") -> Iterator[str]:
    """An endpoint at ``path`` (OpenAI's chat by default) streaming ``stream``, in its own
    thread and loop (for a CLI that runs its own loop)."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    url: list[str] = []

    async def chat(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(stream)
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_post(path, chat)
    runner = web.AppRunner(app, shutdown_timeout=1.0)

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        url.append(f"http://127.0.0.1:{runner.addresses[0][1]}/v1")
        ready.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(10), "upstream did not start"
    try:
        yield url[0]
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
