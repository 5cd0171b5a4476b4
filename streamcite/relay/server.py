"""The relay: WebSocket and SSE between browsers and a citation-aware upstream.

One *producer* task per stream runs the pipeline (:func:`streamcite.stream_chat`) and
appends every event to the :class:`~streamcite.relay.log.StreamLog`; it never waits for
a client, so a slow client cannot slow the upstream read or another stream. One
*pump* per (client, stream) reads the log after the last ``seq`` it delivered and
writes frames to its client — the same code path serves a fresh ask, a resume after a
reconnect and a client on another relay instance (with a shared log), which is what
makes delivery exactly-once.

Endpoints: ``GET /ws`` (WebSocket), ``POST /sse`` and ``GET /sse`` (Server-Sent
Events, ``Last-Event-ID`` resume), ``GET /`` and ``/static/*`` (the chat page),
``GET /healthz``, ``GET /metrics`` (Prometheus text).

The upstream URL, key and model come only from :class:`RelayConfig`: a client can
ask a question and pick a few options, never where the question goes.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
import time
from bisect import bisect_left
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import aiohttp
import orjson
from aiohttp import WSMsgType, web

from streamcite.core.answer import AnswerBuilder
from streamcite.core.errors import StreamciteError
from streamcite.core.events import (
    DoneEvent,
    ErrorEvent,
    Event,
    TokenEvent,
    event_from_json,
)
from streamcite.core.models import CitedAnswer
from streamcite.enrich.base import Enricher
from streamcite.logs import get_logger
from streamcite.pipeline import Timeouts, stream_chat
from streamcite.relay.bounds import StreamErrors, bounded_done, public_error
from streamcite.relay.guard import Guard, Identity, norm_origin, parse_host_pattern
from streamcite.relay.memlog import MemoryStreamLog
from streamcite.relay.protocol import (
    AskMessage,
    CancelMessage,
    CloseCode,
    ProtocolError,
    ResumeMessage,
    accepted_frame,
    envelope,
    heartbeat_frame,
    hello_frame,
    is_done_payload,
    parse_client_message,
    relay_error_frame,
    valid_stream_id,
)
from streamcite.relay.quotas import QUOTA_CODE, StreamQuotas
from streamcite.relay.streamlog import LogEntry, StreamLog, StreamStatus
from streamcite.relay.writer import SendGate
from streamcite.web.eventsse import parse_last_event_id

__all__ = ["Relay", "RelayConfig", "RelayMetrics", "RelayServer"]

_log = get_logger("streamcite.relay")

STATIC_DIR = Path(__file__).with_name("static")
TOKEN_COOKIE = "streamcite_token"
_FAULT_HEADER = "X-Streamcite-Fault"
_SECURITY_HEADERS = {
    # The page renders everything from the network as text; the CSP is a second
    # wall should that ever slip: no inline script, no foreign origin, no framing.
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
        "form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


def _default_timeouts() -> Timeouts:
    return Timeouts(connect=10.0, first_token=60.0, idle=60.0, total=600.0)


@dataclass(slots=True)
class RelayConfig:
    """Everything the relay needs. Secrets (``api_key``, ``token``) never appear in reprs."""

    base_url: str
    """Upstream API root (``/chat/completions`` is appended)."""
    api_key: str | None = field(default=None, repr=False)
    model: str = "streamcite-local"
    system_prompt: str | None = None
    upstream_headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    timeouts: Timeouts = field(default_factory=_default_timeouts)
    retries: int = 1
    """Retries of the upstream request before any token (429/5xx/connect errors)."""
    enrichers: Sequence[Enricher] = ()
    """Shared by all streams (sources, grounding); a client may switch them off per ask."""
    token: str | None = field(default=None, repr=False)
    """When set, every client must present it (Bearer header, ``token`` query or cookie)."""
    tokens: tuple[str, ...] = field(default=(), repr=False)
    """More accepted tokens. Each token (``token`` first) is its own principal: a stream
    can be resumed and cancelled only with the token that started it."""
    allowed_hosts: tuple[str, ...] = ()
    """``Host`` values served (``name[:port]``, ``[v6]:port``, ``.domain``, ``*``); a name
    without a port allows any port. Empty: the address a connection arrived on and
    ``localhost``/``127.0.0.1``/``[::1]``, with the relay's port (DNS rebinding guard)."""
    allowed_origins: tuple[str, ...] = ()
    """Origins allowed on ``/ws``, ``/sse`` and ``/api/chat``; empty: the ``http(s)``
    origins of the allowed hosts; ``"*"``: any."""
    max_message_bytes: int = 16 * 1024
    max_question_chars: int = 4000
    max_streams_per_connection: int = 8
    max_streams_per_client: int = 16
    """Upstream streams one client (principal at one address) may run at once, over all
    its connections and transports; past it: ``quota_exceeded`` (HTTP 429)."""
    max_streams_total: int = 2000
    """Upstream requests running at once on this relay."""
    max_connections: int = 10_000
    client_buffer_bytes: int = 256 * 1024
    """Bytes a client's socket write buffer may hold; past it the relay waits for the
    client (only that client: events stay in the log)."""
    client_sndbuf: int | None = None
    """``SO_SNDBUF`` of client sockets; None keeps the OS default (autotuned, up to
    megabytes). Lower it to bound the kernel memory each client may hold."""
    client_buffer_events: int = 4096
    """How many events a client whose buffer is full may fall behind the live stream
    before it is closed with 4008 (it can reconnect and resume)."""
    send_timeout: float = 10.0
    """Longest any write to a client may wait for its socket to drain."""
    max_stream_errors: int = 100
    """Error events one stream sends at most (then one ``errors_truncated`` notice);
    also the most errors a ``done`` answer lists."""
    max_done_bytes: int = 1024 * 1024
    """Largest ``done`` frame; a larger answer is trimmed (``truncated: true``)."""
    heartbeat_interval: float = 15.0
    resume_grace: float = 30.0
    """A stream nobody listens to is cancelled after this many seconds."""
    shutdown_grace: float = 10.0
    """On shutdown, running streams get this long to finish before ``shutdown`` errors."""
    allow_client_faults: bool = False
    """Forward the ``faults`` ask option to the upstream (embedded backend; tests, demos)."""
    static_dir: Path = STATIC_DIR
    instance_id: str = field(default_factory=lambda: f"relay-{secrets.token_hex(4)}")

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError("base_url must be an http:// or https:// URL")
        for name in (
            "max_message_bytes",
            "max_question_chars",
            "max_streams_per_connection",
            "max_streams_total",
            "max_connections",
            "client_buffer_events",
            "client_buffer_bytes",
            "max_streams_per_client",
            "max_stream_errors",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if self.max_done_bytes < 4096:
            raise ValueError("max_done_bytes must be >= 4096")
        if any(not t for t in self.tokens):
            raise ValueError("tokens must not be empty")
        for host in self.allowed_hosts:
            parse_host_pattern(host)  # ValueError when malformed
        for name in ("send_timeout", "heartbeat_interval"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0")
        for name in ("resume_grace", "shutdown_grace"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        self.allowed_origins = tuple(_norm_origin(o) for o in self.allowed_origins)


_norm_origin = norm_origin


# -- metrics -----------------------------------------------------------------------

_LATENCY_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)  # fmt: skip


class _Histogram:
    __slots__ = ("buckets", "count", "counts", "sum")

    def __init__(self, buckets: Sequence[float] = _LATENCY_BUCKETS) -> None:
        self.buckets = tuple(buckets)
        self.counts = [0] * (len(self.buckets) + 1)
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.buckets, value)] += 1
        self.sum += value
        self.count += 1

    def lines(self, name: str, labels: str = "") -> list[str]:
        sep = "," if labels else ""
        out: list[str] = []
        cumulative = 0
        for bound, n in zip(self.buckets, self.counts, strict=False):
            cumulative += n
            out.append(f'{name}_bucket{{{labels}{sep}le="{bound:g}"}} {cumulative}')
        out.append(f'{name}_bucket{{{labels}{sep}le="+Inf"}} {self.count}')
        braces = f"{{{labels}}}" if labels else ""
        out.append(f"{name}_sum{braces} {self.sum:.6f}")
        out.append(f"{name}_count{braces} {self.count}")
        return out


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class RelayMetrics:
    """Counters, gauges and histograms of one relay, rendered as Prometheus text."""

    STAGES = ("ttft", "stream", "sources", "grounding", "total")

    def __init__(self) -> None:
        self.connections: Counter[str] = Counter()
        """Open client connections by transport (gauge)."""
        self.streams_started = 0
        self.streams_finished: Counter[str] = Counter()
        """By outcome: ``ok``, ``error``, ``cancelled``, ``abandoned``, ``shutdown``."""
        self.errors: Counter[str] = Counter()
        """Error events and relay errors by code."""
        self.rejected: Counter[str] = Counter()
        """Refused requests by reason (auth, origin, busy, ...)."""
        self.client_closed: Counter[str] = Counter()
        """Connections the relay closed, by reason (``too_slow``, ``shutdown``)."""
        self.resumes = 0
        self.events_sent = 0
        self.ttft = _Histogram()
        """Ask received → first token appended (seconds), measured by the relay."""
        self.stages = {stage: _Histogram() for stage in self.STAGES}
        """The pipeline's own stage timings (``answer.timings``), in seconds."""

    def render(self, *, active_streams: int, log_stats: Mapping[str, int] | None) -> str:
        p = "streamcite_relay_"
        lines = [
            f"# HELP {p}active_streams Upstream requests running now.",
            f"# TYPE {p}active_streams gauge",
            f"{p}active_streams {active_streams}",
            f"# HELP {p}connections Open client connections.",
            f"# TYPE {p}connections gauge",
        ]
        for transport in ("ws", "sse"):
            lines.append(f'{p}connections{{transport="{transport}"}} {self.connections[transport]}')
        lines += [
            f"# HELP {p}streams_started_total Streams started.",
            f"# TYPE {p}streams_started_total counter",
            f"{p}streams_started_total {self.streams_started}",
            f"# HELP {p}streams_finished_total Streams finished, by outcome.",
            f"# TYPE {p}streams_finished_total counter",
        ]
        lines += [
            f'{p}streams_finished_total{{outcome="{_label(k)}"}} {v}'
            for k, v in sorted(self.streams_finished.items())
        ]
        for name, counter, label, help_ in (
            ("errors_total", self.errors, "code", "Errors (stream error events and relay errors)."),
            ("rejected_total", self.rejected, "reason", "Requests refused."),
            (
                "client_closed_total",
                self.client_closed,
                "reason",
                "Client connections closed by the relay.",
            ),
        ):
            lines += [f"# HELP {p}{name} {help_}", f"# TYPE {p}{name} counter"]
            lines += [f'{p}{name}{{{label}="{_label(k)}"}} {v}' for k, v in sorted(counter.items())]
        lines += [
            f"# HELP {p}resumes_total Resumes served.",
            f"# TYPE {p}resumes_total counter",
            f"{p}resumes_total {self.resumes}",
            f"# HELP {p}events_sent_total Event frames written to clients.",
            f"# TYPE {p}events_sent_total counter",
            f"{p}events_sent_total {self.events_sent}",
            f"# HELP {p}time_to_first_token_seconds Ask received to first token.",
            f"# TYPE {p}time_to_first_token_seconds histogram",
            *self.ttft.lines(f"{p}time_to_first_token_seconds"),
            f"# HELP {p}stage_seconds Pipeline stage durations (answer.timings).",
            f"# TYPE {p}stage_seconds histogram",
        ]
        for stage, hist in self.stages.items():
            lines += hist.lines(f"{p}stage_seconds", f'stage="{stage}"')
        if log_stats:
            lines += [
                f"# HELP {p}log_streams Streams kept in the event log (live and retained).",
                f"# TYPE {p}log_streams gauge",
                f"{p}log_streams {log_stats.get('streams', 0)}",
                f"# HELP {p}log_bytes Event payload bytes kept in the log.",
                f"# TYPE {p}log_bytes gauge",
                f"{p}log_bytes {log_stats.get('bytes', 0)}",
            ]
        return "\n".join(lines) + "\n"


