"""Client connections: one WebSocket, or one SSE response, and how frames reach it.

A :class:`Client` has several concurrent senders (one pump per stream, plus its control
frames); each write goes through the client's :class:`~streamcite.relay.writer.SendGate`
(write-buffer cap, pending-write times for the relay's watchdog). A client that goes
away raises :class:`ClientGone` in its senders; one that falls behind past its bound
raises :class:`TooSlow` (the relay then closes it with 4008: it can resume).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
import time
from collections.abc import Callable, Sequence

import aiohttp
from aiohttp import WSMsgType, web

from streamcite.logs import get_logger
from streamcite.relay.guard import Identity
from streamcite.relay.live import LiveWriter
from streamcite.relay.protocol import CloseCode, envelope, heartbeat_frame, ws_text_frame
from streamcite.relay.writer import SendGate, write_transport
from streamcite.streamlog import LogEntry

__all__ = [
    "AiSdkClient",
    "Client",
    "ClientGone",
    "LiveFlush",
    "OnSent",
    "SseClient",
    "TooSlow",
    "WsClient",
    "limit_write_buffer",
    "ws_text_frame",
]

OnSent = Callable[[str, int, float], None]
"""``(stream_id, seq, perf_counter())`` once an event's frame was handed to the socket."""

_logger = get_logger("streamcite.relay")


class ClientGone(Exception):
    """The client went away (or is being closed): stop writing to it."""


class TooSlow(Exception):
    """The client fell behind past its bound."""


class Client:
    """One client connection (a WebSocket, or one SSE response)."""

    kind = "?"
    __slots__ = ("closing", "gate", "id", "last_send", "logger", "pumps", "transport", "who")

    def __init__(self, request: web.Request, cap: int, who: Identity) -> None:
        self.id = secrets.token_hex(4)
        self.transport = write_transport(request.transport)
        """The connection's transport (None: not a writable one — a test double)."""
        self.who = who
        self.pumps: dict[str, asyncio.Task[None]] = {}
        """The task delivering each stream this client follows, by stream id."""
        self.last_send = time.monotonic()
        self.gate = SendGate(request.transport, request.protocol, cap)
        """Every pending write's start (the relay's watchdog closes a client whose oldest
        write stays blocked past ``send_timeout`` — cheaper than a timeout around every
        write, which is the hot path) and the write-buffer cap."""
        self.closing = False
        self.logger = _logger.bind(client=self.id, transport=self.kind)

    async def _write(self, frame: bytes, seq: int | None) -> None:
        raise NotImplementedError

    async def send(self, frame: bytes, seq: int | None = None) -> None:
        """Write one frame (waits only while the client's socket buffer is full)."""
        if self.closing:
            raise ClientGone
        gate = self.gate
        key = gate.begin()
        try:
            if gate.full():  # over the cap: wait (only this client) until it drains
                await gate.wait_for_room()
            await self._write(frame, seq)
        except (ConnectionError, RuntimeError, aiohttp.ClientError) as exc:
            raise ClientGone from exc
        finally:
            gate.end(key)
        self.last_send = time.monotonic()

    async def send_events(
        self, sid: str, entries: Sequence[LogEntry], on_sent: OnSent | None = None
    ) -> None:
        """Write the frames of one stream's ``entries`` (in order) in as few socket writes
        as the cap allows: one when the client keeps up.

        Each event stays its own frame (WebSocket message, SSE event with ``id:``); only
        the writes are joined. A chunk is cut where it would take the write buffer past
        the cap (a chunk holds at least one frame), so the buffer never holds more than
        the cap plus one frame, as with one write per frame."""
        if self.closing:
            raise ClientGone
        wire = [self._encode(envelope(sid, e.seq, e.payload), e.seq) for e in entries]
        gate = self.gate
        cap = gate.cap
        key = gate.begin()
        try:
            start, n = 0, len(wire)
            while start < n:
                if gate.full():  # over the cap: wait (only this client) until it drains
                    await gate.wait_for_room()
                room = cap - gate.buffered()
                end, size = start + 1, len(wire[start])
                while end < n and size + len(wire[end]) <= room:
                    size += len(wire[end])
                    end += 1
                await self._write_wire(
                    wire[start] if end == start + 1 else b"".join(wire[start:end])
                )
                if on_sent is not None:
                    t = time.perf_counter()
                    for entry in entries[start:end]:
                        on_sent(sid, entry.seq, t)
                start = end
        except (ConnectionError, RuntimeError, aiohttp.ClientError) as exc:
            raise ClientGone from exc
        finally:
            gate.end(key)
        self.last_send = time.monotonic()

    def _encode(self, frame: bytes, seq: int | None) -> bytes:
        """The bytes one frame takes on this client's connection."""
        raise NotImplementedError

    async def _write_wire(self, data: bytes) -> None:
        """Write already encoded frames (see :meth:`_encode`)."""
        raise NotImplementedError

    def live_writer(self) -> LiveWriter | None:
        """A writer for :mod:`streamcite.relay.live` taps (None: this client has no
        synchronous write path, its pumps always read the log)."""
        return None

    def backlogged(self) -> bool:
        """True when the kernel stopped taking this client's bytes (its buffer holds some)."""
        t = self.transport
        return t is not None and t.get_write_buffer_size() > 0

    async def idle_tick(self) -> None:
        """Called by a pump with nothing to send for a while (SSE sends a heartbeat)."""

    def close_soon(self, code: int, reason: str) -> None:
        raise NotImplementedError

    def abort(self) -> None:
        """Drop the TCP connection at once (a network cut, as far as the client knows)."""
        self.closing = True
        if self.transport is not None:
            self.transport.abort()

    def _stop_pumps(self) -> None:
        current = asyncio.current_task()
        for task in self.pumps.values():
            if task is not current:
                task.cancel()


