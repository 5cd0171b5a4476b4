"""Delivery: one pump per (client, stream) reads the log and writes frames, exactly once.

A pump reads the stream's log after the last ``seq`` it delivered and writes each
entry's frame to its client. The same code path serves a fresh ask, a resume after a
reconnect and a client of a stream another relay instance runs (shared log), which is
what makes delivery exactly-once. It also tells the client what the log cannot give:
a gap (entries dropped from a bounded log: ``resume_gap``), an owner that died
(``owner_lost`` + ``done`` rebuilt from the log), a log that failed.
"""

from __future__ import annotations

import asyncio

import orjson

from streamcite.core.errors import StreamciteError
from streamcite.core.events import DoneEvent, ErrorEvent
from streamcite.relay.bounds import StreamBounds
from streamcite.relay.clients import Client, ClientGone, OnSent, TooSlow
from streamcite.relay.config import RelayConfig
from streamcite.relay.live import LiveTap, LiveWriter, Taps
from streamcite.relay.metrics import RelayMetrics
from streamcite.relay.producer import Producer
from streamcite.relay.protocol import CloseCode, envelope, is_done_payload, relay_error_frame
from streamcite.relay.replay import rebuild_answer
from streamcite.streamlog import StreamLog, StreamStatus

__all__ = ["REMOTE_POLL", "Delivery", "bad_seq"]

REMOTE_POLL = 2.0
"""Longest blocking read of a pump whose stream is owned by another instance (seconds)."""


def bad_seq(after_seq: int, status: StreamStatus) -> bool:
    """``after_seq`` past the log's end is an error, unless the owner died: a client may
    then hold events the log never got, and it is told ``owner_lost`` instead."""
    return after_seq > status.last_seq and (status.finished or status.owner_alive)


class _Position:
    """The last ``seq`` a pump delivered (read by its error handlers)."""

    __slots__ = ("delivered",)

    def __init__(self, delivered: int) -> None:
        self.delivered = delivered