# -- streams and clients -------------------------------------------------------------


class _ClientGone(Exception):
    """The client went away (or is being closed): stop writing to it."""


class _TooSlow(Exception):
    """The client fell behind past its bound."""


@dataclass(slots=True, eq=False)
class _Owned:
    """A stream whose upstream request runs in this relay process."""

    stream_id: str
    task: asyncio.Task[None] | None = None
    subscribers: int = 0
    cancel_reason: str | None = None
    grace: asyncio.TimerHandle | None = None
    started: float = field(default_factory=time.perf_counter)
    quota_key: str | None = None
    """The client whose quota this stream counts against (released when it ends)."""


class _Client:
    """One client connection (a WebSocket, or one SSE response)."""

    kind = "?"
    __slots__ = ("closing", "gate", "id", "last_send", "log", "pumps", "transport", "who")

    def __init__(
        self, transport: asyncio.BaseTransport | None, protocol: Any, cap: int, who: Identity
    ) -> None:
        self.id = secrets.token_hex(4)
        self.transport = transport
        self.who = who
        self.pumps: dict[str, asyncio.Task[None]] = {}
        self.last_send = time.monotonic()
        self.gate = SendGate(transport, protocol, cap)
        """Every pending write's start (the relay's watchdog closes a client whose oldest
        write stays blocked past ``send_timeout`` — cheaper than a timeout around every
        write, which is the hot path) and the write-buffer cap."""
        self.closing = False
        self.log = _log.bind(client=self.id, transport=self.kind)

    async def _write(self, frame: bytes, seq: int | None) -> None:
        raise NotImplementedError

    async def send(self, frame: bytes, seq: int | None = None) -> None:
        """Write one frame (waits only while the client's socket buffer is full)."""
        if self.closing:
            raise _ClientGone
        gate = self.gate
        key = gate.begin()
        try:
            if gate.full():  # over the cap: wait (only this client) until it drains
                await gate.wait_for_room()
            await self._write(frame, seq)
        except (ConnectionError, RuntimeError, aiohttp.ClientError) as exc:
            raise _ClientGone from exc
        finally:
            gate.end(key)
        self.last_send = time.monotonic()

    def backlogged(self) -> bool:
        """True when the kernel stopped taking this client's bytes (its buffer holds some)."""
        t = self.transport
        return isinstance(t, asyncio.WriteTransport) and t.get_write_buffer_size() > 0

    async def idle_tick(self) -> None:
        """Called by a pump with nothing to send for a while (SSE sends a heartbeat)."""

    def close_soon(self, code: int, reason: str) -> None:
        raise NotImplementedError

    def abort(self) -> None:
        """Drop the TCP connection at once (a network cut, as far as the client knows)."""
        self.closing = True
        if isinstance(self.transport, asyncio.WriteTransport):
            self.transport.abort()

    def _stop_pumps(self) -> None:
        current = asyncio.current_task()
        for task in self.pumps.values():
            if task is not current:
                task.cancel()


