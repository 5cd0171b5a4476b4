"""The relay's lifecycle: :class:`Relay` wires its parts into one aiohttp application,
starts and shuts them down; :class:`RelayServer` listens on a port.

WebSocket and SSE between browsers and a citation-aware upstream. One *producer* task
per stream (:mod:`~streamcite.relay.producer`) runs the pipeline and appends every event
to the :class:`~streamcite.streamlog.StreamLog`; one *pump* per (client, stream)
(:mod:`~streamcite.relay.delivery`) reads the log after the last ``seq`` it delivered
and writes frames to its client. The module map is in ``docs/relay.md``.

Endpoints: ``GET /ws`` (WebSocket), ``POST /sse`` and ``GET /sse`` (Server-Sent
Events, ``Last-Event-ID`` resume), ``GET /`` and ``/static/*`` (the chat page),
``GET /healthz``, ``GET /metrics`` (Prometheus text), ``POST /api/chat`` (AI SDK).
"""

from __future__ import annotations

import asyncio
import time
from types import TracebackType
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web

from streamcite.logs import get_logger
from streamcite.relay.aisdk import add_aisdk_route
from streamcite.relay.clients import Client, WsClient
from streamcite.relay.config import STATIC_DIR, TOKEN_COOKIE, RelayConfig
from streamcite.relay.control import StreamControl
from streamcite.relay.delivery import Delivery
from streamcite.relay.eventloop import tune_gc
from streamcite.relay.guard import Guard
from streamcite.relay.memlog import MemoryStreamLog
from streamcite.relay.metrics import RelayMetrics
from streamcite.relay.producer import OnEvent, Producer
from streamcite.relay.protocol import CloseCode
from streamcite.relay.quotas import StreamQuotas
from streamcite.relay.readers import ReaderHeartbeat, heartbeat_interval
from streamcite.relay.routes import Access, PlainEndpoints, security_headers
from streamcite.relay.sse import SseEndpoint
from streamcite.relay.websocket import WsEndpoint
from streamcite.streamlog import StreamLog
from streamcite.web.deadlines import ReadDeadlines

if TYPE_CHECKING:
    from streamcite.transports.push import ConnectionPool

__all__ = ["STATIC_DIR", "Relay", "RelayConfig", "RelayMetrics", "RelayServer"]

_logger = get_logger("streamcite.relay")


def upstream_pool(choice: str) -> ConnectionPool | None:
    """The push transport's connections for ``RelayConfig.upstream_transport`` (None:
    aiohttp); ``"auto"`` is push when ``httptools`` is installed."""
    if choice == "aiohttp":
        return None
    try:
        from streamcite.transports.push import ConnectionPool
    except ImportError:
        if choice == "push":
            raise RuntimeError(
                "upstream_transport='push' needs httptools: pip install 'streamcite[fast]'"
            ) from None
        return None
    return ConnectionPool()


