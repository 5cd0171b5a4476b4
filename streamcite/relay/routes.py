"""The relay's HTTP front: who is let in, security headers, the plain endpoints.

:class:`Access` applies the :class:`~streamcite.relay.guard.Guard` (token, Host and
Origin rules) to a request and writes refusals (JSON body, counted by reason).
:class:`PlainEndpoints` serves ``GET /healthz``, ``GET /metrics`` and the chat page.
The streaming endpoints are :mod:`streamcite.relay.websocket` and
:mod:`streamcite.relay.sse`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Protocol, runtime_checkable

import orjson
from aiohttp import web

from streamcite.relay.config import TOKEN_COOKIE, RelayConfig
from streamcite.relay.guard import Guard, Identity
from streamcite.relay.metrics import CONTENT_TYPE, RelayMetrics
from streamcite.relay.protocol import relay_error_frame
from streamcite.streamlog import StreamLog
from streamcite.web.deadlines import ReadDeadlines

__all__ = ["SECURITY_HEADERS", "Access", "LogWithStats", "PlainEndpoints", "security_headers"]

SECURITY_HEADERS = {
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

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def security_headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Add :data:`SECURITY_HEADERS` to every response not already sent."""
    resp = await handler(request)
    if not resp.prepared:
        for key, value in SECURITY_HEADERS.items():
            resp.headers.setdefault(key, value)
    return resp


@runtime_checkable
class LogWithStats(Protocol):
    """A log that reports its size (both shipped logs do): ``/metrics`` then shows it."""

    def stats(self) -> Mapping[str, int]: ...


class Access:
    """Admission of requests (token, Origin; Host is the guard's middleware) and refusals."""

    def __init__(self, guard: Guard, metrics: RelayMetrics, accepting: Callable[[], bool]):
        self.guard = guard
        self.metrics = metrics
        self.accepting = accepting
        """False once the relay started shutting down."""

    def refusal(self, request: web.Request, *, check_origin: bool) -> web.Response | None:
        """The response refusing ``request`` (shutting down, no valid token, bad Origin),
        or None when it may go on."""
        if not self.accepting():
            return self.reject("shutting_down", 503, "the relay is shutting down")
        if not self.token_ok(request):
            return self.reject(
                "unauthorized",
                401,
                "a valid relay token is required",
                headers={"WWW-Authenticate": 'Bearer realm="streamcite-relay"'},
            )
        if check_origin and not self.guard.origin_ok(request):
            return self.reject("origin", 403, "this Origin is not allowed")
        return None

    def reject(
        self, reason: str, status: int, message: str, headers: Mapping[str, str] | None = None
    ) -> web.Response:
        """A refusal with the relay's JSON error body, counted under ``reason``."""
        self.metrics.rejected[reason] += 1
        body = relay_error_frame(reason, message, retryable=status == 503)
        return web.Response(
            status=status, body=body, content_type="application/json", headers=headers
        )

    def token_ok(self, request: web.Request) -> bool:
        return self.guard.identify(request) is not None

    def identity(self, request: web.Request) -> Identity:
        """Who sent an admitted request (after :meth:`refusal` passed)."""
        who = self.guard.identify(request)
        assert who is not None, "identity of a request refusal() refused"
        return who


class PlainEndpoints:
    """``/healthz``, ``/metrics`` and ``/`` (the chat page)."""

    def __init__(
        self,
        config: RelayConfig,
        access: Access,
        metrics: RelayMetrics,
        log: StreamLog,
        *,
        streams: Collection[str],
        clients: Collection[object],
        deadlines: ReadDeadlines | None = None,
    ) -> None:
        self.config = config
        self.access = access
        self.metrics = metrics
        self.log_stats = log.stats if isinstance(log, LogWithStats) else None
        self.streams = streams
        """The streams this relay produces (live view)."""
        self.clients = clients
        """The open client connections (live view)."""
        self.deadlines = deadlines
        """Read deadlines (half-open connections counted, closed ones by phase)."""

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/healthz", self.healthz)
        app.router.add_get("/metrics", self.metrics_text)
        app.router.add_get("/", self.index)

    async def healthz(self, request: web.Request) -> web.Response:
        accepting = self.access.accepting()
        return web.json_response(
            {
                "status": "ok" if accepting else "shutting_down",
                "instance": self.config.instance_id,
                "active_streams": len(self.streams),
                "clients": len(self.clients),
                "half_open": self.deadlines.half_open if self.deadlines else 0,
            },
            status=200 if accepting else 503,
            dumps=lambda o: orjson.dumps(o).decode(),
        )

    async def metrics_text(self, request: web.Request) -> web.Response:
        if not self.access.token_ok(request):
            return self.access.reject("unauthorized", 401, "a valid relay token is required")
        stats = self.log_stats() if self.log_stats is not None else None
        body = self.metrics.render(
            active_streams=len(self.streams), log_stats=stats, deadlines=self.deadlines
        )
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE,
                                                "X-Content-Type-Options": "nosniff"})  # fmt: skip

    async def index(self, request: web.Request) -> web.StreamResponse:
        resp = web.FileResponse(self.config.static_dir / "index.html")
        resp.headers["Cache-Control"] = "no-cache"
        token = request.query.get("token")
        if self.access.guard.binder.auth and token and self.access.token_ok(request):
            # Lets the page's WebSocket/SSE requests authenticate without keeping the
            # token in script-visible storage.
            resp.set_cookie(
                TOKEN_COOKIE, token, httponly=True, samesite="Strict", path="/",
                secure=request.secure,
            )  # fmt: skip
        return resp
