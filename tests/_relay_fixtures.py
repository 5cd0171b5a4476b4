"""Shared pieces of the relay tests: a scriptable upstream, relay/backend starters, clients.

Everything runs over real loopback sockets: the fake upstream and the relay are aiohttp
servers on 127.0.0.1 port 0; clients are aiohttp WebSocket/HTTP clients (and, for the
slow-client test, a raw socket that speaks just enough WebSocket).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import secrets
import socket
import struct
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web

from streamcite.core.sse import SSEDecoder
from streamcite.relay.server import RelayConfig, RelayServer
from tests._wait import wait_until

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]

# -- a scriptable upstream -------------------------------------------------------------

HOSTILE_CITATIONS: list[dict[str, Any]] = [
    {
        "cited_text": '<img src=x onerror="window.__pwned=1"> and <script>window.__pwned=2</script>',
        "cited_text_heading": "<b onmouseover=alert(1)>Heading</b>",
        "document_title": '<a href="javascript:alert(1)">Evil title</a>',
        "document_index": 0,
        "document_author": "<svg onload=alert(1)>",
        "document_year": "2024",
        "document_reference": "§1",
        "source_url": "javascript:window.__pwned=3",
    },
    {
        "cited_text": "A plain, safe citation.",
        "document_title": "Safe document",
        "document_index": 1,
        "source_url": "https://example.org/doc",
    },
]

DEFAULT_TOKENS = ["The", " answer", " is", " cited", " [", "1", "].", " More", " text", " [2]."]


def chunk_frame(content: str | None = None, finish: str | None = None, **extra: Any) -> bytes:
    delta: dict[str, Any] = {} if content is None else {"content": content}
    body = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "fake",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }
    return b"data: " + orjson.dumps(body) + b"\n\n"


@dataclass
class FakeUpstream:
    """An OpenAI-style streaming endpoint with counters (what the relay did to it)."""

    tokens: Sequence[str] = field(default_factory=lambda: list(DEFAULT_TOKENS))
    citations: list[dict[str, Any]] = field(
        default_factory=lambda: [
            {"cited_text": "First source.", "document_title": "Doc A", "document_index": 0},
            {"cited_text": "Second source.", "document_title": "Doc B", "document_index": 1},
        ]
    )
    delay: float = 0.0
    status: int = 200
    error_body: bytes = b'{"error": {"message": "nope"}}'
    requests: int = 0
    open_streams: int = 0
    completed: int = 0
    closed_by_client: int = 0
    seen_headers: list[dict[str, str]] = field(default_factory=list)
    url: str = ""

    @property
    def answer(self) -> str:
        return "".join(self.tokens)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        return app

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests += 1
        self.seen_headers.append(dict(request.headers))
        await request.read()
        if self.status != 200:
            return web.Response(
                status=self.status, body=self.error_body, content_type="application/json"
            )
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        self.open_streams += 1
        try:
            await resp.write(chunk_frame(""))
            for tok in self.tokens:
                if self.delay:
                    await asyncio.sleep(self.delay)
                await resp.write(chunk_frame(tok))
            await resp.write(chunk_frame(None, "stop", citations=self.citations))
            await resp.write(b"data: [DONE]\n\n")
            self.completed += 1
        except (ConnectionResetError, asyncio.CancelledError):
            self.closed_by_client += 1
            raise
        finally:
            self.open_streams -= 1
        return resp


@contextlib.asynccontextmanager
async def running(app: web.Application) -> AsyncIterator[str]:
    """Serve ``app`` on 127.0.0.1:0; yield its root URL; stop it after."""
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await asyncio.wait_for(runner.cleanup(), 10)


@contextlib.asynccontextmanager
async def fake_upstream(**kw: Any) -> AsyncIterator[FakeUpstream]:
    up = FakeUpstream(**kw)
    async with running(up.app()) as url:
        up.url = url
        yield up


@contextlib.asynccontextmanager
async def relay(base_url: str, **config: Any) -> AsyncIterator[RelayServer]:
    """A relay on 127.0.0.1:0 in front of ``base_url`` (``.../v1``)."""
    config.setdefault("retries", 0)
    config.setdefault("shutdown_grace", 0.5)
    server = RelayServer(RelayConfig(base_url=base_url, **config), shutdown_timeout=2.0)
    await server.start()
    try:
        yield server
    finally:
        await asyncio.wait_for(server.stop(), 30)


# -- clients -------------------------------------------------------------------------------


class RelayClient:
    """A WebSocket client that sorts frames per stream and keeps everything it saw."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.frames: list[dict[str, Any]] = []
        self.raw: list[str] = []
        self.hello: dict[str, Any] | None = None

    async def recv(self, limit: float = 10.0) -> dict[str, Any]:
        msg = await self.ws.receive(timeout=limit)
        if msg.type is not aiohttp.WSMsgType.TEXT:
            raise ConnectionError(f"{msg.type.name}: {msg.data!r} {msg.extra!r}")
        self.raw.append(msg.data)
        obj: dict[str, Any] = orjson.loads(msg.data)
        self.frames.append(obj)
        if obj.get("type") == "hello":
            self.hello = obj
        return obj

    async def send(self, obj: dict[str, Any]) -> None:
        await self.ws.send_str(orjson.dumps(obj).decode())

    async def ask(self, question: str, ref: str | None = None, **options: Any) -> str:
        """Send ``ask``; return the stream id from ``accepted`` (frames before it are kept)."""
        ref = ref or secrets.token_hex(4)
        msg: dict[str, Any] = {"type": "ask", "question": question, "ref": ref}
        if options:
            msg["options"] = options
        await self.send(msg)
        while True:
            obj = await self.recv()
            if obj.get("type") == "accepted" and obj.get("ref") == ref:
                return str(obj["stream_id"])
            if obj.get("type") == "error" and obj.get("seq") is None and obj.get("ref") == ref:
                raise RelayRefused(obj)

    async def until(self, predicate: Any, limit: float = 20.0) -> dict[str, Any]:
        async with asyncio.timeout(limit):
            while True:
                obj = await self.recv(limit)
                if predicate(obj):
                    return obj

    async def until_done(self, stream_id: str, limit: float = 20.0) -> dict[str, Any]:
        return await self.until(
            lambda o: o.get("stream_id") == stream_id and o.get("type") == "done", limit
        )

    def events(self, stream_id: str) -> list[dict[str, Any]]:
        return [f for f in self.frames if f.get("stream_id") == stream_id and f.get("seq")]


