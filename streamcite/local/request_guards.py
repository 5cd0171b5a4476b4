"""What a request to the local backend may ask for: injected faults and body size.

Fault injection comes from the server's default spec and, when the server allows it,
the request's ``X-Streamcite-Fault`` header or ``?fault=`` query (see
:mod:`streamcite.local.faults`). Bodies are read against a limit, never held past it.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from streamcite.local.faults import (
    FAULT_HEADER,
    FAULT_QUERY,
    ClientFaultsOff,
    FaultSpec,
    FaultSpecError,
    request_faults,
)
from streamcite.local.state import STATE

__all__ = ["fault_status", "faults_of", "injected_delay", "read_body"]

_READ_SIZE = 64 * 1024


def faults_of(request: web.Request) -> FaultSpec:
    """The faults to inject into the answer to ``request``.

    Raises :class:`ClientFaultsOff` when the request asks for faults the server does
    not take from clients, :class:`FaultSpecError` for a malformed spec.
    """
    state = request.app[STATE]
    if not state.config.allow_client_faults and (
        FAULT_HEADER in request.headers or FAULT_QUERY in request.query
    ):
        raise ClientFaultsOff(
            "this server takes no fault injection from clients "
            "(start it with --allow-client-faults)"
        )
    return request_faults(state.server_faults, request.headers, request.query)


def fault_status(exc: FaultSpecError) -> int:
    """HTTP status of a refused fault spec: 403 when refused, 400 when malformed."""
    return 403 if isinstance(exc, ClientFaultsOff) else 400


async def read_body(request: web.Request, limit: int) -> bytes | None:
    """The request body, or None as soon as it is known to exceed ``limit`` bytes (the
    announced ``Content-Length``, else while reading: never more than ``limit`` held)."""
    length = request.content_length
    if length is not None and length > limit:
        return None
    buf = bytearray()
    async for chunk in request.content.iter_chunked(_READ_SIZE):
        buf += chunk
        if len(buf) > limit:
            return None
    return bytes(buf)


async def injected_delay(seconds: float | None) -> None:
    """Wait an injected delay (none when ``seconds`` is None or 0)."""
    if seconds:
        await asyncio.sleep(seconds)
