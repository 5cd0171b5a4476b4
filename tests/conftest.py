"""Shared fixtures: real aiohttp servers on 127.0.0.1 with an ephemeral port."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest
import structlog
import structlog.testing
from aiohttp import web

ServeFn = Callable[[web.Application], Awaitable[str]]


@pytest.fixture(autouse=True)
def _fresh_structlog() -> None:
    """Each test starts from structlog's defaults: a test (or an app it runs) that
    configured logging must not change what another test's capture_logs sees."""
    structlog.reset_defaults()


@pytest.fixture
async def serve() -> AsyncIterator[ServeFn]:
    """``url = await serve(app)`` starts ``app`` on 127.0.0.1:0; stopped after the test."""
    runners: list[web.AppRunner] = []

    async def start(app: web.Application) -> str:
        runner = web.AppRunner(app, shutdown_timeout=0.1)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        port = runner.addresses[0][1]
        return f"http://127.0.0.1:{port}"

    yield start
    for runner in runners:
        await asyncio.wait_for(runner.cleanup(), 5)


@pytest.fixture
def captured_logs() -> Iterator[list[dict[str, Any]]]:
    """Every structlog entry, DEBUG included, whatever another test configured."""
    old = structlog.get_config()
    capture = structlog.testing.LogCapture()
    structlog.configure(
        processors=[capture],
        wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG),
        cache_logger_on_first_use=False,
    )
    try:
        yield capture.entries
    finally:
        structlog.configure(**old)


@pytest.fixture
async def uvicorn_serve() -> AsyncIterator[Callable[[Any], Awaitable[str]]]:
    """Start ASGI apps under uvicorn on 127.0.0.1:0; yields ``start(app) -> root URL``."""
    import socket

    import uvicorn

    servers: list[tuple[uvicorn.Server, asyncio.Task[None]]] = []

    async def start(app: Any) -> str:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)  # connections queue until uvicorn accepts: no startup race
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        servers.append((server, asyncio.create_task(server.serve(sockets=[sock]))))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"

    yield start
    for server, task in servers:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
