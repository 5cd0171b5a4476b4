"""Live taps: a WebSocket client that has caught up gets each new event as it is logged.

A pump (:mod:`streamcite.relay.delivery`) that has delivered everything its stream's log
holds parks on a :class:`LiveTap`. The producer then hands each event it appends straight
to the tap, in the same call: the tap writes the event's frame to the client's socket,
with no task switch and no log read per event per client. The log stays the source of
truth: the tap only takes the event right after the last one it delivered, and only while
the client's write buffer is empty (so the write-buffer cap and the too-slow rule hold);
any other case — a gap, a backlog, a closing connection — releases the tap, and the pump
reads the log from where the tap stopped, exactly once, in order, as before. The frames the
taps take in one loop turn go out at its end, in one write per client, the writes to all the
clients together (before that, any other write to a client writes them first).

Used only with a log that appends without awaiting (the in-memory one): the producer
knows each event's ``seq`` in the call that logged it, so nothing can be logged between
the pump's last read and the tap taking over without the tap seeing it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol

from streamcite.relay.protocol import DONE_PREFIX as _DONE_PREFIX
from streamcite.relay.protocol import ws_text_header

__all__ = ["LiveTap", "LiveWriter", "Taps"]

OnSent = Callable[[str, int, float], None]


class LiveWriter(Protocol):
    """A client's live frames (``Client.live_writer``)."""

    def take(self, frame: bytes) -> bool:
        """Take one event's WebSocket frame (encoded: :func:`ws_text_frame` of the enveloped
        event's JSON) for the socket and return True, or return False, taking nothing, when
        it cannot go out at once."""
        ...


class LiveTap:
    """One parked pump: delivers ``sid``'s new events to one client as they are logged."""

    __slots__ = ("counted", "delivered", "done", "on_sent", "sid", "waiter", "write")

    def __init__(
        self,
        sid: str,
        delivered: int,
        write: LiveWriter,
        waiter: asyncio.Future[None],
        on_sent: OnSent | None,
    ) -> None:
        self.sid = sid
        self.delivered = delivered
        """The last ``seq`` this client was given (by the pump, then by the tap)."""
        self.write = write.take
        self.waiter = waiter
        """Resolved when the tap lets go (the pump takes over again)."""
        self.on_sent = on_sent
        self.done = False
        """The tap delivered ``done``: the stream is over for this client."""
        self.counted = 0
        """Frames the tap wrote (the pump adds them to the relay's count)."""

    def offer(self, seq: int, frame: bytes, done: bool) -> bool:
        """Deliver entry ``seq`` (its enveloped ``frame``) now if it is the next one and
        the socket takes it at once; False: the tap let go (the entry stays in the log for
        the pump), or it delivered ``done``."""
        if seq != self.delivered + 1 or not self.write(frame):
            self.release()
            return False
        self.delivered = seq
        self.counted += 1
        if self.on_sent is not None:
            self.on_sent(self.sid, seq, time.perf_counter())
        if done:
            self.done = True
            self.release()
            return False
        return True

    def release(self) -> None:
        if not self.waiter.done():
            self.waiter.set_result(None)


class Taps:
    """The taps of one stream, fed by its producer on every append."""

    __slots__ = ("closed", "head", "last_seq", "taps")

    def __init__(self, sid: str) -> None:
        self.taps: list[LiveTap] = []
        self.head = b'{"stream_id":"%s","seq":' % sid.encode("ascii")
        """The start of :func:`~streamcite.relay.protocol.envelope` for this stream."""
        self.last_seq = 0
        """The last ``seq`` the producer logged (a pump may park only when caught up)."""
        self.closed = False
        """The stream's run is over here: nothing more will be handed to taps."""

    def logged(self, seq: int, payload: bytes) -> None:
        """The producer logged entry ``seq``: hand it to every tap (those that cannot take
        it let go, and their pumps read it from the log)."""
        self.last_seq = seq
        taps = self.taps
        if not taps:
            return
        # ws_text_frame(envelope(sid, seq, payload)): made once for every tap, in one join
        mid = b"%d," % seq
        head = self.head
        n = len(head) + len(mid) + len(payload) - 1
        frame = b"".join((ws_text_header(n), head, mid, payload[1:]))
        done = payload.startswith(_DONE_PREFIX)  # is_done_payload(payload)
        if len(taps) == 1:  # the common case: LiveTap.offer inlined (once per event)
            tap = taps[0]
            if seq == tap.delivered + 1 and tap.write(frame):
                tap.delivered = seq
                tap.counted += 1
                if tap.on_sent is not None:
                    tap.on_sent(tap.sid, seq, time.perf_counter())
                if not done:
                    return
                tap.done = True
            tap.release()
            taps.clear()
        else:
            self.taps = [tap for tap in taps if tap.offer(seq, frame, done)]

    def park(self, tap: LiveTap) -> None:
        self.taps.append(tap)

    def unpark(self, tap: LiveTap) -> None:
        if tap in self.taps:
            self.taps.remove(tap)

    def release_all(self) -> None:
        """The stream ended here: every parked pump goes back to the log."""
        self.closed = True
        taps, self.taps = self.taps, []
        for tap in taps:
            tap.release()
