"""Read deadlines for an aiohttp server: no connection may hold a slot by sending slowly.

A slowloris client opens connections and sends a request head a byte at a time (or
never finishes it), or sends a head announcing a body that never arrives. aiohttp bounds
neither: an ``AppRunner``'s connections wait for a head up to its ``keepalive_timeout``
(3,630 s by default) and a handler awaiting ``request.read()`` waits for as long as the
socket stays open. :class:`ReadDeadlines` closes:

* a connection without a complete request head ``header_timeout`` seconds after it
  opened or after its previous response ended (idle keep-alive connections included);
* a request whose body has not arrived whole ``body_timeout`` seconds after its head.

One timer sweeps the server's connections every ``period`` seconds (O(connections),
nothing per byte or per request), so a deadline is met within one ``period``. The sweep
also counts the connections waiting for a head or a body: :attr:`half_open`. The
runner's own ``keepalive_timeout`` is set a little later than ``header_timeout`` (the
backstop should the sweep ever stop).

Usage::

    deadlines = ReadDeadlines(header_timeout=10, body_timeout=30)
    runner = web.AppRunner(app, **deadlines.runner_kwargs())
    await runner.setup()
    deadlines.start(runner)
    ...
    deadlines.stop()

The sweep reads three attributes of aiohttp's ``RequestHandler`` that have no public
accessor (``_request_in_progress``, ``_current_request``, ``_request_count``); without
them it counts and closes nothing and the ``keepalive_timeout`` backstop still holds. A
request in progress (its handler running, or its response still being written to a
slow reader) is never a half-open connection: slow readers are the watchdog's.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from aiohttp import web

__all__ = ["ReadDeadlines"]


class _Seen:
    __slots__ = ("busy", "count", "request", "since")

    def __init__(self, count: int, busy: bool, request: Any, since: float) -> None:
        self.count = count
        self.busy = busy
        self.request = request
        self.since = since


class ReadDeadlines:
    """Header and body read deadlines over the connections of one aiohttp server."""

    def __init__(
        self,
        *,
        header_timeout: float = 10.0,
        body_timeout: float = 30.0,
        period: float | None = None,
    ) -> None:
        if header_timeout <= 0 or body_timeout <= 0:
            raise ValueError("header_timeout and body_timeout must be > 0")
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self.period = period or max(0.05, min(1.0, header_timeout / 4, body_timeout / 4))
        self.half_open = 0
        """Connections waiting for a request head or body at the last sweep."""
        self.closed: Counter[str] = Counter()
        """Connections closed by a deadline, by phase (``header``, ``body``)."""
        self._server: web.Server | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._seen: dict[Any, _Seen] = {}

    def __repr__(self) -> str:
        return (
            f"<ReadDeadlines header={self.header_timeout}s body={self.body_timeout}s "
            f"half_open={self.half_open} closed={dict(self.closed)}>"
        )

    def runner_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``web.AppRunner``: the keep-alive backstop."""
        return {"keepalive_timeout": self.header_timeout + 2 * self.period}

    def start(self, runner: web.BaseRunner) -> None:
        """Sweep ``runner``'s connections (call after ``runner.setup()``)."""
        server = runner.server
        if not isinstance(server, web.Server):
            raise RuntimeError("start() needs a runner that was set up")
        self._server = server
        self._arm()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._server = None
        self._seen.clear()

    def _arm(self) -> None:
        self._timer = asyncio.get_running_loop().call_later(self.period, self._sweep)

    def _sweep(self) -> None:
        server = self._server
        if server is None:
            return
        try:
            self.half_open = self.check(server.connections, asyncio.get_running_loop().time())
        finally:
            self._arm()

    def check(self, connections: list[Any], now: float) -> int:
        """One sweep at time ``now``: close the connections past a deadline; return how
        many others wait for a head or a body."""
        seen, fresh = self._seen, {}
        waiting = 0
        for conn in connections:
            busy = getattr(conn, "_request_in_progress", None)
            count = getattr(conn, "_request_count", None)
            if busy is None or count is None:
                continue  # an aiohttp without these attributes: the backstop holds
            request = getattr(conn, "_current_request", None)
            prev = seen.get(conn)
            if not busy:  # no request in progress: waiting for (the rest of) a head
                same = prev is not None and not prev.busy and prev.count == count
                since = prev.since if same and prev is not None else now
                if now - since >= self.header_timeout:
                    self._close(conn, "header")
                    continue
            elif request is None or _body_complete(request):
                fresh[conn] = _Seen(count, True, request, now)
                continue
            else:  # a request running whose body is still on its way
                same = prev is not None and prev.request is request
                since = prev.since if same and prev is not None else now
                if now - since >= self.body_timeout:
                    self._close(conn, "body")
                    continue
            waiting += 1
            fresh[conn] = _Seen(count, bool(busy), request, since)
        self._seen = fresh
        return waiting

    def _close(self, conn: Any, phase: str) -> None:
        self.closed[phase] += 1
        # Duck-typed: uvloop's transports are not instances of asyncio.Transport.
        abort = getattr(getattr(conn, "transport", None), "abort", None)
        if callable(abort):
            abort()  # nothing to flush to a client that sends nothing
        else:
            conn.force_close()


def _body_complete(request: Any) -> bool:
    content = getattr(request, "content", None)
    is_eof = getattr(content, "is_eof", None)
    return True if is_eof is None else bool(is_eof())