class _WsClient(_Client):
    kind = "ws"
    __slots__ = ("closer", "send_timeout", "ws")

    def __init__(
        self,
        ws: web.WebSocketResponse,
        request: web.Request,
        send_timeout: float,
        cap: int,
        who: Identity,
    ):
        super().__init__(request.transport, request.protocol, cap, who)
        self.ws = ws
        self.send_timeout = send_timeout
        self.closer: asyncio.Task[None] | None = None

    async def _write(self, frame: bytes, seq: int | None) -> None:
        await self.ws.send_frame(frame, WSMsgType.TEXT)

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
        try:
            async with asyncio.timeout(max(5.0, self.send_timeout)):
                await self.ws.close(code=code, message=reason.encode())
        except (TimeoutError, ConnectionError, RuntimeError, aiohttp.ClientError):
            self.abort()


class _SseClient(_Client):
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
        super().__init__(request.transport, request.protocol, cap, who)
        self.request = request
        self.resp = resp
        self.heartbeat_interval = heartbeat_interval

    async def _write(self, frame: bytes, seq: int | None) -> None:
        if seq is None:
            await self.resp.write(b"data: " + frame + b"\n\n")
        else:
            await self.resp.write(b"id: %d\ndata: %s\n\n" % (seq, frame))

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


# -- the relay -----------------------------------------------------------------------

