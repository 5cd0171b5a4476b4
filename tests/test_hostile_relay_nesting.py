"""``streamcite relay --api anthropic`` fed events nested ~1,000 deep, end to end: the
relay in a subprocess, a fake Anthropic upstream and the client over loopback. While
the events go through, ``/healthz`` answers at once, the stream ends with a typed
error and ``done``, and stderr stays small (docs/security.md, "Nested, oversized and
flooding upstream events")."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
import orjson
from aiohttp import web

from tests._dialect_sse import sse

DEEP = 990  # orjson reads up to 1,024 levels


def _nested_event() -> bytes:
    inner = '{"a":' * DEEP + '"NESTEDVALUE"' + "}" * DEEP
    data = (
        '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":'
        + inner
        + "}}"
    )
    return b"event: content_block_delta\ndata: " + data.encode() + b"\n\n"


def _text(text: str) -> bytes:
    delta = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": text},
    }
    return sse(delta, "content_block_delta")


def _stream() -> list[bytes]:
    start = {"type": "message_start", "message": {"id": "msg_1", "model": "claude"}}
    block = {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}
    end = {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn"},
        "usage": {"output_tokens": 5},
    }
    return [
        sse(start, "message_start"),
        sse(block, "content_block_start"),
        _text("Before. "),
        *([_nested_event()] * 20),
        _text("After."),
        sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
        sse(end, "message_delta"),
        sse({"type": "message_stop"}, "message_stop"),
    ]


@asynccontextmanager
async def _upstream() -> AsyncIterator[str]:
    parts = _stream()

    async def messages(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for part in parts:
            await resp.write(part)
        return resp

    app = web.Application()
    app.router.add_post("/v1/messages", messages)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    finally:
        await runner.cleanup()


@asynccontextmanager
async def _relay(base_url: str, stderr: bytearray) -> AsyncIterator[str]:
    """``streamcite relay --api anthropic`` in a subprocess; its root URL. Everything it
    writes to stderr is read into ``stderr`` as it comes (a full pipe would block it)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "streamcite.cli", "relay", "--api", "anthropic",
        "--base-url", base_url, "--model", "claude", "--grounding", "none", "--port", "0",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "STREAMCITE_RELAY_TOKEN": "", "ANTHROPIC_API_KEY": "k"},
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    err = proc.stderr

    async def drain() -> None:
        while chunk := await err.read(65536):
            stderr.extend(chunk)

    reader = asyncio.create_task(drain())
    try:
        line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
        assert " on http://127.0.0.1:" in line, line
        yield "http://127.0.0.1:" + line.rsplit(":", 1)[1].strip().rstrip("/")
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 15)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        await asyncio.wait_for(reader, 15)


async def test_nested_events_through_the_relay_keep_it_responsive_and_quiet() -> None:
    stderr = bytearray()
    async with (
        asyncio.timeout(90),
        _upstream() as upstream,
        _relay(upstream, stderr) as root,
        aiohttp.ClientSession() as http,
    ):
        worst = 0.0
        finished = asyncio.Event()

        async def probe() -> None:
            nonlocal worst
            while not finished.is_set():
                t = time.perf_counter()
                async with http.get(root + "/healthz", timeout=aiohttp.ClientTimeout(60)) as r:
                    assert r.status == 200
                worst = max(worst, time.perf_counter() - t)

        prober = asyncio.create_task(probe())
        events: list[dict[str, object]] = []
        ask = {"type": "ask", "question": "What is nested?", "ref": "r1"}
        try:
            async with http.post(root + "/sse", data=orjson.dumps(ask)) as resp:
                assert resp.status == 200, await resp.text()
                async for line in resp.content:
                    if line.startswith(b"data: "):
                        events.append(orjson.loads(line[6:]))
                        if events[-1].get("type") == "done":
                            break
        finally:
            finished.set()
            await prober
    types = [e.get("type") for e in events]
    assert types[-1] == "done", types
    text = "".join(str(e.get("text", "")) for e in events if e.get("type") == "token")
    assert text == "Before. After."
    assert "error" in types  # each nested event: a typed error, the stream goes on
    # Before: the relay answered nobody for ~33 s and wrote 32.8 MiB to stderr. (A wall
    # time, the relay being another process: the bound leaves a loaded machine room.)
    assert worst < 10.0, worst
    assert len(stderr) < 64 * 1024, len(stderr)
    assert b"NESTEDVALUE" not in stderr
