"""The embedded local backend: an aiohttp app that speaks the three APIs offline.

- ``POST /v1/chat/completions``: OpenAI-compatible chat completions (stream or not)
  answered from the local corpus, with footnotes ``[n]`` and Magisterium ``citations``.
- ``GET /v1/models``, ``GET /healthz``, ``GET /documents/{id}`` (the cited documents).
- ``GET /semantics/apps/{app}/query-execution-sources/{query_id}/get-quoted-sources``
  (Wikit v2) and ``POST /semantics/apps/{app}/query-executions/{id}/citations`` (v1),
  for the completion id of an earlier answer.
- ``POST /{v1,v1alpha,v1beta}/projects/{p}/locations/{l}/groundingConfigs/{g}:check``: Google's grounding
  check, answered by the offline checker.

Faults are injected on request (see :mod:`streamcite.local.faults`). The streaming
handler is kept lean — chunks are pre-serialised byte templates written straight to
the socket — so benchmarks with many concurrent streams measure the client.

Usage::

    async with LocalBackend(BackendConfig(token_delay=0.02)) as backend:
        client = openai.AsyncOpenAI(base_url=backend.base_url, api_key="x")
"""

from __future__ import annotations

import asyncio
import html
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson
from aiohttp import web

from streamcite.local.answerer import (
    Answer,
    Answerer,
    question_from_messages,
    token_pieces,
    with_wrong_number,
)
from streamcite.local.corpus import Corpus, load_corpus, stable_id
from streamcite.local.faults import (
    FAULT_HEADER,
    FAULT_QUERY,
    ClientFaultsOff,
    FaultSpec,
    FaultSpecError,
    request_faults,
)
from streamcite.local.google_api import (
    GOOGLE_PATH_RE,
    Handler,
    add_google_routes,
    google_error,
    google_error_middleware,
)
from streamcite.local.hostcheck import HostCheck
from streamcite.local.profiles import profile_events
from streamcite.local.store import AnswerStore, StoredAnswer, answer_nbytes
from streamcite.logs import get_logger

__all__ = ["MODEL", "BackendConfig", "LocalBackend", "create_app"]

MODEL = "streamcite-local"
DEFAULT_ORGANIZATION_ID = stable_id("organization", "streamcite-local")
"""Organisation id reported in Wikit documents when none is configured."""
DEFAULT_STALL = 300.0
"""How long a ``stall_after`` stall lasts unless the spec says ``stall_for``."""

