"""``GET /ws``: one WebSocket connection, any number of streams on it (up to the cap).

The connection's task reads client messages (``ask``, ``cancel``, ``resume``) and sends
heartbeats; each stream it follows is delivered by a pump of its own
(:mod:`streamcite.relay.delivery`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from aiohttp import WSMsgType, web

from streamcite.core.errors import StreamciteError
from streamcite.relay.clients import (
    Client,
    ClientGone,
    LiveFlush,
    TooSlow,
    WsClient,
    limit_write_buffer,
)
from streamcite.relay.config import RelayConfig
from streamcite.relay.control import StreamControl, log_failed_message
from streamcite.relay.delivery import Delivery
from streamcite.relay.metrics import RelayMetrics
from streamcite.relay.protocol import (
    AskMessage,
    CancelMessage,
    ProtocolError,
    heartbeat_frame,
    hello_frame,
    parse_client_message,
    relay_error_frame,
)
from streamcite.relay.routes import Access

__all__ = ["WsEndpoint"]


class WsEndpoint:
    """Serves ``GET /ws``."""

    def __init__(
        self,
        config: RelayConfig,
        access: Access,
        metrics: RelayMetrics,
        *,
        control: StreamControl,
        delivery: Delivery,
        clients: set[Client],
        features: dict[str, bool],
    ) -> None:
        self.config = config
        self.access = access
        self.metrics = metrics
        self.control = control
        self.delivery = delivery
        self.clients = clients
        self.features = features
        self.live_flush = LiveFlush()
        """The live frames of every WebSocket client, written at the end of each turn."""
        """What the ``hello`` frame announces (sources, grounding)."""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        refused = self.access.refusal(request, check_origin=True)
        if refused is not None:
            return refused
        if len(self.clients) >= self.config.max_connections:
            return self.access.reject("too_many_connections", 503, "too many connections")
        cfg = self.config
        ws = web.WebSocketResponse(
            max_msg_size=cfg.max_message_bytes, compress=False, autoping=True, heartbeat=None
        )
        who = self.access.identity(request)
        await ws.prepare(request)
        limit_write_buffer(request.transport, cfg.client_buffer_bytes, cfg.client_sndbuf)
        client = WsClient(
            ws, request, cfg.send_timeout, cfg.client_buffer_bytes, who, self.live_flush
        )
        self.clients.add(client)
        self.metrics.connections["ws"] += 1
        client.logger.debug("client.open", peer=request.remote)
        try:
            await client.send(
                hello_frame(
                    heartbeat_interval=cfg.heartbeat_interval,
                    max_message_bytes=cfg.max_message_bytes,
                    max_question_chars=cfg.max_question_chars,
                    max_streams=cfg.max_streams_per_connection,
                    features=self.features,
                    max_streams_per_client=cfg.max_streams_per_client,
                )
            )
            await self._loop(client)
        except (ClientGone, TooSlow):
            pass
        finally:
            await self._closed(client)
        return ws

    async def _closed(self, client: WsClient) -> None:
        """The connection ended (either side): stop its pumps, finish its close."""
        ws = client.ws
        self.clients.discard(client)
        self.metrics.connections["ws"] -= 1
        await self.delivery.drop_pumps(client)
        if client.closer is not None:
            with contextlib.suppress(Exception):
                await client.closer
        if not ws.closed:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(1.0):
                    await ws.close()
        client.logger.debug("client.close", code=ws.close_code)

    async def _loop(self, client: WsClient) -> None:
        ws = client.ws
        interval = self.config.heartbeat_interval
        while not ws.closed:
            wait = max(0.01, interval - (time.monotonic() - client.last_send))
            try:
                msg = await ws.receive(timeout=wait)
            except TimeoutError:
                if time.monotonic() - client.last_send >= interval * 0.95:
                    await client.send(heartbeat_frame(time.time()))
                continue
            if msg.type is WSMsgType.TEXT:
                await self._on_message(client, msg.data)
            elif msg.type is WSMsgType.BINARY:
                await client.send(
                    relay_error_frame("bad_message", "send JSON text messages, not binary")
                )
            else:  # CLOSE, CLOSING, CLOSED, ERROR (1009 for oversize is sent by aiohttp)
                if msg.type is WSMsgType.ERROR:
                    self.metrics.errors["ws_error"] += 1
                break

    async def _on_message(self, client: WsClient, data: str | bytes) -> None:
        cfg = self.config
        control = self.control
        try:
            msg = parse_client_message(
                data, max_bytes=cfg.max_message_bytes, max_question_chars=cfg.max_question_chars
            )
        except ProtocolError as exc:
            self.metrics.errors[exc.code] += 1
            await client.send(relay_error_frame(exc.code, exc.message))
            return
        try:
            if isinstance(msg, AskMessage):
                sid = await control.ask(client, msg)
                if sid is not None:
                    self.delivery.start_pump(client, sid, 0)
            elif isinstance(msg, CancelMessage):
                frame = await control.cancel(msg.stream_id, client.who)
                if frame is not None:
                    await client.send(frame)
            elif await control.resume(client, msg):
                self.delivery.start_pump(client, msg.stream_id, msg.after_seq)
        except StreamciteError as exc:  # the log failed (Redis unreachable, say)
            self.metrics.errors[exc.code] += 1
            ref = msg.ref if isinstance(msg, AskMessage) else None
            sid_or_none = None if isinstance(msg, AskMessage) else msg.stream_id
            await client.send(
                relay_error_frame(
                    exc.code,
                    log_failed_message(exc),
                    stream_id=sid_or_none,
                    ref=ref,
                    retryable=exc.retryable,
                )
            )