OnEvent = Callable[[str, int, float], None]


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
        self._owns_log = log is None
        self._session = session
        self._owns_session = session is None
        self.metrics = RelayMetrics()
        self.on_event: OnEvent | None = None
        """Benchmark hook: ``(stream_id, seq, perf_counter())`` for every event the
        pipeline yields, taken before it is logged. ``None`` costs nothing."""
        self.on_sent: OnEvent | None = None
        """Benchmark hook: ``(stream_id, seq, perf_counter())`` once an event's frame
        was handed to the client's socket."""
        self._owned: dict[str, _Owned] = {}
        self._clients: set[_Client] = set()
        self._accepting = True
        self._shutdown_started = False
        self._shutdown_done = asyncio.Event()
        self._watchdog: asyncio.TimerHandle | None = None
        self._features = {
            "sources": any(e.kind == "sources" for e in config.enrichers),
            "grounding": any(e.kind == "grounding" for e in config.enrichers),
        }
        self.log.on_cancel(self._on_cancel_request)
        self._log = _log.bind(relay=config.instance_id)
        self.guard = Guard(
            tokens=([config.token] if config.token else []) + list(config.tokens),
            allowed_hosts=config.allowed_hosts,
            allowed_origins=config.allowed_origins,
            cookie=TOKEN_COOKIE,
        )
        self.quotas = StreamQuotas(config.max_streams_per_client)
        self.app = self._build_app()

    def __repr__(self) -> str:
        return (
            f"<Relay {self.config.instance_id} streams={len(self._owned)} "
            f"clients={len(self._clients)}>"
        )

    # -- introspection -------------------------------------------------------------

    @property
    def active_streams(self) -> int:
        """Upstream requests running now."""
        return len(self._owned)

    @property
    def client_count(self) -> int:
        return len(self._clients)

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
        app = web.Application(
            client_max_size=self.config.max_message_bytes,
            middlewares=[self._security_headers, self.guard.middleware(self._reject)],
        )
        app.router.add_get("/ws", self._handle_ws)
        app.router.add_post("/sse", self._handle_sse_post)
        app.router.add_get("/sse", self._handle_sse_get)
        app.router.add_get("/healthz", self._handle_healthz)
        app.router.add_get("/metrics", self._handle_metrics)
        app.router.add_get("/", self._handle_index)
        from streamcite.relay.aisdk import add_aisdk_route  # POST /api/chat (AI SDK)

        add_aisdk_route(app, self)
        app.router.add_static("/static/", self.config.static_dir, show_index=False)
        app.on_startup.append(self._on_startup)
        app.on_shutdown.append(self._on_shutdown)
        app.on_cleanup.append(self._on_cleanup)
        return app

    @web.middleware
    async def _security_headers(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        resp = await handler(request)
        if not resp.prepared:
            for key, value in _SECURITY_HEADERS.items():
                resp.headers.setdefault(key, value)
        return resp

    async def _on_startup(self, app: web.Application) -> None:
        if self._session is None:
            connector = aiohttp.TCPConnector(
                limit=self.config.max_streams_total + 16, limit_per_host=0
            )
            self._session = aiohttp.ClientSession(connector=connector)
        self._arm_watchdog()
        self._log.info("relay.start", upstream=_host_of(self.config.base_url))

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
                client.log.info("client.too_slow", blocked_s=round(time.monotonic() - since, 3))
                client.close_soon(CloseCode.TOO_SLOW, "client too slow; resume")
        self._arm_watchdog()

    async def _on_shutdown(self, app: web.Application) -> None:
        await self.shutdown()

    async def _on_cleanup(self, app: web.Application) -> None:
        await self.shutdown(grace=0.0)
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        if self._owns_session and self._session is not None:
            await self._session.close()
            self._session = None
        if self._owns_log:
            await self.log.aclose()

    # -- access control ------------------------------------------------------------

    def _refusal(self, request: web.Request, *, check_origin: bool) -> web.Response | None:
        if not self._accepting:
            return self._reject("shutting_down", 503, "the relay is shutting down")
        if not self._token_ok(request):
            return self._reject(
                "unauthorized",
                401,
                "a valid relay token is required",
                headers={"WWW-Authenticate": 'Bearer realm="streamcite-relay"'},
            )
        if check_origin and not self._origin_ok(request):
            return self._reject("origin", 403, "this Origin is not allowed")
        return None

    def _reject(
        self, reason: str, status: int, message: str, headers: Mapping[str, str] | None = None
    ) -> web.Response:
        self.metrics.rejected[reason] += 1
        body = relay_error_frame(reason, message, retryable=status == 503)
        return web.Response(
            status=status, body=body, content_type="application/json", headers=headers
        )

    def _token_ok(self, request: web.Request) -> bool:
        return self.guard.identify(request) is not None

    def _identity(self, request: web.Request) -> Identity:
        """Who sent an admitted request (after :meth:`_refusal` passed)."""
        who = self.guard.identify(request)
        assert who is not None, "identity of a request _refusal refused"
        return who

    def _origin_ok(self, request: web.Request) -> bool:
        return self.guard.origin_ok(request)

    # -- plain endpoints -------------------------------------------------------------

    async def _handle_healthz(self, request: web.Request) -> web.Response:
        status = "ok" if self._accepting else "shutting_down"
        return web.json_response(
            {
                "status": status,
                "instance": self.config.instance_id,
                "active_streams": len(self._owned),
                "clients": len(self._clients),
            },
            status=200 if self._accepting else 503,
            dumps=lambda o: orjson.dumps(o).decode(),
        )

    async def _handle_metrics(self, request: web.Request) -> web.Response:
        if not self._token_ok(request):
            return self._reject("unauthorized", 401, "a valid relay token is required")
        stats_fn = getattr(self.log, "stats", None)
        stats = stats_fn() if callable(stats_fn) else None
        text = self.metrics.render(active_streams=len(self._owned), log_stats=stats)
        return web.Response(text=text, content_type="text/plain", charset="utf-8",
                            headers={"X-Content-Type-Options": "nosniff"})  # fmt: skip

    async def _handle_index(self, request: web.Request) -> web.StreamResponse:
        resp = web.FileResponse(self.config.static_dir / "index.html")
        resp.headers["Cache-Control"] = "no-cache"
        token = request.query.get("token")
        if self.guard.binder.auth and token and self._token_ok(request):
            # Lets the page's WebSocket/SSE requests authenticate without keeping the
            # token in script-visible storage.
            resp.set_cookie(
                TOKEN_COOKIE, token, httponly=True, samesite="Strict", path="/",
                secure=request.secure,
            )  # fmt: skip
        return resp

    # -- WebSocket -------------------------------------------------------------------

    async def _handle_ws(self, request: web.Request) -> web.StreamResponse:
        refused = self._refusal(request, check_origin=True)
        if refused is not None:
            return refused
        if len(self._clients) >= self.config.max_connections:
            return self._reject("too_many_connections", 503, "too many connections")
        cfg = self.config
        ws = web.WebSocketResponse(
            max_msg_size=cfg.max_message_bytes, compress=False, autoping=True, heartbeat=None
        )
        who = self._identity(request)
        await ws.prepare(request)
        _limit_write_buffer(request.transport, cfg.client_buffer_bytes, cfg.client_sndbuf)
        client = _WsClient(ws, request, cfg.send_timeout, cfg.client_buffer_bytes, who)
        self._clients.add(client)
        self.metrics.connections["ws"] += 1
        client.log.debug("client.open", peer=request.remote)
        try:
            await client.send(
                hello_frame(
                    heartbeat_interval=cfg.heartbeat_interval,
                    max_message_bytes=cfg.max_message_bytes,
                    max_question_chars=cfg.max_question_chars,
                    max_streams=cfg.max_streams_per_connection,
                    features=self._features,
                    max_streams_per_client=cfg.max_streams_per_client,
                )
            )
            await self._ws_loop(client)
        except (_ClientGone, _TooSlow):
            pass
        finally:
            self._clients.discard(client)
            self.metrics.connections["ws"] -= 1
            await self._drop_pumps(client)
            if client.closer is not None:
                with contextlib.suppress(Exception):
                    await client.closer
            if not ws.closed:
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(1.0):
                        await ws.close()
            client.log.debug("client.close", code=ws.close_code)
        return ws

    async def _ws_loop(self, client: _WsClient) -> None:
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
                await self._on_ws_message(client, msg.data)
            elif msg.type is WSMsgType.BINARY:
                await client.send(
                    relay_error_frame("bad_message", "send JSON text messages, not binary")
                )
            else:  # CLOSE, CLOSING, CLOSED, ERROR (1009 for oversize is sent by aiohttp)
                if msg.type is WSMsgType.ERROR:
                    self.metrics.errors["ws_error"] += 1
                break

    async def _on_ws_message(self, client: _WsClient, data: str | bytes) -> None:
        cfg = self.config
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
                sid = await self._ask(client, msg)
                if sid is not None:
                    self._start_pump(client, sid, 0)
            elif isinstance(msg, CancelMessage):
                frame = await self._cancel(msg.stream_id, client.who)
                if frame is not None:
                    await client.send(frame)
            else:
                if await self._resume(client, msg):
                    self._start_pump(client, msg.stream_id, msg.after_seq)
        except StreamciteError as exc:  # the log failed (Redis unreachable, say)
            self.metrics.errors[exc.code] += 1
            ref = msg.ref if isinstance(msg, AskMessage) else None
            sid_or_none = None if isinstance(msg, AskMessage) else msg.stream_id
            await client.send(
                relay_error_frame(
                    exc.code,
                    _log_failed_message(exc),
                    stream_id=sid_or_none,
                    ref=ref,
                    retryable=exc.retryable,
                )
            )

    # -- SSE -------------------------------------------------------------------------

    async def _handle_sse_post(self, request: web.Request) -> web.StreamResponse:
        refused = self._refusal(request, check_origin=True)
        if refused is not None:
            return refused
        cfg = self.config
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return self._reject("message_too_large", 413, "the request body is too large")
        last_id = request.headers.get("Last-Event-ID")
        msg: AskMessage | CancelMessage | ResumeMessage
        if body.strip():
            try:
                msg = parse_client_message(
                    body, max_bytes=cfg.max_message_bytes, max_question_chars=cfg.max_question_chars
                )
            except ProtocolError as exc:
                self.metrics.errors[exc.code] += 1
                return web.Response(
                    status=400,
                    body=relay_error_frame(exc.code, exc.message),
                    content_type="application/json",
                )
        else:
            sid = request.query.get("stream_id", "")
            if not valid_stream_id(sid):
                return self._bad_request("bad_message", "send an ask/resume body or ?stream_id=")
            msg = ResumeMessage(stream_id=sid, after_seq=0)
        if isinstance(msg, CancelMessage):
            try:
                frame = await self._cancel(msg.stream_id, self._identity(request))
            except StreamciteError as exc:
                return self._log_unavailable(exc, msg.stream_id)
            return web.Response(status=202 if frame is None else 404,
                                body=frame or b'{"type":"cancel_requested"}',
                                content_type="application/json")  # fmt: skip
        if isinstance(msg, ResumeMessage) and last_id is not None:
            after = _parse_last_event_id(last_id)
            if after is None:
                return self._bad_request("bad_message", "Last-Event-ID must be a sequence number")
            msg = ResumeMessage(stream_id=msg.stream_id, after_seq=after)
        return await self._serve_sse(request, msg)

    async def _handle_sse_get(self, request: web.Request) -> web.StreamResponse:
        """``GET /sse?stream_id=..&after_seq=..`` — resume for ``EventSource``."""
        refused = self._refusal(request, check_origin=True)
        if refused is not None:
            return refused
        sid = request.query.get("stream_id", "")
        if not valid_stream_id(sid):
            return self._bad_request("bad_message", "stream_id is required")
        raw_after = request.headers.get("Last-Event-ID") or request.query.get("after_seq", "0")
        after = _parse_last_event_id(raw_after)
        if after is None:
            return self._bad_request("bad_message", "after_seq / Last-Event-ID must be >= 0")
        return await self._serve_sse(request, ResumeMessage(stream_id=sid, after_seq=after))

    def _log_unavailable(self, exc: StreamciteError, sid: str | None) -> web.Response:
        self.metrics.errors[exc.code] += 1
        return web.Response(
            status=503,
            body=relay_error_frame(
                exc.code, _log_failed_message(exc), stream_id=sid, retryable=exc.retryable
            ),
            content_type="application/json",
        )

    def _bad_request(self, code: str, message: str) -> web.Response:
        self.metrics.errors[code] += 1
        return web.Response(
            status=400, body=relay_error_frame(code, message), content_type="application/json"
        )

    async def _serve_sse(
        self, request: web.Request, msg: AskMessage | ResumeMessage
    ) -> web.StreamResponse:
        cfg = self.config
        if len(self._clients) >= cfg.max_connections:
            return self._reject("too_many_connections", 503, "too many connections")
        resp = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
                **_SECURITY_HEADERS,
            }
        )
        _limit_write_buffer(request.transport, cfg.client_buffer_bytes, cfg.client_sndbuf)
        who = self._identity(request)
        client = _SseClient(request, resp, cfg.heartbeat_interval, cfg.client_buffer_bytes, who)
        # Validate before committing to a 200 event stream, so errors are plain HTTP.
        if isinstance(msg, AskMessage):
            refusal = self._ask_refusal(client)
            if refusal is not None:
                code, message, retryable = refusal
                self.metrics.errors[code] += 1
                return web.Response(
                    status=503 if retryable else 429,
                    body=relay_error_frame(code, message, ref=msg.ref, retryable=retryable),
                    content_type="application/json",
                )
            try:
                owned = await self._start_stream(msg, who)
            except StreamciteError as exc:
                return self._log_unavailable(exc, None)
            sid, after = owned.stream_id, 0
            first = accepted_frame(sid, msg.ref)
        else:
            try:
                status = await self._bound_status(msg.stream_id, who)
            except StreamciteError as exc:
                return self._log_unavailable(exc, msg.stream_id)
            if status is None or _bad_seq(msg.after_seq, status):
                code = "unknown_stream" if status is None else "bad_seq"
                self.metrics.errors[code] += 1
                return web.Response(
                    status=404 if status is None else 400,
                    body=relay_error_frame(code, _RESUME_ERRORS[code], stream_id=msg.stream_id),
                    content_type="application/json",
                )
            self.metrics.resumes += 1
            sid, after = msg.stream_id, msg.after_seq
            first = accepted_frame(sid, None, resumed=True)
        self._clients.add(client)
        self.metrics.connections["sse"] += 1
        task = asyncio.current_task()
        assert task is not None
        client.pumps[sid] = task
        self._attach(sid)
        try:
            with contextlib.suppress(ConnectionError, RuntimeError):
                await resp.prepare(request)
                with contextlib.suppress(_ClientGone, _TooSlow):
                    await client.send(first)
                    await self._pump(client, sid, after, attached=False)
        finally:
            self._detach(sid)
            client.pumps.pop(sid, None)
            self._clients.discard(client)
            self.metrics.connections["sse"] -= 1
        with contextlib.suppress(Exception):
            await resp.write_eof()
        return resp

    # -- ask / cancel / resume -------------------------------------------------------

    def _ask_refusal(self, client: _Client) -> tuple[str, str, bool] | None:
        """Why a new stream cannot start now: ``(code, message, retryable)``, or None."""
        cfg = self.config
        if not self._accepting:
            return ("shutting_down", "the relay is shutting down; retry elsewhere", True)
        if len(client.pumps) >= cfg.max_streams_per_connection:
            return (
                "too_many_streams",
                f"at most {cfg.max_streams_per_connection} streams per connection",
                False,
            )
        if len(self._owned) >= cfg.max_streams_total:
            return ("relay_busy", "the relay is at its stream limit; retry later", True)
        if self.quotas.running(client.who.quota_key) >= self.quotas.limit:
            return (QUOTA_CODE, self.quotas.message(), False)
        return None

    async def _start_stream(self, msg: AskMessage, who: Identity) -> _Owned:
        """Start a stream for ``who`` (its quota was checked by :meth:`_ask_refusal`,
        with no await since, so counting it here cannot overshoot)."""
        sid = self.guard.binder.new_stream_id(who)
        key = who.quota_key
        self.quotas.acquire(key)
        try:
            await self.log.open_stream(sid, owner=self.config.instance_id)
        except BaseException:
            self.quotas.release(key)
            raise
        owned = _Owned(sid, quota_key=key)
        self._owned[sid] = owned
        self.metrics.streams_started += 1
        owned.task = asyncio.create_task(self._produce(owned, msg), name=f"relay-stream:{sid}")
        return owned

    async def _ask(self, client: _WsClient, msg: AskMessage) -> str | None:
        """Start a stream for a WebSocket client and send ``accepted``; its id, or None."""
        refusal = self._ask_refusal(client)
        if refusal is not None:
            code, message, retryable = refusal
            self.metrics.errors[code] += 1
            await client.send(relay_error_frame(code, message, ref=msg.ref, retryable=retryable))
            return None
        owned = await self._start_stream(msg, client.who)
        try:
            await client.send(accepted_frame(owned.stream_id, msg.ref))
        except (_ClientGone, _TooSlow):
            self._maybe_abandon(owned)
            raise
        return owned.stream_id

    async def _bound_status(self, sid: str, who: Identity) -> StreamStatus | None:
        """The stream's status, or None — also when ``who`` did not start it (a stream of
        another principal is answered exactly like one that does not exist)."""
        if not self.guard.binder.may_use(who, sid):
            return None
        return await self.log.status(sid)

    async def _cancel(self, sid: str, who: Identity) -> bytes | None:
        """Route a cancel to the stream's owner; an error frame if the stream is unknown."""
        status = await self._bound_status(sid, who)
        if status is None:
            self.metrics.errors["unknown_stream"] += 1
            return relay_error_frame(
                "unknown_stream", _RESUME_ERRORS["unknown_stream"], stream_id=sid
            )
        if not status.finished:
            await self.log.request_cancel(sid)
        return None

    async def _resume(self, client: _Client, msg: ResumeMessage) -> bool:
        status = await self._bound_status(msg.stream_id, client.who)
        code: str | None = None
        if status is None:
            code = "unknown_stream"
        elif _bad_seq(msg.after_seq, status):
            code = "bad_seq"
        elif (
            msg.stream_id not in client.pumps
            and len(client.pumps) >= self.config.max_streams_per_connection
        ):
            code = "too_many_streams"
        if code is not None:
            self.metrics.errors[code] += 1
            await client.send(
                relay_error_frame(code, _RESUME_ERRORS[code], stream_id=msg.stream_id)
            )
            return False
        old = client.pumps.pop(msg.stream_id, None)
        if old is not None:
            old.cancel()
            await asyncio.gather(old, return_exceptions=True)
        self.metrics.resumes += 1
        await client.send(accepted_frame(msg.stream_id, None, resumed=True))
        return True

    def _on_cancel_request(self, sid: str) -> None:
        owned = self._owned.get(sid)
        if owned is not None:
            self._cancel_owned(owned, "cancelled")

    def _cancel_owned(self, owned: _Owned, reason: str) -> None:
        if owned.cancel_reason is None and owned.task is not None and not owned.task.done():
            owned.cancel_reason = reason
            owned.task.cancel()

    # -- subscribers and the grace period ----------------------------------------------

    def _attach(self, sid: str) -> None:
        owned = self._owned.get(sid)
        if owned is not None:
            owned.subscribers += 1
            if owned.grace is not None:
                owned.grace.cancel()
                owned.grace = None

    def _detach(self, sid: str) -> None:
        owned = self._owned.get(sid)
        if owned is not None:
            owned.subscribers -= 1
            self._maybe_abandon(owned)

    def _maybe_abandon(self, owned: _Owned) -> None:
        if owned.subscribers > 0 or owned.grace is not None:
            return
        if owned.task is None or owned.task.done():
            return
        grace = self.config.resume_grace
        if grace <= 0:
            self._cancel_owned(owned, "abandoned")
        else:
            owned.grace = asyncio.get_running_loop().call_later(grace, self._grace_over, owned)

    def _grace_over(self, owned: _Owned) -> None:
        owned.grace = None
        if owned.subscribers <= 0:
            self._cancel_owned(owned, "abandoned")

    # -- pumps -------------------------------------------------------------------------

    def _start_pump(self, client: _Client, sid: str, after_seq: int) -> None:
        self._attach(sid)
        task = asyncio.create_task(
            self._pump(client, sid, after_seq, attached=True), name=f"relay-pump:{sid}"
        )
        client.pumps[sid] = task

    async def _pump(self, client: _Client, sid: str, after_seq: int, *, attached: bool) -> None:
        """Deliver ``sid``'s events after ``after_seq`` to ``client``, exactly once, in order."""
        log = self.log
        metrics = self.metrics
        bound = self.config.client_buffer_events
        block = self.config.heartbeat_interval
        if sid not in self._owned:
            # Only a status check notices that another instance (the owner) died: poll
            # often enough that its readers learn it soon after its lease lapses.
            block = min(block, _REMOTE_POLL)
        delivered = after_seq
        try:
            try:
                # Events already logged when the client (re)attached are backlog, not lag.
                status = await log.status(sid)
                backlog_end = status.last_seq if status is not None else 0
                while True:
                    entries = await log.read(sid, delivered, block=block)
                    if not entries:
                        status = await log.status(sid)
                        if status is None:
                            await client.send(
                                relay_error_frame(
                                    "stream_expired", "the stream is no longer kept", stream_id=sid
                                )
                            )
                            return
                        if status.finished and status.last_seq <= delivered:
                            return
                        if not status.owner_alive:
                            await self._end_orphaned(client, sid, delivered, status)
                            return
                        await client.idle_tick()
                        continue
                    first = entries[0].seq
                    if first > delivered + 1:
                        await self._send_gap(client, sid, delivered, first)
                    # Behind the live head (resume backlog excepted) while its socket is full:
                    # the client cannot keep up. A burst to a client that keeps up is fine.
                    if (
                        entries[-1].seq - max(delivered, backlog_end) > bound
                        and client.backlogged()
                    ):
                        raise _TooSlow
                    send = client.send
                    on_sent = self.on_sent
                    for entry in entries:
                        await send(envelope(sid, entry.seq, entry.payload), entry.seq)
                        if on_sent is not None:
                            on_sent(sid, entry.seq, time.perf_counter())
                    metrics.events_sent += len(entries)
                    last = entries[-1]
                    delivered = last.seq
                    if is_done_payload(last.payload):
                        return
            except StreamciteError as exc:  # the log failed (Redis unreachable, say)
                await self._end_on_log_error(client, sid, delivered, exc)
        except _TooSlow:
            metrics.client_closed["too_slow"] += 1
            client.log.info("client.too_slow", stream_id=sid, delivered=delivered)
            client.close_soon(CloseCode.TOO_SLOW, "client too slow; resume")
        except _ClientGone:
            pass
        finally:
            if attached:
                self._detach(sid)
            if client.pumps.get(sid) is asyncio.current_task():
                del client.pumps[sid]

    async def _send_gap(self, client: _Client, sid: str, delivered: int, first: int) -> None:
        self.metrics.errors["resume_gap"] += 1
        await client.send(
            relay_error_frame(
                "resume_gap",
                f"events {delivered + 1}..{first - 1} are no longer kept",
                stream_id=sid,
            )
        )

    async def _end_orphaned(
        self, client: _Client, sid: str, delivered: int, status: StreamStatus
    ) -> None:
        """End a stream whose owner died: the rest of its log, then ``error`` (``owner_lost``)
        and ``done`` with the answer rebuilt from the log.

        Nobody can append to the log any more (only the owner may), so these two events are
        synthesised by every reader; they depend only on the log's content, so every client
        of the stream, on any instance, gets the same ones with the same ``seq``."""
        log = self.log
        # The owner is gone: the log cannot grow, one non-blocking read is all of it.
        logged = await log.read(sid, 0)
        tail = [e for e in logged if e.seq > delivered]
        if tail:
            if tail[0].seq > delivered + 1:
                await self._send_gap(client, sid, delivered, tail[0].seq)
            for entry in tail:
                await client.send(envelope(sid, entry.seq, entry.payload), entry.seq)
                self.metrics.events_sent += 1
                delivered = entry.seq
                if is_done_payload(entry.payload):
                    return  # it did finish after all (the status raced with the last write)
        last = max(delivered, status.last_seq, logged[-1].seq if logged else 0)
        error = ErrorEvent(
            code="owner_lost",
            message=(
                "the relay instance running this stream stopped before it finished; "
                "the answer is partial"
            ),
            retryable=True,
            stage="relay",
        )
        self.metrics.errors["owner_lost"] += 1
        client.log.info("relay.stream.owner_lost", stream_id=sid, owner=status.owner, last=last)
        answer = _rebuild_answer(logged, error)
        done = _Bounds(self.config, client.log).final_payload(DoneEvent(answer=answer))
        await client.send(envelope(sid, last + 1, orjson.dumps(error)), last + 1)
        await client.send(envelope(sid, last + 2, done), last + 2)
        self.metrics.events_sent += 2

    async def _end_on_log_error(
        self, client: _Client, sid: str, delivered: int, exc: StreamciteError
    ) -> None:
        """The log could not be read: tell the client (``error`` with the log's code) and end
        the stream with ``done`` — the answer this client received, when the log can still
        say it, else an empty one — rather than leaving the client waiting."""
        code = exc.code
        self.metrics.errors[code] += 1
        client.log.warning("relay.pump.log_failed", stream_id=sid, code=code, delivered=delivered)
        error = ErrorEvent(
            code=code,
            message=f"the relay could not read the stream's log ({code}); the answer is partial",
            retryable=exc.retryable,
            stage="relay",
        )
        try:
            logged = [e for e in await self.log.read(sid, 0) if e.seq <= delivered]
        except StreamciteError:
            logged = []
        answer = _rebuild_answer(logged, error)
        await client.send(envelope(sid, delivered + 1, orjson.dumps(error)), delivered + 1)
        payload = _Bounds(self.config, client.log).final_payload(DoneEvent(answer=answer))
        done = envelope(sid, delivered + 2, payload)
        await client.send(done, delivered + 2)
        self.metrics.events_sent += 2

    async def _drop_pumps(self, client: _Client) -> None:
        pumps = list(client.pumps.values())
        client.pumps.clear()
        for task in pumps:
            task.cancel()
        if pumps:
            await asyncio.gather(*pumps, return_exceptions=True)

    # -- the producer ------------------------------------------------------------------

    def _request_for(self, msg: AskMessage) -> dict[str, Any]:
        messages: list[dict[str, str]] = []
        if self.config.system_prompt:
            messages.append({"role": "system", "content": self.config.system_prompt})
        messages.append({"role": "user", "content": msg.question})
        return {
            "model": self.config.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }

    async def _produce(self, owned: _Owned, msg: AskMessage) -> None:
        """Run the upstream request and log every event; always ends with ``done``."""
        cfg = self.config
        sid = owned.stream_id
        log = self.log
        # The in-memory log appends synchronously: no coroutine per event on the hot path.
        append_nowait: Callable[[str, bytes], int] | None = getattr(log, "append_nowait", None)
        on_event = self.on_event
        headers = dict(cfg.upstream_headers)
        if msg.options.faults and cfg.allow_client_faults:
            headers[_FAULT_HEADER] = msg.options.faults
        enrichers = [
            e
            for e in cfg.enrichers
            if (e.kind != "sources" or msg.options.sources)
            and (e.kind != "grounding" or msg.options.grounding)
        ]
        stream = stream_chat(
            self._request_for(msg),
            base_url=cfg.base_url,
            api_key=cfg.api_key,
            transport="aiohttp",
            session=self._session,
            headers=headers,
            timeouts=cfg.timeouts,
            marker_mode=msg.options.marker_mode,
            after=enrichers,
            retries=cfg.retries,
            stream_id=sid,
        )
        slog = self._log.bind(stream_id=sid)
        slog.info("relay.stream.start", question_chars=len(msg.question))
        metrics = self.metrics
        first_token = True
        done: DoneEvent | None = None
        reraise = False
        failure: ErrorEvent | None = None
        log_failed = False
        bounds = _Bounds(cfg, slog)
        try:
            async with stream:
                async for event in stream:
                    t = time.perf_counter()
                    if type(event) is ErrorEvent or type(event) is DoneEvent:  # cold path
                        bounded = bounds.payload(event)
                        if bounded is None:
                            continue  # one error too many: counted, not sent
                        payload = bounded
                    else:
                        payload = orjson.dumps(event)
                    if append_nowait is not None:
                        seq = append_nowait(sid, payload)
                    else:
                        seq = await log.append(sid, payload)
                    if on_event is not None:
                        on_event(sid, seq, t)
                    kind = type(event)
                    if kind is TokenEvent:
                        if first_token:
                            first_token = False
                            metrics.ttft.observe(t - owned.started)
                    elif kind is ErrorEvent:
                        metrics.errors[event.code] += 1  # type: ignore[union-attr]
                    elif kind is DoneEvent:
                        done = event  # type: ignore[assignment]
        except asyncio.CancelledError:
            if owned.cancel_reason is None:
                owned.cancel_reason = "cancelled"
                reraise = True  # cancelled from outside (loop shutdown): finish, then re-raise
            else:
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
        except StreamciteError as exc:  # the log failed (Redis unreachable, say)
            slog.warning("relay.stream.log_failed", code=exc.code)
            log_failed = True
            failure = ErrorEvent(
                code=exc.code,
                message=f"the relay's stream log failed ({exc.code}); the answer is partial",
                retryable=exc.retryable,
                stage="relay",
            )
        except Exception as exc:  # a bug: end the stream cleanly anyway
            slog.exception("relay.stream.failed")
            failure = ErrorEvent(
                code="relay_error",
                message=f"the relay failed: {type(exc).__name__}",
                stage="relay",
            )
        try:
            if done is None:
                answer = stream.answer
                if log_failed:
                    # The pipeline may have folded tokens it had not yielded yet (or that
                    # never reached the log): the answer is what the clients were given.
                    with contextlib.suppress(StreamciteError):
                        answer = _rebuild_answer(await log.read(sid, 0), None)
                final = self._final_events(answer, owned.cancel_reason, failure)
                for event in final:
                    if type(event) is ErrorEvent:
                        metrics.errors[event.code] += 1
                    with contextlib.suppress(Exception):
                        await log.append(sid, bounds.final_payload(event))
            with contextlib.suppress(Exception):
                await log.finish(sid)
        finally:
            self._owned.pop(sid, None)
            if owned.quota_key is not None:
                self.quotas.release(owned.quota_key)
            if owned.grace is not None:
                owned.grace.cancel()
                owned.grace = None
            outcome = owned.cancel_reason or ("error" if failure else "ok")
            if done is not None:
                timings = done.answer.timings
                for stage, value in (
                    ("ttft", timings.ttft_ms),
                    ("stream", timings.stream_ms),
                    ("sources", timings.sources_ms),
                    ("grounding", timings.grounding_ms),
                    ("total", timings.total_ms),
                ):
                    if value is not None:
                        metrics.stages[stage].observe(value / 1000)
                if done.answer.errors:
                    outcome = "error"
            metrics.streams_finished[outcome] += 1
            slog.info("relay.stream.end", outcome=outcome)
        if reraise:
            raise asyncio.CancelledError

    @staticmethod
    def _final_events(answer: Any, reason: str | None, failure: ErrorEvent | None) -> list[Event]:
        """``error`` + ``done`` for a stream that ended without its own ``done``."""
        if failure is not None:
            error = failure
        else:
            messages = {
                "cancelled": "the stream was cancelled",
                "abandoned": "no client listened to the stream within the resume grace period",
                "shutdown": "the relay shut down before the stream finished",
            }
            code = reason or "cancelled"
            error = ErrorEvent(
                code=code,
                message=messages.get(code, "the stream was cancelled"),
                retryable=code == "shutdown",
                stage="cancelled",
            )
        # The pipeline records a generic "cancelled" error; the relay's says why.
        answer.errors = [e for e in answer.errors if getattr(e, "code", None) != "cancelled"]
        answer.errors.append(error)
        return [error, DoneEvent(answer=answer)]

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
            tasks = [o.task for o in self._owned.values() if o.task is not None]
            if tasks and grace > 0:
                self._log.info("relay.shutdown.draining", streams=len(tasks), grace=grace)
                await asyncio.wait(tasks, timeout=grace)
            for owned in list(self._owned.values()):
                self._cancel_owned(owned, "shutdown")
            tasks = [o.task for o in self._owned.values() if o.task is not None]
            if tasks:
                await asyncio.wait(tasks, timeout=5.0)
            # Let pumps deliver the final error + done before the connections close.
            pumps = [t for c in self._clients for t in c.pumps.values()]
            if pumps:
                await asyncio.wait(pumps, timeout=2.0)
            for client in list(self._clients):
                if client.pumps or isinstance(client, _WsClient):
                    self.metrics.client_closed["shutdown"] += 1
                client.close_soon(CloseCode.GOING_AWAY, "relay shutting down")
            closers = [
                c.closer for c in self._clients if isinstance(c, _WsClient) and c.closer is not None
            ]
            if closers:
                await asyncio.wait(closers, timeout=self.config.send_timeout + 1)
            self._log.info("relay.shutdown.done")
        finally:
            self._shutdown_done.set()