_JSON = "application/json"
_SSE_HEADERS = {
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
}
_DONE = b"data: [DONE]\n\n"
_BOM = b"\xef\xbb\xbf"
_OPENAI_ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "forbidden"),
    404: ("invalid_request_error", "not_found"),
    408: ("server_error", "timeout"),
    409: ("invalid_request_error", "conflict"),
    422: ("invalid_request_error", "unprocessable"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", "internal_error"),
    502: ("server_error", "bad_gateway"),
    503: ("server_error", "upstream_overloaded"),
    504: ("server_error", "timeout"),
}
_GOOGLE_STATUS: dict[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


@dataclass(slots=True)
class BackendConfig:
    """Settings of the local backend.

    ``faults`` is the server-wide default fault spec (same syntax as the
    ``X-Streamcite-Fault`` header). ``wikit_org_id`` / ``wikit_api_key``, when set,
    are required on the Wikit endpoints (401 otherwise).
    """

    corpus_dir: Path | None = None
    first_token_delay: float = 0.0
    token_delay: float = 0.0
    wikit_org_id: str | None = None
    wikit_api_key: str | None = None
    store_size: int = 1000
    store_ttl: float = 600.0
    faults: str | None = None
    corpus_strict: bool = False
    """Fail on a file that is not UTF-8 text instead of skipping it."""
    max_body_bytes: int = 1024 * 1024
    """Largest request body (HTTP 413 beyond): a 7 MiB question froze the loop for 2.3 s."""
    max_question_chars: int = 16 * 1024
    """Longest question answered (HTTP 413 beyond); retrieval cost grows with it."""
    answer_cache_bytes: int = 8 * 1024 * 1024
    """Memory the cache of recent answers may hold (measured per answer, not counted)."""
    allow_client_faults: bool = True
    """Take fault injection from requests (``X-Streamcite-Fault``, ``?fault=``). On for
    in-process use (tests, ``ask --demo``, ``bench``); ``serve-local`` turns it off
    unless started with ``--allow-client-faults``."""
    public_url: str | None = None
    """Root of citation and document URLs; default: the address the client connected
    to (``LocalBackend`` sets its own ``root_url``). Never taken from ``Host``."""
    store_bytes: int = 16 * 1024 * 1024
    """Memory the answers kept for the Wikit endpoints may hold (measured, like the
    cache's): 1000 answers to 16 Ki-character questions would otherwise hold 64 MiB."""
    allowed_hosts: tuple[str, ...] = ()
    """``Host`` allow-list (``name[:port]``, ``[v6]:port``, ``.domain``, ``*``): other
    hosts get HTTP 403 (DNS rebinding). Empty: the address the connection arrived on
    and ``localhost``, ``127.0.0.1``, ``::1``, with its port."""
    allowed_origins: tuple[str, ...] = ()
    """Browser ``Origin`` allow-list (``*``: any); empty: the http(s) origins of the
    allowed hosts. Requests without ``Origin`` (not a browser) are not affected."""
    max_check_body_bytes: int = 8 * 1024 * 1024
    """Largest ``:check`` request body (HTTP 413 beyond): Google's own limits (200 facts
    of 10,000 characters) make a legitimate request of 2 to 6 MB of JSON."""

    def __repr__(self) -> str:
        # The API key is a secret: never in a repr or a log line.
        key = "None" if self.wikit_api_key is None else "'***'"
        return (
            f"BackendConfig(corpus_dir={self.corpus_dir!r}, first_token_delay={self.first_token_delay!r}, "
            f"token_delay={self.token_delay!r}, wikit_org_id={self.wikit_org_id!r}, "
            f"wikit_api_key={key}, store_size={self.store_size!r}, store_ttl={self.store_ttl!r}, "
            f"faults={self.faults!r}, allow_client_faults={self.allow_client_faults!r}, "
            f"allowed_hosts={self.allowed_hosts!r}, allowed_origins={self.allowed_origins!r}, "
            f"public_url={self.public_url!r})"
        )


class _Closing(Exception):
    """The connection was closed on purpose (``drop_after``); nothing more to send."""


class _State:
    """Everything the handlers share: corpus, answerer, store, settings."""

    def __init__(self, config: BackendConfig, corpus: Corpus | None):
        self.config = config
        self.corpus = (
            corpus
            if corpus is not None
            else load_corpus(config.corpus_dir, strict=config.corpus_strict)
        )
        self.answerer = Answerer(self.corpus)
        self.store = AnswerStore(config.store_size, config.store_ttl, max_bytes=config.store_bytes)
        self.server_faults = FaultSpec.parse(config.faults)
        self.closing = asyncio.Event()
        self.organization_id = config.wikit_org_id or DEFAULT_ORGANIZATION_ID
        self._answers: OrderedDict[str, tuple[Answer, int]] = OrderedDict()
        self._answers_bytes = 0
        self.public_url = config.public_url
        self.host_check = HostCheck.from_config(config.allowed_hosts, config.allowed_origins)
        self.log = get_logger("streamcite.local")

    def answer(self, question: str) -> Answer:
        """Answers are pure functions of the question: keep the recent ones."""
        cached = self._answers.get(question)
        if cached is not None:
            self._answers.move_to_end(question)
            return cached[0]
        answer = self.answerer.answer(question)
        size = answer_nbytes(answer)
        limit = self.config.answer_cache_bytes
        if size <= limit // 4:  # a huge answer is served, not kept
            self._answers[question] = (answer, size)
            self._answers_bytes += size
            while self._answers_bytes > limit or len(self._answers) > _CACHE_ANSWERS:
                _, (_, dropped) = self._answers.popitem(last=False)
                self._answers_bytes -= dropped
        return answer

    @property
    def cached_answer_bytes(self) -> int:
        return self._answers_bytes


_CACHE_ANSWERS = 256


_STATE = web.AppKey("streamcite_local_state", _State)


def create_app(
    config: BackendConfig | None = None, corpus: Corpus | None = None
) -> web.Application:
    """The backend as an aiohttp application (``corpus`` overrides ``config.corpus_dir``).

    Raises :class:`ValueError` for a malformed ``allowed_hosts`` or ``allowed_origins``.
    """
    state = _State(config or BackendConfig(), corpus)
    cfg = state.config
    # The largest body any endpoint takes; each endpoint then holds its own limit.
    app = web.Application(client_max_size=max(cfg.max_body_bytes, cfg.max_check_body_bytes))
    app[_STATE] = state
    app.middlewares.append(_host_guard)  # outermost: nothing runs for a refused Host
    app.router.add_post("/v1/chat/completions", _chat_completions)
    app.router.add_get("/v1/models", _models)
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/documents/{document_id}", _document)
    app.router.add_get(
        "/semantics/apps/{app_id}/query-execution-sources/{query_id}/get-quoted-sources",
        _wikit_v2_sources,
    )
    app.router.add_post(
        "/semantics/apps/{app_id}/query-executions/{query_id}/citations", _wikit_v1_citations
    )
    add_google_routes(app, _grounding_check)  # v1, v1alpha, v1beta
    app.middlewares.append(google_error_middleware)
    return app


# --------------------------------------------------------------------------- helpers


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=orjson.dumps(data), status=status, content_type=_JSON, headers=headers)