class WsClient(Client):
    kind = "ws"
    __slots__ = ("closer", "live", "live_flush", "send_timeout", "ws")

    def __init__(
        self,
        ws: web.WebSocketResponse,
        request: web.Request,
        send_timeout: float,
        cap: int,
        who: Identity,
        live_flush: LiveFlush | None = None,
    ):
        super().__init__(request, cap, who)
        self.ws = ws
        self.send_timeout = send_timeout
        self.closer: asyncio.Task[None] | None = None
        self.live: _LiveFrames | None = None
        """Frames the live taps gave this client in this loop turn (one write per turn)."""
        self.live_flush = live_flush
        """Writes the live frames of every client at the end of the turn (the relay's)."""

    async def _write(self, frame: bytes, seq: int | None) -> None:
        if self.live is not None:
            self.live.flush()
        await self.ws.send_frame(frame, WSMsgType.TEXT)

    def _encode(self, frame: bytes, seq: int | None) -> bytes:
        return ws_text_frame(frame)

    async def _write_wire(self, data: bytes) -> None:
        # Frames built here, written straight to the transport: aiohttp writes its own
        # (uncompressed: ``compress=False``) frames synchronously to the same transport, so
        # the order holds. ``ws.closed`` turns true before aiohttp writes its close frame:
        # nothing is written after it.
        if self.live is not None:
            self.live.flush()
        t = self.transport
        if self.ws.closed or t is None or t.is_closing():
            raise ConnectionResetError("the WebSocket is closing")
        t.write(data)

    def live_writer(self) -> LiveWriter | None:
        """Takes event frames for the socket, when its buffer is empty (so the cap holds and
        nothing is queued ahead of them) and the WebSocket is open; the frames taken in one
        loop turn go out in one write at the end of the turn (:class:`LiveFlush`)."""
        if self.transport is None:
            return None
        if self.live is None:
            self.live = _LiveFrames(self, self.transport, self.live_flush)
        return self.live

    def close_soon(self, code: int, reason: str) -> None:
        """Close from any task without waiting: queued frames go out before the close."""
        if self.closing:
            return
        self.closing = True
        self._stop_pumps()
        self.closer = asyncio.create_task(self._close(code, reason), name=f"ws-close:{self.id}")

    async def _close(self, code: int, reason: str) -> None:
        # The close frame queues behind what the client has not read yet: give a slow
        # client a few seconds to reach it (and see the code), then drop the connection.
        if self.live is not None:
            self.live.flush()
        try:
            async with asyncio.timeout(max(5.0, self.send_timeout)):
                await self.ws.close(code=code, message=reason.encode())
        except (TimeoutError, ConnectionError, RuntimeError, aiohttp.ClientError):
            self.abort()


class LiveFlush:
    """Writes the live frames of a relay's WebSocket clients at the end of the loop turn
    that took them: one callback a turn for all the clients (not one per client), and the
    turn's writes together — a client process woken by the first finds the others' bytes
    ready, instead of being woken once per write."""

    __slots__ = ("pending", "turns", "writes")

    def __init__(self) -> None:
        self.pending: list[_LiveFrames] = []
        self.turns = 0
        """Loop turns that flushed live frames (a count for tests and benchmarks)."""
        self.writes = 0
        """Socket writes those turns made (one per client a turn when it works)."""

    def add(self, frames: _LiveFrames) -> None:
        pending = self.pending
        if not pending:
            asyncio.get_running_loop().call_soon(self.run)
        pending.append(frames)

    def run(self) -> None:
        pending, self.pending = self.pending, []
        self.turns += 1
        self.writes += len(pending)
        now = time.monotonic()  # one clock read a turn, not one per client
        for live in pending:
            try:  # (_LiveFrames.flush inlined: once per client a turn)
                frames = live.frames
                if not frames:
                    continue
                data = frames[0] if len(frames) == 1 else b"".join(frames)
                frames.clear()
                live.size = 0
                t = live.transport
                if live.ws.closed or t.is_closing():
                    continue  # the connection is going: the client resumes after its last frame
                t.write(data)
                live.client.last_send = now
            except (ConnectionError, RuntimeError):
                continue
            except Exception:  # a bug: the other clients' frames still go out
                _logger.exception("relay.live_flush_failed", client=live.client.id)


