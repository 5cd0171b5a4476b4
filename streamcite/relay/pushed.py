"""A stream's tokens logged where the upstream's bytes arrive: the producer's push sink.

With a push transport (:mod:`streamcite.transports.push`) and a log that appends without
awaiting, a read of tokens is decoded, logged and handed to the live taps in the upstream
connection's ``data_received``: no task is woken per token. It is the producer's hot loop
for tokens (:meth:`~streamcite.relay.producer.Producer._log_events`), the same payloads,
hooks and metrics; a read with any other event goes to the producer's task as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from streamcite.core.events import TokenEvent
from streamcite.pipeline.sse_reads import Batches
from streamcite.relay.live import Taps
from streamcite.relay.protocol import token_json

__all__ = ["PushedTokens", "first_token_observer", "push_tokens"]


class Observer(Protocol):
    def observe(self, amount: float) -> None: ...


def first_token_observer(ttft: Observer, started: float) -> Callable[[float], None]:
    """Observes a stream's first token (the time it arrived, ``perf_counter``) in ``ttft``
    once, whichever of the producer's loop and its push sink logs it."""
    seen = False

    def observe(t: float) -> None:
        nonlocal seen
        if not seen:
            seen = True
            ttft.observe(t - started)

    return observe


def push_tokens(
    sid: str,
    batches: object,
    append: Callable[[str, bytes], int] | None,
    taps: Taps | None,
    on_event: Callable[[str, int, float], None] | None,
    on_first: Callable[[float], None],
) -> PushedTokens | None:
    """The push sink of a stream whose events come as ``batches``, when its log appends
    without awaiting (``append``); with a pull transport the sink is never called."""
    if append is None or not isinstance(batches, Batches):
        return None
    pushed = PushedTokens(sid, append, taps, on_event, on_first)
    batches.take_tokens(pushed.take)
    return pushed


class PushedTokens:
    """``take`` is the :data:`~streamcite.pipeline.sse_reads.TokenSink` of one stream. It
    never raises: a failure (the log's) is kept in :attr:`failure` and the read refused,
    and the producer's task raises it where its own loop would have."""

    __slots__ = (
        "append",
        "failure",
        "first_token",
        "on_event",
        "on_first",
        "sid",
        "stopped",
        "taps",
    )

    def __init__(
        self,
        sid: str,
        append: Callable[[str, bytes], int],
        taps: Taps | None,
        on_event: Callable[[str, int, float], None] | None,
        on_first: Callable[[float], None],
    ) -> None:
        self.sid = sid
        self.append = append
        self.taps = taps
        self.on_event = on_event
        self.on_first = on_first
        """Called with the time of the stream's first token (its TTFT metric)."""
        self.first_token = True
        self.failure: Exception | None = None
        self.stopped = False
        """The stream was cancelled: reads go to its task (which is being cancelled), so
        no token is logged after the cancel, as when the task reads them."""

    def take(self, batch: list[TokenEvent]) -> bool:
        if self.failure is not None or self.stopped:
            return False
        try:
            self._log(batch)
        except Exception as exc:
            self.failure = exc
            return False
        return True

    def _log(self, batch: list[TokenEvent]) -> None:
        t = time.perf_counter()
        sid, append, on_event = self.sid, self.append, self.on_event
        first = 0
        one = b""
        more: list[bytes] | None = None
        for event in batch:
            payload = token_json(event.index, event.text, event.display)
            seq = append(sid, payload)
            if not first:
                first, one = seq, payload
            elif more is None:
                more = [one, payload]
            else:
                more.append(payload)
            if on_event is not None:
                on_event(sid, seq, t)
            if self.first_token:
                self.first_token = False
                self.on_first(t)
        if first and self.taps is not None:
            self.taps.logged_read(first, one, more)