def _root_url(request: web.Request) -> str:
    """Where citation and document URLs point: the configured public URL, else the
    address the client reached (the socket's), never the client-supplied ``Host``."""
    public = request.app[_STATE].public_url
    if public:
        return public.rstrip("/")
    sock = request.transport.get_extra_info("sockname") if request.transport else None
    if isinstance(sock, tuple) and len(sock) >= 2:
        host = str(sock[0])
        return f"http://[{host}]:{sock[1]}" if ":" in host else f"http://{host}:{sock[1]}"
    return "http://127.0.0.1"


def _retry_headers(spec: FaultSpec) -> dict[str, str] | None:
    if spec.retry_after is None:
        return None
    return {"Retry-After": f"{spec.retry_after:g}"}


def _openai_error(
    status: int,
    message: str,
    *,
    param: str | None = None,
    spec: FaultSpec | None = None,
    code: str | None = None,
) -> web.Response:
    kind, default_code = _OPENAI_ERRORS.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", "error")
    )
    code = code or default_code
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return _json(body, status, _retry_headers(spec) if spec else None)


def _detail(status: int, message: str, spec: FaultSpec | None = None) -> web.Response:
    return _json({"detail": message}, status, _retry_headers(spec) if spec else None)


def _google_error(status: int, message: str, spec: FaultSpec | None = None) -> web.Response:
    body = {
        "error": {
            "code": status,
            "message": message,
            "status": _GOOGLE_STATUS.get(status, "UNKNOWN"),
        }
    }
    return _json(body, status, _retry_headers(spec) if spec else None)


@web.middleware
async def _host_guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    """HTTP 403, in the API's error shape, for a Host or Origin outside the allow-lists."""
    state = request.app[_STATE]
    refused = state.host_check.refusal(request)
    if refused is None:
        return await handler(request)
    code, message = refused
    state.log.warning("request_refused", reason=code, path=request.path[:200])
    path = request.path
    if GOOGLE_PATH_RE.match(path):
        return _google_error(403, message)
    if path.startswith("/v1/"):
        return _openai_error(403, message, code=code)
    return _detail(403, message)


def _faults(request: web.Request) -> FaultSpec:
    state = request.app[_STATE]
    if not state.config.allow_client_faults and (
        FAULT_HEADER in request.headers or FAULT_QUERY in request.query
    ):
        raise ClientFaultsOff(
            "this server takes no fault injection from clients "
            "(start it with --allow-client-faults)"
        )
    return request_faults(state.server_faults, request.headers, request.query)


