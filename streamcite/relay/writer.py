"""Per-client write bookkeeping that backpressure can rely on.

A client has several concurrent senders (one pump per stream, plus its control
frames). :class:`SendGate` records the start of *each* pending send (not one field
shared by all of them, which a later quick send would reset), so the relay's watchdog
sees the oldest blocked send. It also holds every sender back while the socket's
write buffer is above the cap, re-checking after each wake-up: a frame is only
written when the buffer is at or below the cap, so the buffer never holds more than
the cap plus one frame, however many senders there are.
"""

from __future__ import annotations

import asyncio
import time
from typing import cast

from aiohttp.base_protocol import BaseProtocol

__all__ = ["SendGate", "write_transport"]

_WRITE_METHODS = (
    "write",
    "get_write_buffer_size",
    "set_write_buffer_limits",
    "is_closing",
    "abort",
)


def write_transport(transport: object) -> asyncio.WriteTransport | None:
    """``transport`` as a writable transport, or None when it is not one.

    Duck-typed: uvloop's transports implement asyncio's transport interface without
    subclassing its classes, so ``isinstance(t, asyncio.WriteTransport)`` is False for
    every uvloop connection — and a relay that relied on it wrote nothing on uvloop (each
    write saw "no transport" and ended its pump as if the client had gone)."""
    if isinstance(transport, asyncio.WriteTransport):
        return transport
    if transport is not None and all(
        callable(getattr(transport, name, None)) for name in _WRITE_METHODS
    ):
        return cast(asyncio.WriteTransport, transport)
    return None


_POLL = 0.01
"""Wait step when the transport gives no drain signal (never seen with aiohttp)."""


class SendGate:
    """One client's pending sends and write-buffer cap."""

    __slots__ = ("_n", "_pending", "cap", "protocol", "transport")

    def __init__(self, transport: object, protocol: BaseProtocol | None, cap: int) -> None:
        self.transport = write_transport(transport)
        self.protocol = protocol
        """The connection's aiohttp protocol: its drain waiter wakes us."""
        self.cap = cap
        self._pending: dict[int, float] = {}
        self._n = 0

    def __repr__(self) -> str:
        return f"<SendGate pending={len(self._pending)} buffered={self.buffered()} cap={self.cap}>"

    def begin(self) -> int:
        """Record a send starting now; returns its key for :meth:`end`."""
        self._n = n = self._n + 1
        self._pending[n] = time.monotonic()
        return n

    def end(self, key: int) -> None:
        self._pending.pop(key, None)

    @property
    def busy(self) -> bool:
        """True while any send is pending."""
        return bool(self._pending)

    def oldest(self) -> float:
        """Monotonic start of the oldest pending send (0.0: none). Dicts keep insertion
        order and keys only grow, so the first value is the oldest."""
        for since in self._pending.values():
            return since
        return 0.0

    def buffered(self) -> int:
        t = self.transport
        return t.get_write_buffer_size() if t is not None else 0

    def full(self) -> bool:
        t = self.transport
        return t is not None and t.get_write_buffer_size() > self.cap

    async def wait_for_room(self) -> None:
        """Return once the write buffer is at or below the cap (the caller writes at once,
        without yielding, so the check holds for its frame). Raises ``ConnectionError``
        when the connection goes away; the watchdog bounds how long this may take."""
        t = self.transport
        while t is not None and t.get_write_buffer_size() > self.cap:
            if t.is_closing():
                raise ConnectionResetError("the client connection is closing")
            proto = self.protocol
            if proto is not None and proto.writing_paused:
                await proto._drain_helper()
            else:
                await asyncio.sleep(_POLL)
