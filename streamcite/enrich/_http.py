"""Shared HTTP plumbing of the after-the-stream clients (Wikit, Google).

- :class:`RetryPolicy`: jittered exponential backoff, ``Retry-After`` honoured but
  capped, a per-attempt timeout and an overall deadline no attempt outlives.
- :func:`with_retries`: runs one attempt function under that policy (tenacity).
- :class:`SessionHolder`: uses the caller's ``aiohttp.ClientSession`` when given,
  a client-owned one while the client is used as ``async with``, else one per call
  (so a client used casually never leaks a connection).
- :class:`PooledClient`: the ``async with`` / ``aclose()`` lifecycle of such a client.
- :class:`Secret`: a string that never shows in a repr, a log line or an error.

An attempt function signals "try again" by raising a :class:`StreamciteError` with
``retryable=True`` (optionally with ``retry_after``); anything else ends at once.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Self, TypeVar
from urllib.parse import quote

import aiohttp
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception
from yarl import URL

from streamcite.core.errors import StreamciteError, UpstreamError
from streamcite.core.redact import Redactor, header_secrets
from streamcite.core.retry_after import parse_retry_after
from streamcite.logs import get_logger
from streamcite.telemetry.switch import note_retry
from streamcite.transports.base import is_redirect, redirect_message

__all__ = [
    "MAX_ERROR_MESSAGE",
    "HttpResponse",
    "PooledClient",
    "RetryPolicy",
    "Secret",
    "SessionHolder",
    "bound_error",
    "bound_message",
    "parse_retry_after",
    "path_segment",
    "send",
    "url_with_segments",
    "with_retries",
]

T = TypeVar("T")


class Secret:
    """A credential kept out of reprs, logs and error messages."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When and how long to retry a cold-path HTTP call.

    ``deadline`` bounds everything: no attempt starts after it and the running
    attempt is cut at it, so a caller waits at most ``deadline`` seconds.
    """

    deadline: float = 10.0
    """Overall budget in seconds, retries and backoff included."""
    request_timeout: float = 5.0
    """Budget of one attempt (connect + response + body), clipped to the deadline."""
    max_attempts: int | None = None
    """Attempts in all (first try included); None: as many as the deadline allows."""
    backoff_base: float = 0.1
    """First backoff in seconds; doubles per retry."""
    backoff_max: float = 2.0
    """Ceiling of one backoff before jitter."""
    retry_after_cap: float = 5.0
    """A ``Retry-After`` longer than this is shortened to it (a 1-hour value must not park us)."""
    min_attempt: float = 0.1
    """No retry starts with less than this left of the deadline (clipped to
    ``request_timeout``): it could only time out, and its ``timeout`` would hide the
    real error of the attempt before (a 404, a 503)."""

    def __post_init__(self) -> None:
        if self.deadline <= 0 or self.request_timeout <= 0:
            raise ValueError("deadline and request_timeout must be positive")
        if self.max_attempts is not None and self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")

    def backoff(self, retry_number: int, retry_after: float | None = None) -> float:
        """Sleep before retry ``retry_number`` (1 for the first retry).

        "Equal jitter": half the exponential step is fixed, half random, so retries of
        many clients spread out while a single client still backs off steadily.
        """
        step: float = min(self.backoff_max, self.backoff_base * 2.0 ** (retry_number - 1))
        wait = step / 2 + random.uniform(0, step / 2)
        if retry_after is not None and retry_after > 0:
            wait = max(wait, min(retry_after, self.retry_after_cap))
        return wait


MAX_ERROR_MESSAGE = 1000
"""Characters kept of an error message built from upstream data (the rest: ``…``)."""


def bound_message(message: str, limit: int = MAX_ERROR_MESSAGE) -> str:
    """``message`` cut to ``limit`` characters (an ellipsis marks the cut).

    >>> bound_message("x" * 5, 3)
    'xxx… (5 characters)'
    """
    if len(message) <= limit:
        return message
    return f"{message[:limit]}… ({len(message)} characters)"


def bound_error(exc: StreamciteError, limit: int = MAX_ERROR_MESSAGE) -> StreamciteError:
    """``exc`` with its message bounded by :func:`bound_message`, in place (returned)."""
    if len(exc.message) > limit:
        exc.message = bound_message(exc.message, limit)
        exc.args = (exc.message,)
    return exc


async def with_retries(
    attempt: Callable[[float], Awaitable[T]],
    policy: RetryPolicy,
    *,
    what: str,
    log: Any = None,
) -> T:
    """Run ``attempt(timeout)`` until it returns, a non-retryable error, or the deadline.

    ``attempt`` receives the seconds it may take (the per-attempt timeout clipped to
    what is left of the deadline) and is cut at that time; a timeout or a transport
    failure counts as retryable. The last error is raised with a note of how many
    attempts were made in how long.
    """
    loop = asyncio.get_running_loop()
    started = loop.time()
    deadline_at = started + policy.deadline
    attempts = 0
    floor = min(policy.min_attempt, policy.request_timeout)
    last: StreamciteError | None = None
    retrying = _retrying(policy, loop.time, deadline_at, what, log)
    try:
        async for state in retrying:
            with state:
                budget = min(policy.request_timeout, deadline_at - loop.time())
                if last is not None and budget < floor:
                    # The backoff slept longer than asked (a busy loop): this attempt
                    # could only time out and hide the real error, so that one is raised.
                    raise last
                attempts += 1
                try:
                    return await _attempt_once(attempt, budget, what)
                except StreamciteError as e:
                    last = e
                    raise
    except StreamciteError as e:
        if e.retryable:
            elapsed = loop.time() - started
            e.message = f"{e.message} (gave up after {attempts} attempt(s) in {elapsed:.2f} s)"
            e.args = (e.message,)
        raise
    raise AssertionError("unreachable: tenacity either returns or raises")  # pragma: no cover


async def _attempt_once(attempt: Callable[[float], Awaitable[T]], budget: float, what: str) -> T:
    """One attempt cut at ``budget`` seconds; a timeout or a lost connection is retryable."""
    try:
        async with asyncio.timeout(budget):
            return await attempt(budget)
    except StreamciteError as e:  # messages quote upstream data: bounded before any log
        bound_error(e)
        raise
    except TimeoutError:
        raise UpstreamError(
            f"{what}: no answer within {budget:.2f} s",
            code="timeout",
            retryable=True,
        ) from None
    except aiohttp.ClientError as e:
        # Connection refused/reset, server disconnected: the server may
        # come back within the deadline. The message names the class only:
        # aiohttp's text can contain the URL, never a secret, but keep it short.
        raise UpstreamError(
            f"{what}: connection failed ({type(e).__name__})",
            code="connect",
            retryable=True,
        ) from e


def _retrying(
    policy: RetryPolicy, now: Callable[[], float], deadline_at: float, what: str, log: Any
) -> AsyncRetrying:
    """Tenacity's loop for ``policy``: retryable StreamciteErrors only, within the deadline."""
    log = log if log is not None else get_logger("streamcite.enrich")

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        retry_after = getattr(exc, "retry_after", None)
        return policy.backoff(state.attempt_number, retry_after)

    def stop(state: RetryCallState) -> bool:
        if policy.max_attempts is not None and state.attempt_number >= policy.max_attempts:
            return True
        # Stop now rather than sleep into (or close to) the deadline: the next attempt
        # would have no time left to succeed, only to replace the real error by a timeout.
        floor = min(policy.min_attempt, policy.request_timeout)
        return now() + state.upcoming_sleep >= deadline_at - floor

    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        log.debug(
            "retrying",
            what=what,
            attempt=state.attempt_number,
            sleep_s=round(state.upcoming_sleep, 3),
            code=getattr(exc, "code", None),
            status=getattr(exc, "status", None),
        )
        # A "retry" event on the enricher's span, when telemetry is on.
        note_retry(
            state.attempt_number,
            getattr(exc, "code", None),
            getattr(exc, "status", None),
            state.upcoming_sleep,
        )

    return AsyncRetrying(
        retry=retry_if_exception(lambda e: isinstance(e, StreamciteError) and e.retryable),
        wait=wait,
        stop=stop,
        before_sleep=before_sleep,
        sleep=asyncio.sleep,
        reraise=True,
    )