class Delivery:
    """The pumps: each stream a client follows, from the log to the client's socket."""

    def __init__(
        self, config: RelayConfig, log: StreamLog, metrics: RelayMetrics, producer: Producer
    ) -> None:
        self.config = config
        self.log = log
        self.metrics = metrics
        self.producer = producer
        """Whose streams run here: a pump counts as a subscriber of those."""
        self.on_sent: OnSent | None = None
        """Benchmark hook once an event's frame was handed to the client's socket."""

    def start_pump(self, client: Client, sid: str, after_seq: int) -> None:
        """Deliver ``sid`` after ``after_seq`` to ``client`` in a task of its own."""
        self.producer.attach(sid)
        task = asyncio.create_task(
            self.pump(client, sid, after_seq, attached=True), name=f"relay-pump:{sid}"
        )
        client.pumps[sid] = task

    async def drop_pumps(self, client: Client) -> None:
        """Stop every pump of a client that went away (and wait for them)."""
        pumps = list(client.pumps.values())
        client.pumps.clear()
        for task in pumps:
            task.cancel()
        if pumps:
            await asyncio.gather(*pumps, return_exceptions=True)

    async def pump(self, client: Client, sid: str, after_seq: int, *, attached: bool) -> None:
        """Deliver ``sid``'s events after ``after_seq`` to ``client``, exactly once, in order.

        ``attached``: the caller counted this pump as a subscriber (detached at the end)."""
        at = _Position(after_seq)
        try:
            try:
                await self._follow(client, sid, at)
            except StreamciteError as exc:  # the log failed (Redis unreachable, say)
                await self._end_on_log_error(client, sid, at.delivered, exc)
        except TooSlow:
            self.metrics.client_closed["too_slow"] += 1
            client.logger.info("client.too_slow", stream_id=sid, delivered=at.delivered)
            client.close_soon(CloseCode.TOO_SLOW, "client too slow; resume")
        except ClientGone:
            pass
        finally:
            if attached:
                self.producer.detach(sid)
            if client.pumps.get(sid) is asyncio.current_task():
                del client.pumps[sid]

    async def _follow(self, client: Client, sid: str, at: _Position) -> None:
        """The pump's loop, until the stream is over for this client."""
        log = self.log
        bound = self.config.client_buffer_events
        block = self.config.heartbeat_interval
        produced = self.producer.streams.get(sid)
        taps = produced.taps if produced is not None else None
        writer = client.live_writer() if taps is not None else None
        if produced is None:
            # Only a status check notices that another instance (the owner) died: poll
            # often enough that its readers learn it soon after its lease lapses.
            block = min(block, REMOTE_POLL)
        # Events already logged when the client (re)attached are backlog, not lag.
        status = await log.status(sid)
        backlog_end = status.last_seq if status is not None else 0
        while True:
            wait = block
            if (
                writer is not None
                and taps is not None
                and not taps.closed
                and taps.last_seq == at.delivered
                and not client.backlogged()
            ):
                # Caught up: park, and let the producer hand over each new event.
                tap = await self._park(taps, writer, sid, at.delivered, wait)
                at.delivered = tap.delivered
                if tap.done:
                    return
                if tap.counted:
                    continue
                wait = 0  # nothing came through the tap: what the log has, or the idle check
            delivered = at.delivered
            entries = await log.read(sid, delivered, block=wait)
            if not entries:
                if await self._idle(client, sid, delivered):
                    return
                continue
            first = entries[0].seq
            if first > delivered + 1:
                await self._send_gap(client, sid, delivered, first)
            # Behind the live head (resume backlog excepted) while its socket is full:
            # the client cannot keep up. A burst to a client that keeps up is fine.
            if entries[-1].seq - max(delivered, backlog_end) > bound and client.backlogged():
                raise TooSlow
            # One socket write for all the frames this wake found (the cap permitting).
            await client.send_events(sid, entries, self.on_sent)
            self.metrics.events_sent += len(entries)
            last = entries[-1]
            at.delivered = last.seq
            if is_done_payload(last.payload):
                return

    async def _park(
        self, taps: Taps, writer: LiveWriter, sid: str, delivered: int, wait: float
    ) -> LiveTap:
        """Wait on a live tap until it lets go (a gap, a backlog, ``done``, the stream's
        end here) or ``wait`` seconds pass; the tap tells what it delivered."""
        loop = asyncio.get_running_loop()
        tap = LiveTap(sid, delivered, writer, loop.create_future(), self.on_sent)
        taps.park(tap)
        timer = loop.call_later(wait, tap.release)
        try:
            await tap.waiter
        finally:
            timer.cancel()
            taps.unpark(tap)
            self.metrics.events_sent += tap.counted
        return tap

    async def _idle(self, client: Client, sid: str, delivered: int) -> bool:
        """Nothing new within the block: True when the stream is over for this client
        (expired, finished, or ended here because its owner died)."""
        status = await self.log.status(sid)
        if status is None:
            await client.send(
                relay_error_frame("stream_expired", "the stream is no longer kept", stream_id=sid)
            )
            return True
        if status.finished and status.last_seq <= delivered:
            return True
        if not status.owner_alive:
            await self._end_orphaned(client, sid, delivered, status)
            return True
        await client.idle_tick()
        return False

    async def _send_gap(self, client: Client, sid: str, delivered: int, first: int) -> None:
        self.metrics.errors["resume_gap"] += 1
        await client.send(
            relay_error_frame(
                "resume_gap",
                f"events {delivered + 1}..{first - 1} are no longer kept",
                stream_id=sid,
            )
        )

    def _bounds(self, client: Client) -> StreamBounds:
        cfg = self.config
        return StreamBounds(
            max_errors=cfg.max_stream_errors,
            max_done_bytes=cfg.max_done_bytes,
            logger=client.logger,
        )

    async def _end_orphaned(
        self, client: Client, sid: str, delivered: int, status: StreamStatus
    ) -> None:
        """End a stream whose owner died: the rest of its log, then ``error`` (``owner_lost``)
        and ``done`` with the answer rebuilt from the log.

        Nobody can append to the log any more (only the owner may), so these two events are
        synthesised by every reader; they depend only on the log's content, so every client
        of the stream, on any instance, gets the same ones with the same ``seq``."""
        # The owner is gone: the log cannot grow, one non-blocking read is all of it.
        logged = await self.log.read(sid, 0)
        tail = [e for e in logged if e.seq > delivered]
        if tail:
            if tail[0].seq > delivered + 1:
                await self._send_gap(client, sid, delivered, tail[0].seq)
            for entry in tail:
                await client.send(envelope(sid, entry.seq, entry.payload), entry.seq)
                self.metrics.events_sent += 1
                delivered = entry.seq
                if is_done_payload(entry.payload):
                    return  # it did finish after all (the status raced with the last write)
        last = max(delivered, status.last_seq, logged[-1].seq if logged else 0)
        error = ErrorEvent(
            code="owner_lost",
            message=(
                "the relay instance running this stream stopped before it finished; "
                "the answer is partial"
            ),
            retryable=True,
            stage="relay",
        )
        self.metrics.errors["owner_lost"] += 1
        client.logger.info("relay.stream.owner_lost", stream_id=sid, owner=status.owner, last=last)
        answer = rebuild_answer(logged, error)
        done = self._bounds(client).final_payload(DoneEvent(answer=answer))
        await client.send(envelope(sid, last + 1, orjson.dumps(error)), last + 1)
        await client.send(envelope(sid, last + 2, done), last + 2)
        self.metrics.events_sent += 2

    async def _end_on_log_error(
        self, client: Client, sid: str, delivered: int, exc: StreamciteError
    ) -> None:
        """The log could not be read: tell the client (``error`` with the log's code) and end
        the stream with ``done`` — the answer this client received, when the log can still
        say it, else an empty one — rather than leaving the client waiting."""
        code = exc.code
        self.metrics.errors[code] += 1
        client.logger.warning(
            "relay.pump.log_failed", stream_id=sid, code=code, delivered=delivered
        )
        error = ErrorEvent(
            code=code,
            message=f"the relay could not read the stream's log ({code}); the answer is partial",
            retryable=exc.retryable,
            stage="relay",
        )
        try:
            logged = [e for e in await self.log.read(sid, 0) if e.seq <= delivered]
        except StreamciteError:
            logged = []
        answer = rebuild_answer(logged, error)
        await client.send(envelope(sid, delivered + 1, orjson.dumps(error)), delivered + 1)
        payload = self._bounds(client).final_payload(DoneEvent(answer=answer))
        await client.send(envelope(sid, delivered + 2, payload), delivered + 2)
        self.metrics.events_sent += 2