def _fault_status(exc: FaultSpecError) -> int:
    return 403 if isinstance(exc, ClientFaultsOff) else 400


async def _read_body(request: web.Request, limit: int) -> bytes | None:
    """The request body, or None as soon as it is known to exceed ``limit`` bytes (the
    announced ``Content-Length``, else while reading: never more than ``limit`` held)."""
    length = request.content_length
    if length is not None and length > limit:
        return None
    buf = bytearray()
    async for chunk in request.content.iter_chunked(64 * 1024):
        buf += chunk
        if len(buf) > limit:
            return None
    return bytes(buf)


async def _sleep(seconds: float | None) -> None:
    if seconds:
        await asyncio.sleep(seconds)


def _usage(request_body: dict[str, Any], completion_tokens: int) -> dict[str, int]:
    prompt = 0
    for msg in request_body.get("messages") or ():
        if isinstance(msg, dict):
            content = msg.get("content")
            if isinstance(content, str):
                prompt += len(content.split()) + 4
            elif isinstance(content, list):
                prompt += 4 + sum(
                    len(str(p.get("text", "")).split()) for p in content if isinstance(p, dict)
                )
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt + completion_tokens,
    }


# --------------------------------------------------------------------------- chat


async def _chat_completions(request: web.Request) -> web.StreamResponse:
    state = request.app[_STATE]
    try:
        spec = _faults(request)
    except FaultSpecError as exc:
        return _openai_error(_fault_status(exc), f"fault spec: {exc}", param="X-Streamcite-Fault")
    if spec.status is not None:
        return _openai_error(spec.status, f"injected fault: HTTP {spec.status}", spec=spec)
    limit = state.config.max_body_bytes
    raw = await _read_body(request, limit)
    if raw is None:
        return _openai_error(413, f"the request body is larger than {limit} bytes")
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _openai_error(400, "the request body is not valid JSON")
    if not isinstance(body, dict):
        return _openai_error(400, "the request body must be a JSON object")
    messages = body.get("messages")
    if (
        not isinstance(messages, list)
        or not messages
        or not all(isinstance(m, dict) for m in messages)
    ):
        return _openai_error(
            400, "'messages' must be a non-empty array of message objects", param="messages"
        )
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        return _openai_error(400, "'stream' must be a boolean", param="stream")
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        return _openai_error(400, "'stream_options' must be an object", param="stream_options")
    include_usage = bool(options and options.get("include_usage"))
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
    ):
        return _openai_error(400, "'max_tokens' must be a positive integer", param="max_tokens")

    question = question_from_messages(messages)
    if len(question) > state.config.max_question_chars:
        return _openai_error(
            413,
            f"the question is longer than {state.config.max_question_chars} characters",
            param="messages",
        )
    answer = state.answer(question)
    if spec.hallucinate:
        answer = with_wrong_number(answer)
    completion_id = "chatcmpl-" + secrets.token_hex(12)
    created = int(time.time())
    state.store.put(StoredAnswer(completion_id, created, answer, spec.sources_404_until))
    pieces = token_pieces(answer.text)
    finish_reason = "stop"
    if max_tokens is not None and len(pieces) > max_tokens:
        pieces, finish_reason = pieces[:max_tokens], "length"
    citations = answer.citations(_root_url(request))
    log = state.log.bind(completion_id=completion_id, stream=stream)
    log.debug(
        "chat completion", found=answer.found, pieces=len(pieces), faults=spec.to_spec() or None
    )
    first_delay = (
        spec.first_token_delay
        if spec.first_token_delay is not None
        else state.config.first_token_delay
    )
    token_delay = spec.token_delay if spec.token_delay is not None else state.config.token_delay

    if not stream:
        await _sleep(first_delay)
        payload = {
            "id": completion_id,
            "object": "chat.completion",
            "created": created,
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "".join(pieces), "refusal": None},
                    "logprobs": None,
                    "finish_reason": finish_reason,
                }
            ],
            "usage": _usage(body, len(pieces)),
            "citations": citations,
        }
        return _json(payload)

    return await _stream(
        request,
        _StreamPlan(
            completion_id=completion_id,
            created=created,
            pieces=pieces,
            finish_reason=finish_reason,
            citations=citations,
            usage=_usage(body, len(pieces)) if include_usage else None,
            spec=spec,
            first_delay=first_delay or 0.0,
            token_delay=token_delay or 0.0,
        ),
        log,
    )