class RelayRefused(Exception):
    def __init__(self, frame: dict[str, Any]) -> None:
        super().__init__(f"{frame.get('code')}: {frame.get('message')}")
        self.frame = frame


@contextlib.asynccontextmanager
async def ws_client(
    server: RelayServer, session: aiohttp.ClientSession | None = None, **kw: Any
) -> AsyncIterator[RelayClient]:
    own = session is None
    session = session or aiohttp.ClientSession()
    try:
        async with session.ws_connect(server.ws_url, **kw) as ws:
            client = RelayClient(ws)
            await client.recv()  # hello
            yield client
    finally:
        if own:
            await session.close()


async def eventually(predicate: Any, limit: float = 10.0, step: float = 0.02) -> None:
    """Wait until ``predicate()`` is true; fail after ``limit`` seconds (``_wait.wait_until``)."""
    await wait_until(predicate, timeout=limit, interval=step)


def text_of(events: Sequence[dict[str, Any]]) -> str:
    return "".join(e["text"] for e in events if e["type"] == "token" and e["index"] == 0)


def seqs_of(events: Sequence[dict[str, Any]]) -> list[int]:
    return [int(e["seq"]) for e in events]


async def read_sse(resp: aiohttp.ClientResponse, *, stop_after: int | None = None) -> list[Any]:
    """Decoded SSE events of a response (until its end, or ``stop_after`` events)."""
    dec = SSEDecoder()
    out: list[Any] = []
    async for data in resp.content.iter_any():
        for ev in dec.feed(data):
            out.append(ev)
            if stop_after is not None and len(out) >= stop_after:
                return out
    out.extend(dec.close())
    return out