class Relay:
    """The relay's state and handlers; :attr:`app` is the aiohttp application.

    ``log`` is the stream log (default: a fresh :class:`MemoryStreamLog`, closed with
    the relay; a log passed in is not closed). ``session`` is an optional
    ``aiohttp.ClientSession`` for upstream requests (default: one of the relay's own,
    sized for ``max_streams_total``).

    To serve :attr:`app` yourself, use an ``AppRunner`` with ``handler_cancellation=True``
    (as :class:`RelayServer` does) so that an SSE client that goes away is noticed at
    once rather than at its next heartbeat.
    """

    def __init__(
        self,
        config: RelayConfig,
        *,
        log: StreamLog | None = None,
        session: aiohttp.ClientSession | None = None,
    ) -> None:
        self.config = config
        self.log: StreamLog = log if log is not None else MemoryStreamLog()
        """The stream log (``logger`` is the relay's structured logging)."""
        self._owns_log = log is None
        self._session = session
        self._owns_session = session is None
        self.metrics = RelayMetrics()
        self.logger = _logger.bind(relay=config.instance_id)
        self._clients: set[Client] = set()
        self._accepting = True
        self._shutdown_started = False
        self._shutdown_done = asyncio.Event()
        self._watchdog: asyncio.TimerHandle | None = None
        self.deadlines = ReadDeadlines(
            header_timeout=config.header_timeout, body_timeout=config.body_timeout
        )
        """Header/body read deadlines: :class:`RelayServer` runs them; serving :attr:`app`
        with your own runner, pass ``deadlines.runner_kwargs()`` and call ``start``."""
        self.guard = Guard(
            tokens=([config.token] if config.token else []) + list(config.tokens),
            allowed_hosts=config.allowed_hosts,
            allowed_origins=config.allowed_origins,
            cookie=TOKEN_COOKIE,
        )
        self.quotas = StreamQuotas(config.max_streams_per_client)
        self.readers = ReaderHeartbeat(
            self.log, heartbeat_interval(config.resume_grace), self.logger
        )
        self.producer = Producer(
            config,
            self.log,
            metrics=self.metrics,
            quotas=self.quotas,
            binder=self.guard.binder,
            session=lambda: self._session,
            logger=self.logger,
            readers=self.readers,
        )
        self.delivery = Delivery(config, self.log, self.metrics, self.producer)
        self.control = StreamControl(
            config,
            self.log,
            metrics=self.metrics,
            quotas=self.quotas,
            binder=self.guard.binder,
            producer=self.producer,
            accepting=self.accepting,
        )
        self.access = Access(self.guard, self.metrics, self.accepting)
        self.app = self._build_app()

    def __repr__(self) -> str:
        return (
            f"<Relay {self.config.instance_id} streams={len(self.producer.streams)} "
            f"clients={len(self._clients)}>"
        )

    # -- introspection and hooks -----------------------------------------------------

    def accepting(self) -> bool:
        """False once shutdown started: new requests and streams are refused."""
        return self._accepting

    @property
    def active_streams(self) -> int:
        """Upstream requests running now."""
        return len(self.producer.streams)

    @property
    def client_count(self) -> int:
        return len(self._clients)

    @property
    def clients(self) -> set[Client]:
        """The open client connections (``/ws``, ``/sse``, ``/api/chat``), live."""
        return self._clients

    @property
    def on_event(self) -> OnEvent | None:
        """Benchmark hook: ``(stream_id, seq, perf_counter())`` for every event the
        pipeline yields, taken before it is logged. ``None`` costs nothing."""
        return self.producer.on_event

    @on_event.setter
    def on_event(self, hook: OnEvent | None) -> None:
        self.producer.on_event = hook

    @property
    def on_sent(self) -> OnEvent | None:
        """Benchmark hook: ``(stream_id, seq, perf_counter())`` once an event's frame
        was handed to the client's socket."""
        return self.delivery.on_sent

    @on_sent.setter
    def on_sent(self, hook: OnEvent | None) -> None:
        self.delivery.on_sent = hook

    def drop_clients(self) -> int:
        """Abort every client connection, as a network cut would; returns how many.

        For tests, demos and operations: clients reconnect and resume, streams go on.
        """
        clients = list(self._clients)
        for client in clients:
            client.abort()
        return len(clients)

    # -- app -----------------------------------------------------------------------

    def _build_app(self) -> web.Application:
        cfg = self.config
        app = web.Application(
            client_max_size=cfg.max_message_bytes,
            middlewares=[security_headers, self.guard.middleware(self.access.reject)],
        )
        ws = WsEndpoint(
            cfg,
            self.access,
            self.metrics,
            control=self.control,
            delivery=self.delivery,
            clients=self._clients,
            features={
                "sources": any(e.kind == "sources" for e in cfg.enrichers),
                "grounding": any(e.kind == "grounding" for e in cfg.enrichers),
            },
        )
        app.router.add_get("/ws", ws.handle)
        SseEndpoint(
            cfg,
            self.access,
            self.metrics,
            control=self.control,
            delivery=self.delivery,
            producer=self.producer,
            clients=self._clients,
        ).add_routes(app)
        PlainEndpoints(
            cfg,
            self.access,
            self.metrics,
            self.log,
            streams=self.producer.streams,
            clients=self._clients,
            deadlines=self.deadlines,
        ).add_routes(app)
        add_aisdk_route(app, self)  # POST /api/chat (AI SDK)
        app.router.add_static("/static/", cfg.static_dir, show_index=False)
        app.on_startup.append(self._on_startup)
        app.on_shutdown.append(self._on_shutdown)
        app.on_cleanup.append(self._on_cleanup)
        return app

    async def _on_startup(self, app: web.Application) -> None:
        if self._session is None:
            connector = aiohttp.TCPConnector(
                limit=self.config.max_streams_total + 16, limit_per_host=0
            )
            self._session = aiohttp.ClientSession(connector=connector)
            self.producer.push_pool = upstream_pool(self.config.upstream_transport)
        self._arm_watchdog()
        self.readers.start()
        self.logger.info("relay.start", upstream=urlsplit(self.config.base_url).netloc)

    def _arm_watchdog(self) -> None:
        period = min(1.0, self.config.send_timeout / 2)
        self._watchdog = asyncio.get_running_loop().call_later(period, self._watch)

    def _watch(self) -> None:
        """Close clients with a write blocked past ``send_timeout`` (any of their writes)."""
        limit = time.monotonic() - self.config.send_timeout
        for client in list(self._clients):
            since = client.gate.oldest()
            if since and since < limit and not client.closing:
                self.metrics.client_closed["too_slow"] += 1
                client.logger.info("client.too_slow", blocked_s=round(time.monotonic() - since, 3))
                client.close_soon(CloseCode.TOO_SLOW, "client too slow; resume")
        self._arm_watchdog()

    async def _on_shutdown(self, app: web.Application) -> None:
        await self.shutdown()

    async def _on_cleanup(self, app: web.Application) -> None:
        await self.shutdown(grace=0.0)
        await self.readers.stop()
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        if self._owns_session and self._session is not None:
            await self._session.close()
            self._session = None
        if self.producer.push_pool is not None:
            self.producer.push_pool.close()
            self.producer.push_pool = None
        if self._owns_log:
            await self.log.aclose()
        self.metrics.close()

    # -- shutdown ----------------------------------------------------------------------

    async def shutdown(self, grace: float | None = None) -> None:
        """Stop accepting; let streams finish for ``grace`` seconds (default from the
        config), then end the rest with ``error`` (code ``shutdown``) and ``done``,
        deliver those, and close every client (WebSocket close 1001). Idempotent."""
        if self._shutdown_started:
            await self._shutdown_done.wait()
            return
        self._shutdown_started = True
        self._accepting = False
        grace = self.config.shutdown_grace if grace is None else grace
        try:
            await self._end_streams(grace)
            await self._close_clients()
            self.logger.info("relay.shutdown.done")
        finally:
            self._shutdown_done.set()

    async def _end_streams(self, grace: float) -> None:
        """Let streams run for ``grace`` seconds, then cancel the rest (``shutdown``)."""
        streams = self.producer.streams
        tasks = [s.task for s in streams.values() if s.task is not None]
        if tasks and grace > 0:
            self.logger.info("relay.shutdown.draining", streams=len(tasks), grace=grace)
            await asyncio.wait(tasks, timeout=grace)
        for stream in list(streams.values()):
            self.producer.cancel(stream, "shutdown")
        tasks = [s.task for s in streams.values() if s.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=5.0)

    async def _close_clients(self) -> None:
        """Let pumps deliver the final error + done, then close every connection."""
        pumps = [t for c in self._clients for t in c.pumps.values()]
        if pumps:
            await asyncio.wait(pumps, timeout=2.0)
        for client in list(self._clients):
            if client.pumps or isinstance(client, WsClient):
                self.metrics.client_closed["shutdown"] += 1
            client.close_soon(CloseCode.GOING_AWAY, "relay shutting down")
        closers = [
            c.closer for c in self._clients if isinstance(c, WsClient) and c.closer is not None
        ]
        if closers:
            await asyncio.wait(closers, timeout=self.config.send_timeout + 1)


