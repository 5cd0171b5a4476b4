"""One way for a test to serve an aiohttp app: ``async with served(app) as url``.

The app listens on 127.0.0.1 at an ephemeral port; ``url`` is ``http://127.0.0.1:PORT``
(no trailing slash). On exit the runner is cleaned up, its pending handlers given
``shutdown_timeout`` seconds, the whole cleanup bounded (a hung handler fails the test,
it does not hang it). The ``serve`` fixture of conftest.py is the same, as a fixture.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web

__all__ = ["served"]

CLEANUP_TIMEOUT = 10.0
"""Seconds the runner's cleanup may take (a safety net)."""


@asynccontextmanager
async def served(app: web.Application, *, shutdown_timeout: float = 0.1) -> AsyncIterator[str]:
    """``app`` served on 127.0.0.1:0 for the block; its base URL."""
    runner = web.AppRunner(app, shutdown_timeout=shutdown_timeout)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await asyncio.wait_for(runner.cleanup(), CLEANUP_TIMEOUT)
