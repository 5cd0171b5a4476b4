"""Opening the upstream request: send, status handling, retries before any byte.

A request that fails before the answer's first byte is reported as one
``ErrorEvent`` (carried by :class:`OpenFailed`): a connect failure, a timeout, a
redirect (never followed: it would carry the key to another host), or an HTTP
error status with the provider's own message. Retryable ones (429, 5xx, connect
errors) are retried with jittered backoff, honouring Retry-After, within the
stream's total budget; nothing is retried once a byte of the answer was read.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import orjson
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception

from streamcite.core.events import ErrorEvent
from streamcite.core.retry_after import parse_retry_after, parse_retry_after_ms
from streamcite.pipeline.timeouts import Budget
from streamcite.transports.base import (
    Transport,
    TransportError,
    UpstreamResponse,
    is_redirect,
    redirect_message,
)

__all__ = ["OpenFailed", "connect_message", "http_error", "make_transport", "open_upstream"]

_MAX_RETRY_WAIT = 30.0
_MAX_ERROR_BODY = 64 * 1024

_STATUS_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    408: "request_timeout",
    409: "conflict",
    413: "payload_too_large",
    422: "unprocessable",
    429: "rate_limited",
}


_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
_SERVE_LOCAL_PORT = 8765


def connect_message(message: str, url: str) -> str:
    """A connect failure's message naming the host and port tried and, on this machine,
    what to start: ``cannot connect to 127.0.0.1:8765: [Errno 111] …; is serve-local
    running? start it with: streamcite serve-local``.

    >>> connect_message("cannot connect: refused", "http://127.0.0.1:8765/v1/chat/completions")
    'cannot connect to 127.0.0.1:8765: refused; is serve-local running? start it with: streamcite serve-local'
    >>> connect_message("cannot connect: refused", "https://api.example/v1/chat")
    'cannot connect to api.example:443: refused'
    """
    parts = urlsplit(url)
    host = parts.hostname or "?"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        port = 0
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    detail = message.removeprefix("cannot connect: ")
    out = f"cannot connect to {where}: {detail}"
    if host in _LOOPBACK:
        if port == _SERVE_LOCAL_PORT:
            out += "; is serve-local running? start it with: streamcite serve-local"
        else:
            out += (
                f"; is the server on port {port} running? (the embedded backend: "
                f"streamcite serve-local --port {port})"
            )
    return out


class OpenFailed(Exception):
    """The request failed before any token; carries the error event to report."""

    def __init__(self, event: ErrorEvent) -> None:
        super().__init__(event.message)
        self.event = event


def make_transport(kind: str | Transport, session: Any) -> Transport:
    """``"aiohttp"`` / ``"httpx"`` → a transport (imported on use), or the one given."""
    if not isinstance(kind, str):
        return kind
    if kind == "aiohttp":
        from streamcite.transports.aiohttp import AiohttpTransport

        return AiohttpTransport(session)
    if kind == "httpx":
        from streamcite.transports.httpx import HttpxTransport

        return HttpxTransport(session)
    raise ValueError(f"unknown transport {kind!r}: 'httpx' or 'aiohttp'")


def http_error(status: int, body: bytes, headers: Mapping[str, str]) -> ErrorEvent:
    """An HTTP error response → ErrorEvent with the provider's own message and code.

    Reads each API's error body: OpenAI (Chat Completions, Responses) and Anthropic
    ``{"error": {"message", "type"|"code"}}``, Gemini ``{"error": {"code", "message",
    "status", "details"}}`` (also inside a one-element array, and its ``RetryInfo``
    ``retryDelay`` when there is no ``Retry-After``), Cohere ``{"message"}``. Retryable:
    408, 409, 429 and 5xx (Anthropic's 529 ``overloaded_error``, Gemini's 429
    ``RESOURCE_EXHAUSTED`` and 503 ``UNAVAILABLE``), except OpenAI's 429
    ``insufficient_quota`` (billing: waiting does not help).
    """
    message = ""
    provider_code: str | None = None
    retry_delay: float | None = None
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        message = body[:500].decode("utf-8", "replace").strip()
    else:
        if isinstance(obj, list) and obj:
            obj = obj[0]  # Gemini's JSON-array answers wrap the error too
        err = obj.get("error", obj) if isinstance(obj, dict) else obj
        if isinstance(err, dict):
            message = _message_of(err)
            provider_code = _provider_code(err, status)
            retry_delay = _google_retry_delay(err.get("details"))
        elif isinstance(err, str):
            message = err[:_MAX_MESSAGE]
    code = _STATUS_CODES.get(status) or (
        "upstream_unavailable" if status >= 500 else f"http_{status}"
    )
    retryable = status in (408, 409, 429) or status >= 500
    if provider_code in _NOT_RETRYABLE:
        code, retryable = provider_code, False
    elif provider_code and provider_code != code:
        message = f"{message} ({provider_code})" if message else provider_code
    retry_after = parse_retry_after_ms(
        headers.get("retry-after-ms") or headers.get("Retry-After-Ms")
    )  # the finer one first, as the OpenAI and Anthropic SDKs read them
    if retry_after is None:
        retry_after = parse_retry_after(headers.get("retry-after") or headers.get("Retry-After"))
    return ErrorEvent(
        code=code,
        message=f"HTTP {status}: {message}" if message else f"HTTP {status}",
        retryable=retryable,
        stage="http",
        status=status,
        retry_after=retry_after if retry_after is not None else retry_delay,
    )


_MAX_MESSAGE = 1000
"""Characters of the provider's message kept (an error body may be up to 64 KiB)."""