@dataclass(slots=True)
class HttpResponse:
    """Status, headers and body of a response read in full (cold path, small bodies)."""

    status: int
    headers: dict[str, str]
    body: bytes

    def header(self, name: str) -> str | None:
        low = name.lower()
        for k, val in self.headers.items():
            if k.lower() == low:
                return val
        return None


def path_segment(value: str) -> str:
    """``value`` as one percent-encoded path segment that no URL normalisation changes.

    ``/``, ``?``, ``#`` and ``%`` are encoded; a segment of dots only (``.``, ``..``) has
    its dots written ``%2E``, so it never walks up the path. Send the URL built with it
    as ``yarl.URL(..., encoded=True)`` (:func:`url_with_segments`): yarl would decode
    ``%2E`` and remove the segment again.

    >>> path_segment(".."), path_segment("a/b?c"), path_segment("v1.2")
    ('%2E%2E', 'a%2Fb%3Fc', 'v1.2')
    """
    out = quote(value, safe="")
    if not out.strip("."):
        out = out.replace(".", "%2E")
    return out


def url_with_segments(base_url: str, template: str, *values: str) -> URL:
    """``base_url`` + ``template`` with each ``{}`` replaced by :func:`path_segment` of
    a value, as an already-encoded URL (sent as is: ``..`` or ``/`` in a value never
    changes the path).

    >>> str(url_with_segments("http://h/api/", "/apps/{}/items/{}/get", "a", ".."))
    'http://h/api/apps/a/items/%2E%2E/get'
    """
    base = str(URL(base_url.rstrip("/")))
    return URL(base + template.format(*(path_segment(v) for v in values)), encoded=True)