# -- running it ------------------------------------------------------------------------


class RelayServer:
    """The relay listening on ``host:port`` (``port=0`` picks a free one).

    ``async with RelayServer(config) as server:`` → ``server.url``, ``server.relay``.
    Leaving the block shuts down gracefully (see :meth:`Relay.shutdown`).
    """

    def __init__(
        self,
        config: RelayConfig,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        log: StreamLog | None = None,
        session: aiohttp.ClientSession | None = None,
        shutdown_timeout: float = 5.0,
    ) -> None:
        self.relay = Relay(config, log=log, session=session)
        self.host = host
        self._requested_port = port
        self._shutdown_timeout = shutdown_timeout
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://", 1) + "/ws"

    async def start(self) -> None:
        if self._runner is not None:
            return
        deadlines = self.relay.deadlines
        runner = web.AppRunner(
            self.relay.app,
            access_log=None,
            handler_cancellation=True,
            shutdown_timeout=self._shutdown_timeout,
            **deadlines.runner_kwargs(),
        )
        await runner.setup()
        deadlines.start(runner)
        try:
            site = web.TCPSite(runner, self.host, self._requested_port)
            await site.start()
        except BaseException:
            deadlines.stop()
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = int(runner.addresses[0][1])
        if self.relay.config.tune_gc:
            tune_gc()

    async def stop(self) -> None:
        """Graceful shutdown, then stop listening and release everything."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        await self.relay.shutdown()
        self.relay.deadlines.stop()
        await runner.cleanup()

    async def __aenter__(self) -> RelayServer:
        await self.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()
