"""The embedded local backend: an aiohttp app that speaks the three APIs offline.

This module assembles the app (routes, middlewares) and runs it (:class:`LocalBackend`);
each API lives in its own module:

- :mod:`~streamcite.local.apis.openai`: ``POST /v1/chat/completions`` (stream or not,
  :mod:`~streamcite.local.apis.openai_stream`) answered from the local corpus, with
  footnotes ``[n]`` and Magisterium ``citations``; ``GET /v1/models``.
- :mod:`~streamcite.local.apis.wikit`: Wikit's quoted sources (v2) and citations (v1)
  for the completion id of an earlier answer.
- :mod:`~streamcite.local.apis.google`: ``POST /{v1,v1alpha,v1beta}/projects/{p}/locations/{l}/groundingConfigs/{g}:check``,
  Google's grounding check, answered by the offline checker.
- :mod:`~streamcite.local.documents`: ``GET /documents/{id}``, the cited documents;
  ``GET /healthz`` is here.

Settings are :class:`~streamcite.local.config.BackendConfig`; faults are injected on
request (see :mod:`streamcite.local.faults` and :mod:`streamcite.local.request_guards`).

Usage::

    async with LocalBackend(BackendConfig(token_delay=0.02)) as backend:
        client = openai.AsyncOpenAI(base_url=backend.base_url, api_key="x")
"""

from __future__ import annotations

from types import TracebackType

from aiohttp import web

from streamcite.local.apis.azure import add_azure_routes, azure_error
from streamcite.local.apis.google import (
    GOOGLE_PATH_RE,
    Handler,
    add_google_routes,
    google_error,
    google_error_middleware,
    grounding_check,
)
from streamcite.local.apis.openai import chat_completions, models
from streamcite.local.apis.routes import add_dialect_routes, dialect_refusal
from streamcite.local.apis.wikit import (
    V1_CITATIONS_PATH,
    V2_SOURCES_PATH,
    wikit_v1_citations,
    wikit_v2_sources,
)
from streamcite.local.config import MODEL, BackendConfig
from streamcite.local.corpus import Corpus
from streamcite.local.documents import DOCUMENT_PATH, document
from streamcite.local.replies import detail_error, json_response, openai_error
from streamcite.local.state import STATE, BackendState
from streamcite.web.deadlines import ReadDeadlines

__all__ = [
    "MODEL",
    "WILDCARD_HOSTS",
    "BackendConfig",
    "LocalBackend",
    "create_app",
    "own_public_url",
]

_STATE = STATE  # the name tests and older callers use
DEADLINES = web.AppKey("deadlines", ReadDeadlines)
"""The read deadlines :class:`LocalBackend` runs (``/healthz`` reports ``half_open``)."""


def create_app(
    config: BackendConfig | None = None, corpus: Corpus | None = None
) -> web.Application:
    """The backend as an aiohttp application (``corpus`` overrides ``config.corpus_dir``).

    Raises :class:`ValueError` for a malformed ``allowed_hosts`` or ``allowed_origins``.
    """
    state = BackendState(config or BackendConfig(), corpus)
    cfg = state.config
    # The largest body any endpoint takes; each endpoint then holds its own limit.
    app = web.Application(client_max_size=max(cfg.max_body_bytes, cfg.max_check_body_bytes))
    app[STATE] = state
    app.middlewares.append(_host_guard)  # outermost: nothing runs for a refused Host
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/healthz", _healthz)
    app.router.add_get(DOCUMENT_PATH, document)
    app.router.add_get(V2_SOURCES_PATH, wikit_v2_sources)
    app.router.add_post(V1_CITATIONS_PATH, wikit_v1_citations)
    add_google_routes(app, grounding_check)  # v1, v1alpha, v1beta
    add_dialect_routes(app)  # Responses, Anthropic Messages, Gemini, Cohere v2
    app.middlewares.append(google_error_middleware)
    add_azure_routes(app)  # POST /contentsafety/text:detectGroundedness
    return app


