"""The relay's configuration: :class:`RelayConfig`, validated once when built.

The upstream URL, key and model come only from here: a client can ask a question and
pick a few options, never where the question goes.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from streamcite.enrich.base import Enricher
from streamcite.pipeline import Timeouts
from streamcite.pipeline.apis import Api, check_api
from streamcite.relay.guard import norm_origin, parse_host_pattern

__all__ = ["STATIC_DIR", "TOKEN_COOKIE", "RelayConfig"]

STATIC_DIR = Path(__file__).with_name("static")
"""The chat page (``index.html``, CSS, ES modules)."""
TOKEN_COOKIE = "streamcite_token"
"""The HttpOnly cookie ``/?token=…`` sets, so the page's requests authenticate."""


def _default_timeouts() -> Timeouts:
    return Timeouts(connect=10.0, first_token=60.0, idle=60.0, total=600.0)


@dataclass(slots=True)
class RelayConfig:
    """Everything the relay needs. Secrets (``api_key``, ``token``) never appear in reprs."""

    base_url: str
    """Upstream API root with its version (``…/v1``; ``api`` sets the path appended)."""
    api: Api = "chat"
    """The upstream's API (``chat``, ``responses``, ``anthropic``, ``gemini``, ``cohere``):
    the relay sends each question in that API's own request body."""
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
    header_timeout: float = 10.0
    """A connection without a complete request head this many seconds after it opened
    (or after its previous response) is closed: slowloris, idle keep-alive."""
    body_timeout: float = 30.0
    """A request whose body has not arrived whole this many seconds after its head is
    closed (see :class:`~streamcite.web.deadlines.ReadDeadlines`)."""
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
    tune_gc: bool = False
    """Once listening, tune the process's cyclic garbage collector for a long-running relay
    (:func:`streamcite.relay.eventloop.tune_gc`: start-up objects frozen, young
    collections every 50,000 allocations). Process-wide, so off for a relay embedded in
    another application; ``streamcite relay`` turns it on."""
    upstream_transport: str = "auto"
    """How upstream requests are made: ``"push"`` (:mod:`streamcite.transports.push`:
    each read of tokens decoded and logged where the socket delivers it, no task woken
    per token; needs ``httptools``, the ``fast`` extra), ``"aiohttp"``, or ``"auto"``:
    push when ``httptools`` is installed. A ``session`` given to the relay means aiohttp."""
    static_dir: Path = STATIC_DIR
    instance_id: str = field(default_factory=lambda: f"relay-{secrets.token_hex(4)}")

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError("base_url must be an http:// or https:// URL")
        self.api = check_api(self.api)
        if self.upstream_transport not in ("auto", "push", "aiohttp"):
            raise ValueError("upstream_transport must be 'auto', 'push' or 'aiohttp'")
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
        for name in ("send_timeout", "heartbeat_interval", "header_timeout", "body_timeout"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0")
        for name in ("resume_grace", "shutdown_grace"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        self.allowed_origins = tuple(norm_origin(o) for o in self.allowed_origins)