_RESUME_ERRORS = {
    "unknown_stream": "no such stream (unknown, or expired after its retention time)",
    "bad_seq": "after_seq is past the last event of the stream",
    "too_many_streams": "too many streams on this connection",
}


_REMOTE_POLL = 2.0
"""Longest blocking read of a pump whose stream is owned by another instance (seconds)."""


def _bad_seq(after_seq: int, status: StreamStatus) -> bool:
    """``after_seq`` past the log's end is an error, unless the owner died: a client may
    then hold events the log never got, and it is told ``owner_lost`` instead."""
    return after_seq > status.last_seq and (status.finished or status.owner_alive)


def _log_failed_message(exc: StreamciteError) -> str:
    # The exception's own text may name the log's host: clients get the code only.
    return f"the relay's stream log is unavailable ({exc.code}); retry later"


def _rebuild_answer(entries: Sequence[LogEntry], error: ErrorEvent | None) -> CitedAnswer:
    """The partial answer a stream's logged events make, ending with ``error`` (if any).

    Deterministic in the log's content, so readers on different instances agree; its
    ``text`` is the concatenation of the logged token texts. An entry that cannot be
    rebuilt is skipped (it cannot be, short of a bug: the relay wrote it)."""
    builder = AnswerBuilder()
    for entry in entries:
        try:
            event = event_from_json(entry.payload)
        except StreamciteError:
            _log.warning("relay.rebuild.skipped", seq=entry.seq)
            continue
        if not isinstance(event, DoneEvent):  # done is never logged before the end
            builder.add(event)
    if error is not None:
        builder.add(error)
    return builder.snapshot()


