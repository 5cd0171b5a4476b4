"""A raw HTTP/1.1 upstream on 127.0.0.1 for the push transport's tests: the shapes a
well-behaved server (aiohttp's) does not send, written byte by byte."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

__all__ = ["Handler", "chunk_of", "raw_upstream", "read_request"]

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def raw_upstream(handle: Handler) -> AsyncIterator[str]:
    async def guarded(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            await handle(r, w)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            w.close()

    server = await asyncio.start_server(guarded, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(server.wait_closed(), 5)


async def read_request(r: asyncio.StreamReader) -> bytes:
    head = await r.readuntil(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    await r.readexactly(length)
    return head


def chunk_of(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)
