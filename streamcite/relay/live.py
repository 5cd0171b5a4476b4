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
from streamcite.relay.protocol import WS_SHORT_HEADERS as _WS_SHORT
from streamcite.relay.protocol import ws_text_header

__all__ = ["LiveTap", "LiveWriter", "Taps"]

OnSent = Callable[[str, int, float], None]


class LiveWriter(Protocol):
    """A client's live frames (``Client.live_writer``)."""

    def take(self, frame: bytes) -> bool:
        """Take one event's WebSocket frame (encoded: :func:`ws_text_frame` of the enveloped
        event's JSON), or the frames of one upstream read's tokens back to back, for the
        socket and return True, or return False, taking nothing, when they cannot go out at
        once."""
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

    def offer(self, first: int, last: int, frames: bytes, done: bool) -> bool:
        """Deliver entries ``first`` … ``last`` (their enveloped ``frames``) now if the first
        is the next one and the socket takes them at once; False: the tap let go (the
        entries stay in the log for the pump), or it delivered ``done``."""
        if first != self.delivered + 1 or not self.write(frames):
            self.release()
            return False
        self.delivered = last
        self.counted += last - first + 1
        if self.on_sent is not None:
            t = time.perf_counter()
            for seq in range(first, last + 1):
                self.on_sent(self.sid, seq, t)
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

    __slots__ = ("closed", "frames_built", "head", "last_seq", "taps")

    def __init__(self, sid: str) -> None:
        self.taps: list[LiveTap] = []
        self.head = b'{"stream_id":"%s","seq":' % sid.encode("ascii")
        """The start of :func:`~streamcite.relay.protocol.envelope` for this stream."""
        self.last_seq = 0
        """The last ``seq`` the producer logged (a pump may park only when caught up)."""
        self.closed = False
        """The stream's run is over here: nothing more will be handed to taps."""
        self.frames_built = 0
        """Pieces handed to the taps: one per event, or one per read of several tokens."""

    def logged(self, seq: int, payload: bytes) -> None:
        """The producer logged entry ``seq``: hand it to every tap (those that cannot take
        it let go, and their pumps read it from the log)."""
        self.last_seq = seq
        taps = self.taps
        if not taps:
            return
        self.frames_built += 1
        # ws_text_frame(envelope(sid, seq, payload)): made once for every tap, in one join
        mid = b"%d," % seq
        head = self.head
        n = len(head) + len(mid) + len(payload) - 1
        frame = b"".join((_WS_SHORT[n] if n < 126 else ws_text_header(n), head, mid, payload[1:]))
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
            self.taps = [tap for tap in taps if tap.offer(seq, seq, frame, done)]

    def logged_read(self, first: int, one: bytes, more: list[bytes] | None) -> None:
        """One read's tokens were logged from ``first`` on: ``one`` alone, or ``more``."""
        if more is None:
            self.logged(first, one)
        else:
            self.logged_run(first, more)

    def logged_run(self, first: int, payloads: list[bytes]) -> None:
        """The producer logged entries ``first`` … ``first + len(payloads) - 1`` (one
        upstream read's tokens, never ``done``): their frames are made in one join and
        handed to each tap as one piece (one ``take`` per tap per read, not per event)."""
        last = first + len(payloads) - 1
        self.last_seq = last
        if not self.taps:
            return
        self.frames_built += 1
        head = self.head
        hl = len(head)
        parts: list[bytes] = []
        add = parts.append
        seq = first
        for payload in payloads:  # (the frame as in logged)
            mid = b"%d," % seq
            n = hl + len(mid) + len(payload) - 1
            add(_WS_SHORT[n] if n < 126 else ws_text_header(n))
            add(head)
            add(mid)
            add(payload[1:])
            seq += 1
        self._hand(first, last, b"".join(parts), False)

    def _hand(self, first: int, last: int, frames: bytes, done: bool) -> None:
        """Hand entries ``first`` … ``last`` (their ``frames``) to every tap."""
        taps = self.taps
        if len(taps) == 1:  # the common case: LiveTap.offer inlined
            tap = taps[0]
            if first == tap.delivered + 1 and tap.write(frames):
                tap.delivered = last
                tap.counted += last - first + 1
                if tap.on_sent is not None:
                    t = time.perf_counter()
                    for seq in range(first, last + 1):
                        tap.on_sent(tap.sid, seq, t)
                if not done:
                    return
                tap.done = True
            tap.release()
            taps.clear()
        else:
            self.taps = [tap for tap in taps if tap.offer(first, last, frames, done)]

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