async def send(
    session: aiohttp.ClientSession,
    method: str,
    url: str | URL,
    *,
    headers: dict[str, str],
    body: bytes | None = None,
    max_body: int = 32 * 1024 * 1024,
) -> HttpResponse:
    """One request, body read in full (bounded: a runaway response is an error)."""
    async with session.request(
        method, url, headers=headers, data=body, allow_redirects=False
    ) as resp:
        if is_redirect(resp.status):
            raise UpstreamError(
                redirect_message(resp.status, resp.headers.get("Location"), str(url)),
                code="redirected",
                retryable=False,
                status=resp.status,
            )
        if resp.content_length is not None and resp.content_length > max_body:
            raise UpstreamError(
                f"response body of {resp.content_length} bytes exceeds {max_body}",
                code="response_too_large",
                status=resp.status,
            )
        chunks: list[bytes] = []
        size = 0
        # An error body may echo the request's headers: its key never goes further.
        redact = Redactor(header_secrets(headers.items()))
        async for chunk in resp.content.iter_any():
            size += len(chunk)
            if size > max_body:
                raise UpstreamError(
                    f"response body exceeds {max_body} bytes",
                    code="response_too_large",
                    status=resp.status,
                )
            chunks.append(chunk)
        return HttpResponse(resp.status, dict(resp.headers), redact.data(b"".join(chunks)))


class SessionHolder:
    """Which ``aiohttp.ClientSession`` a client uses.

    The caller's session is used as is and never closed. Without one, a session is
    kept between ``open()`` and ``aclose()`` (the client's ``async with``), and
    otherwise made for a single call and closed after it: no connection outlives
    its user.
    """

    __slots__ = ("_given", "_loop", "_owned")

    def __init__(self, session: aiohttp.ClientSession | None) -> None:
        self._given = session
        self._owned: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def open(self) -> None:
        if self._given is None and (self._owned is None or self._owned.closed):
            self._owned = aiohttp.ClientSession()
            self._loop = asyncio.get_running_loop()

    async def aclose(self) -> None:
        owned, self._owned = self._owned, None
        if owned is not None and not owned.closed:
            await owned.close()

    @asynccontextmanager
    async def session(self) -> AsyncIterator[aiohttp.ClientSession]:
        if self._given is not None:
            yield self._given
            return
        owned = self._owned
        if owned is not None and not owned.closed and self._loop is asyncio.get_running_loop():
            yield owned
            return
        async with aiohttp.ClientSession() as per_call:
            yield per_call


class PooledClient:
    """Base of a client with a :class:`SessionHolder`: ``async with client:`` keeps one
    connection pool for the block; ``aclose()`` closes it (never the caller's session)."""

    _sessions: SessionHolder

    async def __aenter__(self) -> Self:
        await self._sessions.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool this client opened (never the caller's session)."""
        await self._sessions.aclose()
