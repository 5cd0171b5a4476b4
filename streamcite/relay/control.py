"""The client's three requests — ask, cancel, resume — checked and carried out.

Shared by both transports: the WebSocket endpoint answers with frames on the
connection, the SSE endpoint with plain HTTP errors before its event stream starts.
A stream another principal started is answered exactly like one that does not exist.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from streamcite.core.errors import StreamciteError
from streamcite.relay.clients import Client, ClientGone, TooSlow
from streamcite.relay.config import RelayConfig
from streamcite.relay.delivery import bad_seq
from streamcite.relay.guard import Identity, StreamBinder
from streamcite.relay.metrics import RelayMetrics
from streamcite.relay.producer import Producer
from streamcite.relay.protocol import AskMessage, ResumeMessage, accepted_frame, relay_error_frame
from streamcite.relay.quotas import QUOTA_CODE, StreamQuotas
from streamcite.streamlog import StreamLog, StreamStatus

__all__ = ["RESUME_ERRORS", "StreamControl", "log_failed_message"]

RESUME_ERRORS = {
    "unknown_stream": "no such stream (unknown, or expired after its retention time)",
    "bad_seq": "after_seq is past the last event of the stream",
    "too_many_streams": "too many streams on this connection",
}


def log_failed_message(exc: StreamciteError) -> str:
    """The client's message when the log failed."""
    # The exception's own text may name the log's host: clients get the code only.
    return f"the relay's stream log is unavailable ({exc.code}); retry later"


class StreamControl:
    """Admission of new streams, and cancel and resume of existing ones."""

    def __init__(
        self,
        config: RelayConfig,
        log: StreamLog,
        *,
        metrics: RelayMetrics,
        quotas: StreamQuotas,
        binder: StreamBinder,
        producer: Producer,
        accepting: Callable[[], bool],
    ) -> None:
        self.config = config
        self.log = log
        self.metrics = metrics
        self.quotas = quotas
        self.binder = binder
        self.producer = producer
        self.accepting = accepting
        """False once the relay started shutting down."""

    def ask_refusal(self, client: Client) -> tuple[str, str, bool] | None:
        """Why a new stream cannot start now: ``(code, message, retryable)``, or None."""
        cfg = self.config
        if not self.accepting():
            return ("shutting_down", "the relay is shutting down; retry elsewhere", True)
        if len(client.pumps) >= cfg.max_streams_per_connection:
            return (
                "too_many_streams",
                f"at most {cfg.max_streams_per_connection} streams per connection",
                False,
            )
        if len(self.producer.streams) >= cfg.max_streams_total:
            return ("relay_busy", "the relay is at its stream limit; retry later", True)
        if self.quotas.running(client.who.quota_key) >= self.quotas.limit:
            return (QUOTA_CODE, self.quotas.message(), False)
        return None

    async def ask(self, client: Client, msg: AskMessage) -> str | None:
        """Start a stream for a WebSocket client and send ``accepted``; its id, or None."""
        refusal = self.ask_refusal(client)
        if refusal is not None:
            code, message, retryable = refusal
            self.metrics.errors[code] += 1
            await client.send(relay_error_frame(code, message, ref=msg.ref, retryable=retryable))
            return None
        stream = await self.producer.start(msg, client.who)
        try:
            await client.send(accepted_frame(stream.stream_id, msg.ref))
        except (ClientGone, TooSlow):
            self.producer.maybe_abandon(stream)
            raise
        return stream.stream_id

    async def bound_status(self, sid: str, who: Identity) -> StreamStatus | None:
        """The stream's status, or None — also when ``who`` did not start it (a stream of
        another principal is answered exactly like one that does not exist)."""
        if not self.binder.may_use(who, sid):
            return None
        return await self.log.status(sid)

    async def cancel(self, sid: str, who: Identity) -> bytes | None:
        """Route a cancel to the stream's owner; an error frame if the stream is unknown."""
        status = await self.bound_status(sid, who)
        if status is None:
            self.metrics.errors["unknown_stream"] += 1
            return relay_error_frame(
                "unknown_stream", RESUME_ERRORS["unknown_stream"], stream_id=sid
            )
        if not status.finished:
            await self.log.request_cancel(sid)
        return None

    async def resume(self, client: Client, msg: ResumeMessage) -> bool:
        """Check a WebSocket resume, stop the stream's old pump, send ``accepted``; True
        when the caller should start the new pump (else an error frame was sent)."""
        status = await self.bound_status(msg.stream_id, client.who)
        code: str | None = None
        if status is None:
            code = "unknown_stream"
        elif bad_seq(msg.after_seq, status):
            code = "bad_seq"
        elif (
            msg.stream_id not in client.pumps
            and len(client.pumps) >= self.config.max_streams_per_connection
        ):
            code = "too_many_streams"
        if code is not None:
            self.metrics.errors[code] += 1
            await client.send(relay_error_frame(code, RESUME_ERRORS[code], stream_id=msg.stream_id))
            return False
        old = client.pumps.pop(msg.stream_id, None)
        if old is not None:
            old.cancel()
            await asyncio.gather(old, return_exceptions=True)
        self.metrics.resumes += 1
        await client.send(accepted_frame(msg.stream_id, None, resumed=True))
        return True