class _LiveFrames:
    """A WebSocket client's frames from live taps, written once per loop turn.

    Every other write to the client flushes them first, so frames keep their order; they
    never hold more than the write-buffer cap (a frame that would pass it is refused: the
    tap lets go and its pump waits for room, as for any write)."""

    __slots__ = ("cap", "client", "frames", "later", "size", "transport", "ws")

    def __init__(
        self, client: WsClient, transport: asyncio.WriteTransport, later: LiveFlush | None = None
    ) -> None:
        self.client = client
        self.ws = client.ws
        self.transport = transport
        self.cap = client.gate.cap
        self.later = later if later is not None else LiveFlush()
        """Flushes these frames at the end of the loop turn (the relay's, shared)."""
        self.frames: list[bytes] = []
        self.size = 0

    def take(self, data: bytes) -> bool:
        frames = self.frames
        if frames:  # taken before in this turn: the socket was ready then, and every
            # other write to it flushes these first (the flush checks it again)
            if self.size + len(data) > self.cap or self.client.closing:
                self.flush()
                return False
            frames.append(data)
            self.size += len(data)
            return True
        t = self.transport
        if self.client.closing or self.ws.closed or t.get_write_buffer_size() or t.is_closing():
            return False
        later = self.later
        if not later.pending:
            asyncio.get_running_loop().call_soon(later.run)
        later.pending.append(self)
        frames.append(data)
        self.size = len(data)
        return True

    def flush(self, now: float | None = None) -> None:
        frames = self.frames
        if not frames:
            return
        data = frames[0] if len(frames) == 1 else b"".join(frames)
        frames.clear()
        self.size = 0
        t = self.transport
        if self.ws.closed or t.is_closing():
            return  # the connection is going: the client resumes after its last frame
        try:
            t.write(data)
        except (ConnectionError, RuntimeError):
            return
        self.client.last_send = time.monotonic() if now is None else now


class SseClient(Client):
    kind = "sse"
    __slots__ = ("heartbeat_interval", "request", "resp")

    def __init__(
        self,
        request: web.Request,
        resp: web.StreamResponse,
        heartbeat_interval: float,
        cap: int,
        who: Identity,
    ) -> None:
        super().__init__(request, cap, who)
        self.request = request
        self.resp = resp
        self.heartbeat_interval = heartbeat_interval

    async def _write(self, frame: bytes, seq: int | None) -> None:
        await self.resp.write(self._encode(frame, seq))

    def _encode(self, frame: bytes, seq: int | None) -> bytes:
        if seq is None:
            return b"data: " + frame + b"\n\n"
        return b"id: %d\ndata: %s\n\n" % (seq, frame)

    async def _write_wire(self, data: bytes) -> None:
        await self.resp.write(data)

    async def idle_tick(self) -> None:
        if time.monotonic() - self.last_send >= self.heartbeat_interval * 0.95:
            await self.send(heartbeat_frame(time.time()))

    def close_soon(self, code: int, reason: str) -> None:
        # One response per stream: ending it is closing. A write stuck on a full
        # socket can only be ended by dropping the connection.
        self.closing = True
        if self.gate.busy:
            self.abort()
        self._stop_pumps()


class AiSdkClient(Client):
    """One ``POST /api/chat`` response (the AI SDK UI message stream): no stream log, no
    resume, the chunks written as the upstream yields them. Under the relay's watchdog
    like the others: a write blocked past ``send_timeout`` drops the connection, which
    ends the handler and so closes the upstream request and frees the quota slot."""

    kind = "aisdk"
    __slots__ = ("resp",)

    def __init__(self, request: web.Request, resp: web.StreamResponse, cap: int, who: Identity):
        super().__init__(request, cap, who)
        self.resp = resp

    async def _write(self, frame: bytes, seq: int | None) -> None:
        await self.resp.write(frame)

    def _encode(self, frame: bytes, seq: int | None) -> bytes:
        return frame

    async def _write_wire(self, data: bytes) -> None:
        await self.resp.write(data)

    def close_soon(self, code: int, reason: str) -> None:
        # No close code to send on a plain HTTP response: a blocked write is ended by
        # dropping the connection, an idle one at its next write (ClientGone). A shutdown
        # lets the answer finish (the server's shutdown timeout bounds it), as before.
        if code != CloseCode.TOO_SLOW:
            return
        self.closing = True
        if self.gate.busy:
            self.abort()


def limit_write_buffer(transport: object, high: int, sndbuf: int | None) -> None:
    """Cap the transport's write buffer at ``high`` bytes (and ``SO_SNDBUF`` if given)."""
    transport = write_transport(transport)
    if transport is None:
        return
    transport.set_write_buffer_limits(high=high)
    if sndbuf is not None:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