# -- a raw WebSocket client that can refuse to read ----------------------------------


class RawWs:
    """Just enough RFC 6455 to connect, send a masked text frame and parse server frames.

    It reads its socket only when asked (no background reader), with a tiny receive
    buffer, so the relay's writes back up — the slow client of the backpressure tests.
    """

    def __init__(self, host: str, port: int, rcvbuf: int = 4096) -> None:
        self.host, self.port, self.rcvbuf = host, port, rcvbuf
        self.sock: socket.socket | None = None
        self._buf = bytearray()

    async def connect(self, path: str = "/ws") -> None:
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.rcvbuf)
        sock.setblocking(False)
        await loop.sock_connect(sock, (self.host, self.port))
        self.sock = sock
        key = base64.b64encode(os.urandom(16)).decode()
        await loop.sock_sendall(
            sock,
            (
                f"GET {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n"
            ).encode(),
        )
        while b"\r\n\r\n" not in self._buf:
            await self._fill()
        head, _, rest = bytes(self._buf).partition(b"\r\n\r\n")
        self._buf = bytearray(rest)
        assert head.startswith(b"HTTP/1.1 101"), head

    async def _fill(self) -> None:
        assert self.sock is not None
        data = await asyncio.get_running_loop().sock_recv(self.sock, 65536)
        if not data:
            raise ConnectionError("closed by the relay")
        self._buf += data

    async def _exactly(self, n: int) -> bytes:
        while len(self._buf) < n:
            await self._fill()
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    async def send_text(self, text: str) -> None:
        assert self.sock is not None
        payload = text.encode()
        mask = os.urandom(4)
        n = len(payload)
        if n < 126:
            head = struct.pack("!BB", 0x81, 0x80 | n)
        elif n < 65536:
            head = struct.pack("!BBH", 0x81, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        await asyncio.get_running_loop().sock_sendall(self.sock, head + mask + masked)

    async def send_close(self, code: int = 1000) -> None:
        """Answer the relay's close frame (completes the closing handshake)."""
        assert self.sock is not None
        mask = os.urandom(4)
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(code.to_bytes(2, "big")))
        await asyncio.get_running_loop().sock_sendall(self.sock, b"\x88\x82" + mask + payload)

    async def read_frame(self, limit: float = 10.0) -> tuple[int, bytes]:
        """(opcode, payload) of the next server frame (servers do not mask)."""
        async with asyncio.timeout(limit):
            b0, b1 = await self._exactly(2)
            n = b1 & 0x7F
            if n == 126:
                (n,) = struct.unpack("!H", await self._exactly(2))
            elif n == 127:
                (n,) = struct.unpack("!Q", await self._exactly(8))
            return b0 & 0x0F, await self._exactly(n)

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


# -- the browser -------------------------------------------------------------------------


def require_chromium() -> str:
    """The system Chromium for Playwright; skip (or fail when CI=true) when it is missing."""
    in_ci = os.environ.get("CI", "").lower() == "true"
    problem: str | None = None
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        problem = f"{CHROMIUM} is missing (install it with scripts/install-chromium.sh, as root)"
    else:
        try:
            import playwright.async_api  # noqa: F401
        except ImportError:
            problem = "playwright for Python is not installed (pip install playwright)"
    if problem is not None:
        if in_ci:
            pytest.fail(f"{problem}; CI=true: browser tests must run, not skip", pytrace=False)
        pytest.skip(problem)
    return CHROMIUM


def ws_client_over(transport: Any, cap: int) -> Any:
    """A real :class:`~streamcite.relay.clients.WsClient` whose request and WebSocket are
    stand-ins (``transport`` takes the writes): for tests of its live frames without a
    connection. A real one, not a namespace: the compiled build checks the type."""
    from types import SimpleNamespace

    from streamcite.relay.clients import WsClient
    from streamcite.relay.guard import Identity

    request = SimpleNamespace(transport=transport, protocol=None)
    who = Identity(principal=None, remote="127.0.0.1")
    return WsClient(SimpleNamespace(closed=False), request, 5.0, cap, who)  # type: ignore[arg-type]