def _message_of(err: Mapping[str, Any]) -> str:
    """The ``message`` (or ``detail``) of an error object when it is text, cut to
    :data:`_MAX_MESSAGE`: a hostile body's nested value is no message (its ``str()``
    would recurse as deep as the JSON, up to a ``RecursionError``)."""
    for key in ("message", "detail"):
        value = err.get(key)
        if isinstance(value, str) and value:
            return value[:_MAX_MESSAGE]
    return ""


_NOT_RETRYABLE = frozenset({"insufficient_quota"})
"""Provider codes that a retry cannot fix although their status (429) says retryable."""


def _provider_code(err: Mapping[str, Any], status: int) -> str | None:
    """The provider's own error code: Google's ``status`` name, else ``code``, else ``type``
    (a numeric ``code`` that only repeats the HTTP status says nothing more)."""
    for key in ("status", "code", "type"):
        value = err.get(key)
        if isinstance(value, str) and value and value != str(status):
            return value[:100]
        if isinstance(value, int) and not isinstance(value, bool) and value != status:
            return str(value)
    return None


_DELAY = re.compile(r"([0-9]{1,9})(?:\.([0-9]{1,9}))?s")


def _google_retry_delay(details: Any) -> float | None:
    """``retryDelay`` of a ``google.rpc.RetryInfo`` detail (``"17s"``, ``"0.5s"``), else None."""
    if not isinstance(details, list):
        return None
    for d in details[:16]:
        if isinstance(d, dict) and str(d.get("@type", "")).endswith("google.rpc.RetryInfo"):
            delay = d.get("retryDelay")
            m = _DELAY.fullmatch(delay) if isinstance(delay, str) else None
            if m is not None:
                return float(f"{m[1]}.{m[2] or 0}")
    return None


async def open_upstream(
    transport: Transport,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    budget: Budget,
    *,
    retries: int,
    log: Any,
) -> UpstreamResponse:
    """The response of a successful request (2xx), or :class:`OpenFailed`."""

    async def attempt() -> UpstreamResponse:
        return await _open_once(transport, url, headers, body, budget)

    if retries <= 0:
        return await attempt()  # no retry policy to build on the TTFT path
    resp: UpstreamResponse = await _retrying(retries, budget, log)(attempt)
    return resp


async def _open_once(
    transport: Transport, url: str, headers: Mapping[str, str], body: bytes, budget: Budget
) -> UpstreamResponse:
    timeouts = budget.timeouts
    connect = budget.bounded(timeouts.connect)
    try:
        # The connect timeout covers the socket; this one covers a server that
        # accepts the request and never sends its response headers.
        budget.mark_sent()
        async with asyncio.timeout(budget.first_token_left()):
            resp = await transport.open(url, headers, body, connect)
    except TimeoutError as exc:
        raise OpenFailed(budget.timeout_error(waiting_first=True)) from exc
    except TransportError as exc:
        message = connect_message(exc.message, url) if exc.stage == "connect" else exc.message
        raise OpenFailed(
            ErrorEvent(code=exc.code, message=message, retryable=exc.retryable, stage=exc.stage)
        ) from exc
    except Exception as exc:  # a client library error we do not know: still typed
        raise OpenFailed(
            ErrorEvent(
                code="connect_failed",
                message=connect_message(f"{type(exc).__name__}: {exc}", url),
                retryable=False,
                stage="connect",
            )
        ) from exc
    await _refuse_status(resp, url, budget)
    return resp


async def _refuse_status(resp: UpstreamResponse, url: str, budget: Budget) -> None:
    """Close ``resp`` and raise :class:`OpenFailed` unless its status is a success."""
    if is_redirect(resp.status):
        location = resp.headers.get("Location")
        await resp.aclose()
        raise OpenFailed(
            ErrorEvent(
                code="redirected",
                message=redirect_message(resp.status, location, url),
                retryable=False,
                stage="http",
                status=resp.status,
            )
        )
    if resp.status >= 400:
        try:
            async with asyncio.timeout(budget.bounded(budget.timeouts.idle)):
                err_body = await resp.read(_MAX_ERROR_BODY)
        except TimeoutError:
            err_body = b""
        finally:
            await resp.aclose()
        raise OpenFailed(http_error(resp.status, err_body, resp.headers))


def _retry_after_of(state: RetryCallState) -> float | None:
    exc = state.outcome.exception() if state.outcome else None
    return exc.event.retry_after if isinstance(exc, OpenFailed) else None


def _retrying(retries: int, budget: Budget, log: Any) -> AsyncRetrying:
    def wait(state: RetryCallState) -> float:
        ra = _retry_after_of(state)
        backoff = random.uniform(0, min(_MAX_RETRY_WAIT, 0.25 * 2**state.attempt_number))
        delay = min(ra, _MAX_RETRY_WAIT) if ra is not None else backoff
        remaining = budget.remaining()
        return delay if remaining is None else max(0.0, min(delay, remaining - 0.01))

    def stop(state: RetryCallState) -> bool:
        if state.attempt_number >= retries + 1:
            return True
        # A Retry-After beyond the time left cannot be honoured: report the
        # rate limit (with retry_after) now instead of sleeping into a timeout.
        ra = _retry_after_of(state)
        remaining = budget.remaining()
        return ra is not None and remaining is not None and ra > remaining

    def log_retry(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, OpenFailed):
            log.info("stream.retry", attempt=state.attempt_number, code=exc.event.code)

    return AsyncRetrying(
        stop=stop,
        wait=wait,
        retry=retry_if_exception(lambda e: isinstance(e, OpenFailed) and e.event.retryable),
        before_sleep=log_retry,
        reraise=True,
    )