def _limit_write_buffer(
    transport: asyncio.BaseTransport | None, high: int, sndbuf: int | None
) -> None:
    if isinstance(transport, asyncio.WriteTransport):
        transport.set_write_buffer_limits(high=high)
    if sndbuf is not None and transport is not None:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)


def _parse_last_event_id(value: str) -> int | None:
    try:
        return parse_last_event_id(value)
    except ValueError:
        return None


class _Bounds:
    """One stream's error admission and ``done`` bound (see :mod:`streamcite.relay.bounds`)."""

    __slots__ = ("errors", "log", "max_done", "max_errors")

    def __init__(self, cfg: RelayConfig, log: Any) -> None:
        self.errors = StreamErrors(cfg.max_stream_errors)
        self.max_errors = cfg.max_stream_errors
        self.max_done = cfg.max_done_bytes
        self.log = log

    def payload(self, event: Event) -> bytes | None:
        """Wire JSON of an upstream ``error``/``done`` event; None: not to be logged."""
        if type(event) is DoneEvent:
            return self.final_payload(event)
        assert isinstance(event, ErrorEvent)
        admitted = self.errors.admit(event)
        if admitted is None:
            return None
        return self.final_payload(admitted)

    def final_payload(self, event: Event) -> bytes:
        """Wire JSON of an event the relay always sends (its own errors, ``done``)."""
        if type(event) is DoneEvent:
            for err in event.answer.errors:
                if isinstance(err, ErrorEvent):
                    public_error(err)
            return bounded_done(event, max_errors=self.max_errors, max_bytes=self.max_done)
        if isinstance(event, ErrorEvent):
            detail = public_error(event)
            if detail is not None:  # the browser gets the code and a generic message
                self.log.warning("relay.stream.error_detail", code=event.code, detail=detail)
        return orjson.dumps(event)


def _host_of(url: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(url).netloc


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
        runner = web.AppRunner(
            self.relay.app,
            access_log=None,
            handler_cancellation=True,
            shutdown_timeout=self._shutdown_timeout,
        )
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self._requested_port)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = int(runner.addresses[0][1])

    async def stop(self) -> None:
        """Graceful shutdown, then stop listening and release everything."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        await self.relay.shutdown()
        await runner.cleanup()

    async def __aenter__(self) -> RelayServer:
        await self.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()