@dataclass(slots=True)
class _StreamPlan:
    completion_id: str
    created: int
    pieces: list[str]
    finish_reason: str
    citations: list[dict[str, Any]]
    usage: dict[str, int] | None
    spec: FaultSpec
    first_delay: float
    token_delay: float


def _stream_events(plan: _StreamPlan) -> tuple[bytes, list[bytes], list[bytes]]:
    """The role chunk, the content chunks and the closing events, pre-serialised."""
    usage_null = b',"usage":null' if plan.usage is not None else b""
    head = b'{"id":"%s","object":"chat.completion.chunk","created":%d,"model":"%s",' % (
        plan.completion_id.encode(),
        plan.created,
        MODEL.encode(),
    )
    role = (
        b"data: "
        + head
        + b'"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,'
        + b'"finish_reason":null}]'
        + usage_null
        + b"}\n\n"
    )
    content_head = b"data: " + head + b'"choices":[{"index":0,"delta":{"content":'
    content_tail = b'},"logprobs":null,"finish_reason":null}]' + usage_null + b"}\n\n"
    contents = [content_head + orjson.dumps(p) + content_tail for p in plan.pieces]
    finish = (
        b"data: "
        + head
        + b'"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":'
        + orjson.dumps(plan.finish_reason)
        + b"}]"
        + usage_null
        + b',"citations":'
        + orjson.dumps(plan.citations)
        + b"}\n\n"
    )
    closing = [finish]
    if plan.usage is not None:
        closing.append(
            b"data: " + head + b'"choices":[],"usage":' + orjson.dumps(plan.usage) + b"}\n\n"
        )
    return role, contents, closing


