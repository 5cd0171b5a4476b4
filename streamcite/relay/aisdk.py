"""``POST /api/chat`` on the relay: the Vercel AI SDK UI message stream (v1).

The body is what ``DefaultChatTransport`` sends; the question is the text of the last
user message. Same gates as ``/ws``: the relay's token, Origin and Host rules (its
:class:`~streamcite.relay.routes.Access`), message and question size limits, the per-client quota
(``quota_exceeded``, 429) and the relay-wide stream limit (counting these streams
too). Error events get the same bounds and public messages as on ``/ws`` (at most
``max_stream_errors``, no internal addresses). The answer is streamed straight from
the upstream (no stream log: the UI message stream has no resume); a browser that
aborts closes the upstream request at once.

Slow readers get the policy of ``/ws`` and ``/sse``: the socket's write buffer is capped
(``client_buffer_bytes``, ``client_sndbuf``) and a write blocked past ``send_timeout`` drops
the connection (counted as ``client_closed_total{reason="too_slow"}``); the upstream
request is then closed and the quota slot released. These responses count as client
connections (``max_connections``, ``/healthz`` ``clients``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any, Protocol

import orjson
from aiohttp import web

from streamcite.core.events import DoneEvent, ErrorEvent
from streamcite.logs import get_logger
from streamcite.pipeline import stream_chat
from streamcite.relay.bounds import StreamErrors, public_error
from streamcite.relay.clients import AiSdkClient, ClientGone, limit_write_buffer
from streamcite.relay.protocol import AskMessage, relay_error_frame
from streamcite.relay.quotas import QUOTA_CODE
from streamcite.web.stream import question_from_ui_messages, ui_message_stream
from streamcite.web.uimessage import UI_MESSAGE_STREAM_HEADERS

if TYPE_CHECKING:
    from streamcite.relay.clients import Client
    from streamcite.relay.config import RelayConfig
    from streamcite.relay.metrics import RelayMetrics
    from streamcite.relay.producer import Producer
    from streamcite.relay.quotas import StreamQuotas
    from streamcite.relay.routes import Access

__all__ = ["AiSdkHost", "add_aisdk_route"]


class AiSdkHost(Protocol):
    """What the route uses of the relay (:class:`~streamcite.relay.server.Relay`), so
    that this module does not import the server that imports it."""

    config: RelayConfig
    metrics: RelayMetrics
    quotas: StreamQuotas
    producer: Producer
    access: Access

    @property
    def active_streams(self) -> int: ...

    @property
    def clients(self) -> set[Client]: ...


def add_aisdk_route(app: web.Application, relay: AiSdkHost) -> None:
    active = [0]

    async def handle(request: web.Request) -> web.StreamResponse:
        refused = relay.access.refusal(request, check_origin=True)
        if refused is not None:
            return refused
        cfg = relay.config
        raw = await request.content.read(cfg.max_message_bytes + 1)
        if len(raw) > cfg.max_message_bytes:
            return relay.access.reject("message_too_large", 413, "the request body is too large")
        try:
            body = orjson.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
            question = question_from_ui_messages(body, cfg.max_question_chars)
        except ValueError as exc:
            relay.metrics.errors["bad_message"] += 1
            return web.Response(
                status=400,
                body=relay_error_frame("bad_message", str(exc)),
                content_type="application/json",
            )
        if len(relay.clients) >= cfg.max_connections:
            return relay.access.reject("too_many_connections", 503, "too many connections")
        if relay.active_streams + active[0] >= cfg.max_streams_total:
            return relay.access.reject("relay_busy", 503, "the relay is at its stream limit")
        key = relay.access.identity(request).quota_key
        if not relay.quotas.acquire(key):
            relay.metrics.errors[QUOTA_CODE] += 1
            return relay.access.reject(QUOTA_CODE, 429, relay.quotas.message())
        active[0] += 1
        try:
            return await _serve(relay, request, question)
        finally:
            active[0] -= 1
            relay.quotas.release(key)

    app.router.add_post("/api/chat", handle)


async def _serve(relay: AiSdkHost, request: web.Request, question: str) -> web.StreamResponse:
    cfg = relay.config
    events: Any = stream_chat(
        relay.producer.request_body(AskMessage(question=question)),
        base_url=cfg.base_url,
        api=cfg.api,
        api_key=cfg.api_key,
        transport="aiohttp",
        session=relay.producer.session(),
        headers=dict(cfg.upstream_headers),
        timeouts=cfg.timeouts,
        after=list(cfg.enrichers),
        retries=cfg.retries,
    )
    resp = web.StreamResponse(headers=dict(UI_MESSAGE_STREAM_HEADERS))
    stream = ui_message_stream(_bounded(events, cfg.max_stream_errors))
    relay.metrics.streams_started += 1
    limit_write_buffer(request.transport, cfg.client_buffer_bytes, cfg.client_sndbuf)
    client = AiSdkClient(request, resp, cfg.client_buffer_bytes, relay.access.identity(request))
    relay.clients.add(client)
    relay.metrics.connections["aisdk"] += 1
    try:
        await resp.prepare(request)
        send = client.send
        async for chunk in stream:
            await send(chunk)
    except ClientGone:  # the watchdog dropped a reader that stopped reading
        pass
    finally:
        relay.clients.discard(client)
        relay.metrics.connections["aisdk"] -= 1
        await stream.aclose()  # also on abort: the upstream request closes now
    return resp


_log = get_logger("streamcite.relay.aisdk")


async def _bounded(events: Any, max_errors: int) -> AsyncGenerator[Any, None]:
    """``events`` with at most ``max_errors`` error events, all with public messages."""
    errors = StreamErrors(max_errors)
    try:
        async for event in events:
            if type(event) is ErrorEvent:
                admitted = errors.admit(event)
                if admitted is None:
                    continue
                detail = public_error(admitted)
                if detail is not None:
                    _log.warning("relay.aisdk.error_detail", code=admitted.code, detail=detail)
                event = admitted
            elif type(event) is DoneEvent:
                for err in event.answer.errors:
                    if isinstance(err, ErrorEvent):
                        public_error(err)
            yield event
    finally:
        await events.aclose()
