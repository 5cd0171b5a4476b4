"""``POST /sse`` and ``GET /sse``: one stream per response, as Server-Sent Events.

Each event is ``id: <seq>`` + ``data: <envelope>``; ``accepted`` and heartbeats are
``data:`` lines without ``id:``, so ``Last-Event-ID`` is always the last ``seq``
received. Everything is validated before the ``200`` event stream starts, so a
refusal is a plain HTTP error with the relay's JSON body.
"""

from __future__ import annotations

import asyncio
import contextlib

from aiohttp import web

from streamcite.core.errors import StreamciteError
from streamcite.relay.clients import Client, ClientGone, SseClient, TooSlow, limit_write_buffer
from streamcite.relay.config import RelayConfig
from streamcite.relay.control import RESUME_ERRORS, StreamControl, log_failed_message
from streamcite.relay.delivery import Delivery, bad_seq
from streamcite.relay.metrics import RelayMetrics
from streamcite.relay.producer import Producer
from streamcite.relay.protocol import (
    AskMessage,
    CancelMessage,
    ProtocolError,
    ResumeMessage,
    accepted_frame,
    parse_client_message,
    relay_error_frame,
    valid_stream_id,
)
from streamcite.relay.routes import SECURITY_HEADERS, Access
from streamcite.web.eventsse import parse_last_event_id

__all__ = ["SseEndpoint"]

_SSE_HEADERS = {
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
    **SECURITY_HEADERS,
}


def _parse_last_event_id(value: str) -> int | None:
    try:
        return parse_last_event_id(value)
    except ValueError:
        return None


def _json_error(status: int, body: bytes) -> web.Response:
    return web.Response(status=status, body=body, content_type="application/json")