def _malformed(event: bytes) -> bytes:
    """The first half of an event's JSON: a chunk that does not parse."""
    payload = event[len(b"data: ") : -2]
    return b"data: " + payload[: max(1, len(payload) // 2)] + b"\n\n"


_ERROR_EVENT = (
    b"data: "
    + orjson.dumps(
        {
            "error": {
                "message": "The upstream model is overloaded (injected fault).",
                "type": "server_error",
                "code": "upstream_overloaded",
            }
        }
    )
    + b"\n\n"
)


async def _stream(request: web.Request, plan: _StreamPlan, log: Any) -> web.StreamResponse:
    state = request.app[_STATE]
    spec = plan.spec
    role, contents, closing = profile_events(
        spec,
        completion_id=plan.completion_id,
        created=plan.created,
        model=MODEL,
        pieces=plan.pieces,
        finish_reason=plan.finish_reason,
        citations=plan.citations,
        usage=plan.usage,
    ) or _stream_events(plan)
    count = len(contents)
    # Each fault position points at a content chunk; past the end means the finish chunk.
    if spec.malformed_at is not None:
        at = min(spec.malformed_at, count + 1) - 1
        if at < count:
            contents[at] = _malformed(contents[at])
        else:
            closing[0] = _malformed(closing[0])
    cut: int | None = None  # content chunks sent before the stream stops
    action = "done"
    if spec.error_at is not None:
        cut, action = min(spec.error_at, count + 1) - 1, "error"
    for key, name in ((spec.drop_after, "drop"), (spec.stall_after, "stall")):
        if key is not None and (cut is None or min(key, count) < cut):
            cut, action = min(key, count), name
    if cut is not None:
        contents = contents[:cut]
    if action == "done" and not spec.no_done:
        closing.append(_DONE)

    response = web.StreamResponse(headers=_SSE_HEADERS)
    await response.prepare(request)
    sent = 0
    try:
        await response.write((_BOM if spec.bom else b"") + role)
        if plan.first_delay:
            await asyncio.sleep(plan.first_delay)
        if plan.token_delay and len(contents) > 1:
            # Each gap is at least token_delay, measured from the previous write's start,
            # so the write itself does not slow the pace (clients measure inter-token
            # latency against it).
            loop = asyncio.get_running_loop()
            last = loop.time()
            for i, event in enumerate(contents):
                if i:
                    await asyncio.sleep(max(0.0, last + plan.token_delay - loop.time()))
                    last = loop.time()
                await response.write(event)
                sent += 1
        elif contents:
            # No pacing: one write for all content chunks (still one SSE event each).
            await response.write(b"".join(contents))
            sent = len(contents)
        if action == "done":
            await response.write(b"".join(closing))
        elif action == "error":
            await response.write(_ERROR_EVENT)
        elif action == "drop":
            _drop(request)
            log.debug("stream dropped", sent=sent)
            raise _Closing
        elif action == "stall":
            await _stall(
                request,
                state.closing,
                spec.stall_for if spec.stall_for is not None else DEFAULT_STALL,
            )
            _drop(request)
            raise _Closing
        await response.write_eof()
    except (ConnectionError, _Closing):
        # The client went away, or we closed the connection on purpose: nothing to finish.
        log.debug("stream ended early", sent=sent, action=action)
    return response


def _drop(request: web.Request) -> None:
    """Close the TCP connection now: no chunked-encoding terminator, no finish, no [DONE]."""
    transport = request.transport
    if transport is not None:
        transport.close()


async def _stall(request: web.Request, closing: asyncio.Event, seconds: float) -> None:
    """Send nothing, keep the connection, until ``seconds`` pass, the client leaves or we stop."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not closing.is_set():
        transport = request.transport
        if transport is None or transport.is_closing():
            return
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            return
        try:
            await asyncio.wait_for(closing.wait(), timeout=min(0.25, remaining))
        except TimeoutError:
            continue


# --------------------------------------------------------------------------- small endpoints


async def _models(request: web.Request) -> web.Response:
    return _json(
        {
            "object": "list",
            "data": [
                {"id": MODEL, "object": "model", "created": 1_700_000_000, "owned_by": "streamcite"}
            ],
        }
    )


async def _healthz(request: web.Request) -> web.Response:
    state = request.app[_STATE]
    return _json(
        {
            "status": "ok",
            "model": MODEL,
            "documents": len(state.corpus.documents),
            "chunks": len(state.corpus.chunks),
            "stored_answers": len(state.store),
        }
    )


async def _document(request: web.Request) -> web.Response:
    state = request.app[_STATE]
    doc = state.corpus.document(request.match_info["document_id"])
    if doc is None:
        return _detail(404, "document not found")
    wanted = request.query.get("format", "")
    accept = request.headers.get("Accept", "")
    if wanted == "html" or (not wanted and "text/html" in accept):
        return web.Response(
            text=_document_html(state, doc.id), content_type="text/html", charset="utf-8"
        )
    return web.Response(text=doc.source_text, content_type=doc.media_type, charset="utf-8")


_DOC_CSS = (  # readable, and the cited chunk (the URL's #chunk-N) stands out
    "body{font:16px/1.6 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;"
    "color:#1f2328}h1{font-size:1.6rem}h2{font-size:1.15rem;margin-top:1.6rem}"
    "section{padding:.1rem .8rem;border-inline-start:3px solid transparent}"
    "section:target{background:#fff8c5;border-color:#d4a72c}"
)


def _document_html(state: _State, document_id: str) -> str:
    """A plain HTML page: title, metadata and the chunks, each with an ``#chunk-N`` anchor."""
    doc = state.corpus.document(document_id)
    assert doc is not None
    meta = " · ".join(html.escape(x) for x in (doc.author, doc.year, doc.reference) if x)
    rtl = ' dir="rtl"' if doc.language == "he" else ""
    parts = [
        f'<!doctype html><html lang="{html.escape(doc.language or "")}"{rtl}><head><meta charset="utf-8">',
        f"<title>{html.escape(doc.title)}</title><style>{_DOC_CSS}</style></head><body>",
        f"<h1>{html.escape(doc.title)}</h1><p><small>{meta}</small></p>",
    ]
    heading: str | None = None
    for chunk in (c for c in state.corpus.chunks if c.document_id == document_id):
        if chunk.heading and chunk.heading != heading and chunk.heading != doc.title:
            parts.append(f"<h2>{html.escape(chunk.heading)}</h2>")
        heading = chunk.heading
        paras = "".join(f"<p>{html.escape(p)}</p>" for p in chunk.text.split("\n\n"))
        parts.append(f'<section id="chunk-{chunk.position}">{paras}</section>')
    parts.append("</body></html>")
    return "\n".join(parts)


# --------------------------------------------------------------------------- Wikit


def _wikit_auth(request: web.Request, *, bearer: bool) -> str | None:
    """Why the request is refused (401), or None. Only configured credentials are checked."""
    config = request.app[_STATE].config
    if config.wikit_org_id is not None:
        org = request.headers.get("X-Wikit-Organization-Id")
        if org is None:
            return "missing X-Wikit-Organization-Id header"
        if not secrets.compare_digest(org.encode(), config.wikit_org_id.encode()):
            return "invalid organization id"
    if config.wikit_api_key is not None:
        if bearer:
            auth = request.headers.get("Authorization", "")
            scheme, _, token = auth.partition(" ")
            if scheme.lower() != "bearer" or not token:
                return "missing bearer token"
        else:
            token = request.headers.get("Wikit-Semantics-API-Key", "")
            if not token:
                return "missing Wikit-Semantics-API-Key header"
        if not secrets.compare_digest(token.strip().encode(), config.wikit_api_key.encode()):
            return "invalid API key"
    return None


async def _wikit_record(request: web.Request, *, bearer: bool) -> StoredAnswer | web.Response:
    """The stored answer for the path's query id, or the error response to send."""
    state = request.app[_STATE]
    try:
        spec = _faults(request)
    except FaultSpecError as exc:
        return _detail(_fault_status(exc), f"fault spec: {exc}")
    refusal = _wikit_auth(request, bearer=bearer)
    if refusal is not None:
        return _detail(401, refusal)
    if spec.status is not None:
        return _detail(spec.status, f"injected fault: HTTP {spec.status}", spec)
    await _sleep(spec.sources_delay)
    query_id = request.match_info["query_id"]
    record = state.store.get(query_id)
    if record is None:
        return _detail(404, f"query execution {query_id} not found")
    record.sources_calls += 1
    header_or_query = request_faults(FaultSpec(), request.headers, request.query).sources_404_until
    until = header_or_query
    if until is None:
        until = record.sources_404_until
    if until is None:
        until = state.server_faults.sources_404_until
    if until is not None and record.sources_calls <= until:
        return _detail(404, f"query execution {query_id} not found (sources not ready yet)")
    return record


def _squash(score: float) -> float:
    """A BM25 score mapped into (0, 1), as Wikit reports relevance."""
    return round(score / (score + 1.0), 8)


async def _wikit_v2_sources(request: web.Request) -> web.Response:
    found = await _wikit_record(request, bearer=False)
    if isinstance(found, web.Response):
        return found
    state = request.app[_STATE]
    root = _root_url(request)
    out = []
    for p in found.answer.passages:
        doc, chunk = p.document, p.chunk
        out.append(
            {
                "quoted_as": str(p.number),
                "document": {
                    "id": doc.id,
                    "name": doc.name,
                    "title": doc.title,
                    "url": f"{root}/documents/{doc.id}#chunk-{chunk.position}",
                    "public_link": True,
                    "storage_name": f"corpus/{doc.name}",
                    "data_source_id": doc.data_source_id,
                    "organization_id": state.organization_id,
                },
                "chunk": {
                    "id": chunk.id,
                    "data": chunk.data,
                    "document_id": doc.id,
                    "data_source_id": doc.data_source_id,
                    "llm_app_id": None,
                    "user_id": None,
                    "flags": None,
                    "position": chunk.position,
                    # Wikit counts pages from 0.
                    "page_start": None if chunk.page_start is None else chunk.page_start - 1,
                    "page_end": None if chunk.page_end is None else chunk.page_end - 1,
                },
                "data_source": {"id": doc.data_source_id, "name": doc.data_source},
                "score": _squash(p.score),
                "retriever_type": "BM25",
            }
        )
    return _json(out)


async def _wikit_v1_citations(request: web.Request) -> web.Response:
    found = await _wikit_record(request, bearer=True)
    if isinstance(found, web.Response):
        return found
    state = request.app[_STATE]
    root = _root_url(request)
    answer = found.answer
    passages = {p.number: p for p in answer.passages}
    created_at = datetime.fromtimestamp(found.created, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    out = []
    for i, sentence in enumerate(answer.sentences):
        p = passages[sentence.number]
        chunk, doc = p.chunk, p.document
        offset = chunk.data_offset
        before = sentence.chunk_start > 0
        after = sentence.chunk_end < len(chunk.text)
        out.append(
            {
                "_id": stable_id("citation", found.id, str(i)),
                "created_at": created_at,
                "query_execution_id": found.id,
                "total_count": len(answer.sentences),
                "reply_sentence": sentence.text,
                "source_sentence": chunk.text[sentence.chunk_start : sentence.chunk_end],
                "chunk_data_snapshot": (" [...] " if before else " ")
                + " {{source_sentence}} "
                + (" [...] " if after else " "),
                "start_char_idx": offset + sentence.chunk_start,
                "end_char_idx": offset + sentence.chunk_end,
                "chunk_id": chunk.id,
                "chunk_page_start": None if chunk.page_start is None else chunk.page_start - 1,
                "chunk_page_end": None if chunk.page_end is None else chunk.page_end - 1,
                "chunk_position": chunk.position,
                "document_id": doc.id,
                "document_name": doc.name,
                "document_title": doc.title,
                "document_url": f"{root}/documents/{doc.id}",
                "organization_id": state.organization_id,
                "threshold": 50,
            }
        )
    return _json(out)


# --------------------------------------------------------------------------- Google grounding


async def _grounding_check(request: web.Request) -> web.Response:
    try:
        spec = _faults(request)
    except FaultSpecError as exc:
        return _google_error(_fault_status(exc), f"fault spec: {exc}")
    if spec.status is not None:
        return _google_error(spec.status, f"injected fault: HTTP {spec.status}", spec)
    raw = await _read_body(request, request.app[_STATE].config.max_check_body_bytes)
    if raw is None:
        return google_error(413, "Request payload size exceeds the limit.")
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _google_error(400, "Invalid JSON payload received.")
    if not isinstance(body, dict):
        return _google_error(400, "Invalid JSON payload received: expected an object.")
    try:
        # Imported here: the checker is a separate module the server must not need to start.
        from streamcite.local import checker
    except ImportError:
        return _google_error(501, "the offline grounding checker is not installed")
    try:
        # The async variant moves large checks off the event loop, where streams are served.
        acheck = getattr(checker, "acheck_google_request", None)
        if acheck is not None:
            result = await acheck(body)
        else:
            result = checker.check_google_request(body)
    except checker.InvalidGroundingRequest as exc:
        return _google_error(400, str(exc))
    return _json(result)


# --------------------------------------------------------------------------- runner


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

    @property
    def app(self) -> web.Application:
        if self._app is None:
            raise RuntimeError("the backend is not started")
        return self._app

    @property
    def corpus(self) -> Corpus:
        return self.app[_STATE].corpus

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
        runner = web.AppRunner(
            self._app,
            access_log=None,
            handler_cancellation=True,
            shutdown_timeout=self._shutdown_timeout,
        )
        await runner.setup()
        try:
            # A deep backlog: benchmarks open hundreds of streams at once, and a full
            # accept queue costs a one-second SYN retransmit per dropped connection.
            site = web.TCPSite(runner, self.host, self._requested_port, backlog=4096)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        addresses = runner.addresses
        self.port = int(addresses[0][1]) if addresses else self._requested_port
        if self.config.public_url is None:
            self._app[_STATE].public_url = own_public_url(self.host, self.port)
        self._app[_STATE].log.debug("local backend started", url=self.root_url)

    async def stop(self) -> None:
        """Stop listening and close open connections (stalled streams end at once)."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        self.app[_STATE].closing.set()
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