@web.middleware
async def _host_guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    """HTTP 403, in the API's error shape, for a Host or Origin outside the allow-lists."""
    state = request.app[STATE]
    refused = state.host_check.refusal(request)
    if refused is None:
        return await handler(request)
    code, message = refused
    state.log.warning("request_refused", reason=code, path=request.path[:200])
    path = request.path
    own = dialect_refusal(path, 403, message)  # Anthropic, Gemini, Cohere: their shape
    if own is not None:
        return own
    if GOOGLE_PATH_RE.match(path):
        return google_error(403, message)
    if path.startswith("/v1/"):
        return openai_error(403, message, code=code)
    if path.startswith("/contentsafety/"):
        return azure_error(403, "403", message)
    return detail_error(403, message)


async def _healthz(request: web.Request) -> web.Response:
    state = request.app[STATE]
    deadlines = request.app.get(DEADLINES)
    return json_response(
        {
            "status": "ok",
            "half_open": deadlines.half_open if deadlines is not None else 0,
            "model": MODEL,
            "documents": len(state.corpus.documents),
            "chunks": len(state.corpus.chunks),
            "stored_answers": len(state.store),
        }
    )


WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::", "*"})
"""Bind addresses meaning "every interface": no URL a client could use."""


def own_public_url(host: str, port: int) -> str | None:
    """The URL root a backend bound to ``host:port`` hands out, or None for a wildcard
    bind (``0.0.0.0``, ``::``): then each request's own socket address roots its URLs
    (``http://0.0.0.0:8765/documents/…`` reaches nothing)."""
    if host.strip() in WILDCARD_HOSTS:
        return None
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


class LocalBackend:
    """The backend running on a loopback port, for tests, demos and ``streamcite ask``.

    ``async with LocalBackend(config) as backend:`` starts it (``port=0`` picks a free
    port) and stops it, closing open streams, on exit.
    """

    def __init__(
        self,
        config: BackendConfig | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        corpus: Corpus | None = None,
        shutdown_timeout: float = 2.0,
    ):
        self.config = config or BackendConfig()
        self.host = host
        self._requested_port = port
        self._corpus = corpus
        self._shutdown_timeout = shutdown_timeout
        self._runner: web.AppRunner | None = None
        self._app: web.Application | None = None
        self.port: int = 0
        self.deadlines: ReadDeadlines | None = None
        """Header/body read deadlines while started (``config.header_timeout``, ...)."""

    @property
    def app(self) -> web.Application:
        if self._app is None:
            raise RuntimeError("the backend is not started")
        return self._app

    @property
    def corpus(self) -> Corpus:
        return self.app[STATE].corpus

    @property
    def root_url(self) -> str:
        """``http://HOST:PORT``: where documents and the Wikit and Google endpoints live."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        """``root_url + "/v1"``: what OpenAI clients take as their base URL."""
        return self.root_url + "/v1"

    async def start(self) -> None:
        """Build the app (loading the corpus) and listen."""
        if self._runner is not None:
            return
        self._app = create_app(self.config, self._corpus)
        cfg = self.config
        deadlines = ReadDeadlines(header_timeout=cfg.header_timeout, body_timeout=cfg.body_timeout)
        self._app[DEADLINES] = self.deadlines = deadlines
        runner = web.AppRunner(
            self._app,
            access_log=None,
            handler_cancellation=True,
            shutdown_timeout=self._shutdown_timeout,
            **deadlines.runner_kwargs(),
        )
        await runner.setup()
        deadlines.start(runner)
        try:
            # A deep backlog: benchmarks open hundreds of streams at once, and a full
            # accept queue costs a one-second SYN retransmit per dropped connection.
            site = web.TCPSite(runner, self.host, self._requested_port, backlog=4096)
            await site.start()
        except BaseException:
            deadlines.stop()
            await runner.cleanup()
            raise
        self._runner = runner
        addresses = runner.addresses
        self.port = int(addresses[0][1]) if addresses else self._requested_port
        if self.config.public_url is None:
            self._app[STATE].public_url = own_public_url(self.host, self.port)
        self._app[STATE].log.debug("local backend started", url=self.root_url)

    async def stop(self) -> None:
        """Stop listening and close open connections (stalled streams end at once)."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        self.app[STATE].closing.set()
        if self.deadlines is not None:
            self.deadlines.stop()
        await runner.cleanup()

    async def __aenter__(self) -> LocalBackend:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