class SseEndpoint:
    """Serves ``POST /sse`` (ask, resume, cancel) and ``GET /sse`` (resume)."""

    def __init__(
        self,
        config: RelayConfig,
        access: Access,
        metrics: RelayMetrics,
        *,
        control: StreamControl,
        delivery: Delivery,
        producer: Producer,
        clients: set[Client],
    ) -> None:
        self.config = config
        self.access = access
        self.metrics = metrics
        self.control = control
        self.delivery = delivery
        self.producer = producer
        self.clients = clients

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post("/sse", self.post)
        app.router.add_get("/sse", self.get)

    async def post(self, request: web.Request) -> web.StreamResponse:
        refused = self.access.refusal(request, check_origin=True)
        if refused is not None:
            return refused
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return self.access.reject("message_too_large", 413, "the request body is too large")
        msg: AskMessage | CancelMessage | ResumeMessage
        if body.strip():
            cfg = self.config
            try:
                msg = parse_client_message(
                    body, max_bytes=cfg.max_message_bytes, max_question_chars=cfg.max_question_chars
                )
            except ProtocolError as exc:
                self.metrics.errors[exc.code] += 1
                return _json_error(400, relay_error_frame(exc.code, exc.message))
        else:
            sid = request.query.get("stream_id", "")
            if not valid_stream_id(sid):
                return self._bad_request("bad_message", "send an ask/resume body or ?stream_id=")
            msg = ResumeMessage(stream_id=sid, after_seq=0)
        if isinstance(msg, CancelMessage):
            return await self._cancel(request, msg)
        last_id = request.headers.get("Last-Event-ID")
        if isinstance(msg, ResumeMessage) and last_id is not None:
            after = _parse_last_event_id(last_id)
            if after is None:
                return self._bad_request("bad_message", "Last-Event-ID must be a sequence number")
            msg = ResumeMessage(stream_id=msg.stream_id, after_seq=after)
        return await self._serve(request, msg)

    async def get(self, request: web.Request) -> web.StreamResponse:
        """``GET /sse?stream_id=..&after_seq=..`` — resume for ``EventSource``."""
        refused = self.access.refusal(request, check_origin=True)
        if refused is not None:
            return refused
        sid = request.query.get("stream_id", "")
        if not valid_stream_id(sid):
            return self._bad_request("bad_message", "stream_id is required")
        raw_after = request.headers.get("Last-Event-ID") or request.query.get("after_seq", "0")
        after = _parse_last_event_id(raw_after)
        if after is None:
            return self._bad_request("bad_message", "after_seq / Last-Event-ID must be >= 0")
        return await self._serve(request, ResumeMessage(stream_id=sid, after_seq=after))

    async def _cancel(self, request: web.Request, msg: CancelMessage) -> web.Response:
        try:
            frame = await self.control.cancel(msg.stream_id, self.access.identity(request))
        except StreamciteError as exc:
            return self._log_unavailable(exc, msg.stream_id)
        return web.Response(status=202 if frame is None else 404,
                            body=frame or b'{"type":"cancel_requested"}',
                            content_type="application/json")  # fmt: skip

    def _log_unavailable(self, exc: StreamciteError, sid: str | None) -> web.Response:
        self.metrics.errors[exc.code] += 1
        return _json_error(
            503,
            relay_error_frame(
                exc.code, log_failed_message(exc), stream_id=sid, retryable=exc.retryable
            ),
        )

    def _bad_request(self, code: str, message: str) -> web.Response:
        self.metrics.errors[code] += 1
        return _json_error(400, relay_error_frame(code, message))

    async def _start(
        self, client: SseClient, msg: AskMessage | ResumeMessage
    ) -> tuple[str, int, bytes] | web.Response:
        """Start or check the stream: ``(stream_id, after_seq, first frame)``, or the
        HTTP error refusing it."""
        if isinstance(msg, AskMessage):
            refusal = self.control.ask_refusal(client)
            if refusal is not None:
                code, message, retryable = refusal
                self.metrics.errors[code] += 1
                body = relay_error_frame(code, message, ref=msg.ref, retryable=retryable)
                return _json_error(503 if retryable else 429, body)
            try:
                stream = await self.producer.start(msg, client.who)
            except StreamciteError as exc:
                return self._log_unavailable(exc, None)
            return stream.stream_id, 0, accepted_frame(stream.stream_id, msg.ref)
        try:
            status = await self.control.bound_status(msg.stream_id, client.who)
        except StreamciteError as exc:
            return self._log_unavailable(exc, msg.stream_id)
        if status is None or bad_seq(msg.after_seq, status):
            code = "unknown_stream" if status is None else "bad_seq"
            self.metrics.errors[code] += 1
            body = relay_error_frame(code, RESUME_ERRORS[code], stream_id=msg.stream_id)
            return _json_error(404 if status is None else 400, body)
        self.metrics.resumes += 1
        return msg.stream_id, msg.after_seq, accepted_frame(msg.stream_id, None, resumed=True)

    async def _serve(
        self, request: web.Request, msg: AskMessage | ResumeMessage
    ) -> web.StreamResponse:
        cfg = self.config
        if len(self.clients) >= cfg.max_connections:
            return self.access.reject("too_many_connections", 503, "too many connections")
        resp = web.StreamResponse(headers=_SSE_HEADERS)
        limit_write_buffer(request.transport, cfg.client_buffer_bytes, cfg.client_sndbuf)
        who = self.access.identity(request)
        client = SseClient(request, resp, cfg.heartbeat_interval, cfg.client_buffer_bytes, who)
        started = await self._start(client, msg)
        if isinstance(started, web.Response):
            return started
        sid, after, first = started
        self.clients.add(client)
        self.metrics.connections["sse"] += 1
        task = asyncio.current_task()
        assert task is not None
        client.pumps[sid] = task
        self.producer.attach(sid)
        try:
            with contextlib.suppress(ConnectionError, RuntimeError):
                await resp.prepare(request)
                with contextlib.suppress(ClientGone, TooSlow):
                    await client.send(first)
                    await self.delivery.pump(client, sid, after, attached=False)
        finally:
            self.producer.detach(sid)
            client.pumps.pop(sid, None)
            self.clients.discard(client)
            self.metrics.connections["sse"] -= 1
        with contextlib.suppress(Exception):
            await resp.write_eof()
        return resp
