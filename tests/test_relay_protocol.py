"""The relay over real loopback sockets: WebSocket and SSE clients, embedded backend, fakes.

Every test starts its own relay (and backend) on 127.0.0.1 port 0. Waits are bounded;
nothing here asserts on timing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from structlog.testing import capture_logs

from streamcite import Timeouts, stream_chat
from streamcite.core.errors import StreamciteError
from streamcite.core.events import ErrorEvent, MetaEvent, TokenEvent
from streamcite.local.server import BackendConfig, LocalBackend
from streamcite.relay.memlog import MemoryStreamLog
from streamcite.relay.protocol import (
    AskMessage,
    CancelMessage,
    ProtocolError,
    ResumeMessage,
    envelope,
    is_done_payload,
    parse_client_message,
)
from streamcite.relay.server import RelayConfig, RelayServer
from streamcite.relay.streamlog import LogEntry, StreamStatus
from tests._relay_fixtures import (
    RawWs,
    RelayClient,
    RelayRefused,
    eventually,
    fake_upstream,
    read_sse,
    relay,
    seqs_of,
    text_of,
    ws_client,
)

QUESTION = "How many days can I work remotely?"
FAST = Timeouts(connect=2, first_token=5, idle=5, total=30)


@contextlib.asynccontextmanager
async def backend(**kw: Any) -> AsyncIterator[LocalBackend]:
    async with LocalBackend(BackendConfig(**kw)) as be:
        yield be


async def direct_answer(be: LocalBackend, question: str = QUESTION) -> str:
    """The backend's answer, asked directly (no relay), as the reference text."""
    req = {
        "model": "streamcite-local",
        "messages": [{"role": "user", "content": question}],
        "stream": True,
    }
    async with stream_chat(req, base_url=be.base_url, transport="aiohttp") as s:
        return (await s.until_done()).text


def assert_contiguous(events: list[dict[str, Any]]) -> None:
    seqs = seqs_of(events)
    assert seqs == list(range(1, len(seqs) + 1)), seqs
    assert events[-1]["type"] == "done"
    assert [e["type"] for e in events].count("done") == 1


# The StreamLog contract (seq, reads, blocking, retention, bounds, cancel) of the in-memory
# log and the Redis log: test_streamlog_contract.py; the memory log's own bounds:
# test_memlog_bounds.py.


# -- message parsing and framing -----------------------------------------------------------


def test_parse_client_messages() -> None:
    ask = parse_client_message(
        b'{"type":"ask","question":"  Why?  ","ref":"r1","options":{"marker_mode":"strip","grounding":false}}'
    )
    assert isinstance(ask, AskMessage)
    assert (ask.question, ask.ref, ask.options.marker_mode, ask.options.grounding) == (
        "Why?",
        "r1",
        "strip",
        False,
    )
    assert parse_client_message('{"type":"cancel","stream_id":"abc_-1"}') == CancelMessage("abc_-1")
    assert parse_client_message('{"type":"resume","stream_id":"x","after_seq":7}') == ResumeMessage(
        "x", 7
    )


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"{not json", "bad_json"),
        (b"[1,2]", "bad_message"),
        (b'{"type":"shout"}', "unknown_type"),
        (b'{"question":"q"}', "bad_message"),
        (b'{"type":"ask","question":"   "}', "empty_question"),
        (b'{"type":"ask","question":"q","base_url":"http://evil"}', "bad_message"),
        (b'{"type":"ask","question":"q","options":{"base_url":"http://evil"}}', "bad_option"),
        (b'{"type":"ask","question":"q","options":{"model":"gpt-5"}}', "bad_option"),
        (b'{"type":"ask","question":"q","options":{"marker_mode":"html"}}', "bad_option"),
        (b'{"type":"ask","question":"q","options":{"grounding":"yes"}}', "bad_option"),
        (b'{"type":"ask","question":"q","options":{"faults":"a\\nb"}}', "bad_option"),
        (b'{"type":"ask","question":"q","ref":"\\u0000"}', "bad_message"),
        (b'{"type":"cancel","stream_id":"../../etc"}', "bad_message"),
        (b'{"type":"resume","stream_id":"x","after_seq":-1}', "bad_message"),
        (b'{"type":"resume","stream_id":"x","after_seq":true}', "bad_message"),
        (b'{"type":"ask","question":"' + b"x" * 101 + b'"}', "question_too_long"),
        (b'{"type":"ask","question":"' + b"x" * 300 + b'"}', "message_too_large"),
    ],
)
def test_parse_client_message_refusals(data: bytes, code: str) -> None:
    with pytest.raises(ProtocolError) as err:
        parse_client_message(data, max_bytes=256, max_question_chars=100)
    assert err.value.code == code


@given(
    st.from_regex(r"[A-Za-z0-9_-]{1,64}", fullmatch=True),
    st.integers(1, 2**53),
    st.text(max_size=50),
)
def test_envelope_is_the_event_with_stream_id_and_seq(sid: str, seq: int, text: str) -> None:
    for event in (
        TokenEvent(index=0, text=text, display=text),
        MetaEvent(id=text),
        ErrorEvent(message=text),
    ):
        payload = orjson.dumps(event)
        framed = orjson.loads(envelope(sid, seq, payload))
        assert framed == {"stream_id": sid, "seq": seq, **orjson.loads(payload)}
        assert list(framed)[:3] == ["stream_id", "seq", "type"]
    assert is_done_payload(b'{"type":"done","answer":{}}')
    assert not is_done_payload(orjson.dumps(TokenEvent(text='"type":"done"')))


def test_config_validation_and_secret_free_repr() -> None:
    cfg = RelayConfig(base_url="http://127.0.0.1:1/v1", api_key="sk-SECRET", token="tok-SECRET")
    assert "SECRET" not in repr(cfg)
    with pytest.raises(ValueError):
        RelayConfig(base_url="file:///etc/passwd")
    with pytest.raises(ValueError):
        RelayConfig(base_url="http://x/v1", max_streams_total=0)


# -- WebSocket: ask, many streams ----------------------------------------------------------


async def test_ws_ask_streams_the_backends_answer() -> None:
    async with backend(token_delay=0.002) as be, relay(be.base_url) as server:
        expected = await direct_answer(be)
        async with ws_client(server) as client:
            assert client.hello is not None and client.hello["protocol"] == 1
            assert client.hello["limits"]["max_question_chars"] == 4000
            sid = await client.ask(QUESTION)
            await client.until_done(sid)
            events = client.events(sid)
        assert_contiguous(events)
        types = [e["type"] for e in events]
        assert types[0] == "meta" and "citation_ref" in types and "citations" in types
        assert text_of(events) == expected
        assert events[-1]["answer"]["text"] == expected
        assert server.relay.active_streams == 0


async def test_ws_several_streams_on_one_connection() -> None:
    questions = [QUESTION, "What is the travel expense policy?", "Qual è il regolamento?"]
    async with backend(token_delay=0.003) as be, relay(be.base_url) as server:
        expected = {q: await direct_answer(be, q) for q in questions}
        async with ws_client(server) as client:
            sids = {}
            for q in questions:  # all three run at once
                sids[q] = await client.ask(q)
            done: set[str] = set()
            while len(done) < len(questions):
                frame = await client.recv()
                if frame.get("type") == "done":
                    done.add(frame["stream_id"])
        assert len(set(sids.values())) == 3
        owners = [f["stream_id"] for f in client.frames if f.get("seq")]
        # interleaved on the wire, yet each stream is complete and in order
        assert len({owners[i] for i in range(min(len(owners), 12))}) >= 1
        for q, sid in sids.items():
            events = client.events(sid)
            assert_contiguous(events)
            assert text_of(events) == expected[q]


async def test_per_connection_and_total_stream_caps() -> None:
    async with (
        fake_upstream(delay=0.05, tokens=["x"] * 100) as up,
        relay(up.url + "/v1", max_streams_per_connection=2, max_streams_total=3) as server,
        ws_client(server) as a,
        ws_client(server) as b,
    ):
        await a.ask("q1")
        await a.ask("q2")
        with pytest.raises(RelayRefused) as refused:
            await a.ask("q3")
        assert refused.value.frame["code"] == "too_many_streams"
        await b.ask("q4")
        with pytest.raises(RelayRefused) as busy:
            await b.ask("q5")
        assert busy.value.frame["code"] == "relay_busy"
        assert busy.value.frame["retryable"] is True


# -- cancel -------------------------------------------------------------------------------


async def test_cancel_stops_the_upstream_request() -> None:
    async with (
        fake_upstream(delay=0.02, tokens=[f" t{i}" for i in range(500)]) as up,
        relay(up.url + "/v1") as server,
        ws_client(server) as client,
    ):
        sid = await client.ask("q")
        await client.until(lambda o: o.get("type") == "token" and o["seq"] >= 4)
        await client.send({"type": "cancel", "stream_id": sid})
        await client.until_done(sid)
        events = client.events(sid)
        assert_contiguous(events)
        errors = [e for e in events if e["type"] == "error"]
        assert [e["code"] for e in errors] == ["cancelled"]
        assert events[-1]["answer"]["errors"][-1]["code"] == "cancelled"
        assert text_of(events) == events[-1]["answer"]["text"]
        await eventually(lambda: up.open_streams == 0, 5)
        assert (up.requests, up.completed, up.closed_by_client) == (1, 0, 1)
        assert server.relay.active_streams == 0
        # cancelling again, or an unknown stream, is harmless / reported
        await client.send({"type": "cancel", "stream_id": sid})
        await client.send({"type": "cancel", "stream_id": "no-such-stream"})
        err = await client.until(lambda o: o.get("type") == "error" and o.get("seq") is None)
        assert err["code"] == "unknown_stream" and err["stream_id"] == "no-such-stream"


async def test_disconnect_without_resume_cancels_after_grace() -> None:
    async with (
        fake_upstream(delay=0.02, tokens=[f" t{i}" for i in range(500)]) as up,
        relay(up.url + "/v1", resume_grace=0.2) as server,
    ):
        async with ws_client(server) as client:
            sid = await client.ask("q")
            await client.until(lambda o: o.get("type") == "token")
        await eventually(lambda: not (up.open_streams or server.relay.active_streams), 5)
        assert up.closed_by_client == 1 and up.completed == 0
        # the log still holds the stream, ended with "abandoned" + done
        async with ws_client(server) as late:
            await late.send({"type": "resume", "stream_id": sid, "after_seq": 0})
            await late.until_done(sid)
            events = late.events(sid)
        assert_contiguous(events)
        assert events[-2]["type"] == "error" and events[-2]["code"] == "abandoned"


# -- resume --------------------------------------------------------------------------------


async def test_resume_after_forced_disconnect_is_exactly_once() -> None:
    async with backend(token_delay=0.02) as be, relay(be.base_url) as server:
        expected = await direct_answer(be)
        session = aiohttp.ClientSession()
        try:
            async with ws_client(server, session) as first:
                sid = await first.ask(QUESTION)
                await first.until(lambda o: o.get("type") == "token" and o["seq"] >= 6)
                assert server.relay.drop_clients() == 1  # a network cut, server side
                with pytest.raises(ConnectionError):
                    while True:
                        await first.recv(limit=5)
            before = first.events(sid)
            last = before[-1]["seq"]
            async with ws_client(server, session) as second:
                await second.send({"type": "resume", "stream_id": sid, "after_seq": last})
                accepted = await second.until(lambda o: o.get("type") == "accepted")
                assert accepted["resumed"] is True and accepted["stream_id"] == sid
                await second.until_done(sid)
                after = second.events(sid)
        finally:
            await session.close()
        assert after[0]["seq"] == last + 1
        events = before + after
        assert_contiguous(events)  # no gap, no duplicate
        assert text_of(events) == expected


async def test_resume_errors() -> None:
    async with (
        fake_upstream() as up,
        relay(up.url + "/v1") as server,
        ws_client(server) as client,
    ):
        await client.send({"type": "resume", "stream_id": "unknown", "after_seq": 0})
        err = await client.until(lambda o: o.get("type") == "error")
        assert err["code"] == "unknown_stream" and err["seq"] is None
        sid = await client.ask("q")
        await client.until_done(sid)
        await client.send({"type": "resume", "stream_id": sid, "after_seq": 999})
        err = await client.until(lambda o: o.get("type") == "error")
        assert err["code"] == "bad_seq"
        # a finished stream can be replayed from any point while it is retained
        await client.send({"type": "resume", "stream_id": sid, "after_seq": 3})
        await client.until(lambda o: o.get("type") == "accepted")
        await client.until_done(sid)
        replay = [f for f in client.frames[-200:] if f.get("stream_id") == sid and f.get("seq")]
        assert replay[-1]["type"] == "done"


# -- a log shared by two relays, with a dying owner and failing reads ---------------------------


class FaultyLog:
    """A :class:`MemoryStreamLog` shared by several relays (as Redis is), plus faults.

    ``kill(owner)``: that instance's writes are lost from now on and its unfinished streams
    report ``owner_alive=False``, as a crashed owner's lapsed lease does. ``fail_reads``:
    that many next ``read`` calls raise ``redis_unavailable``. ``fail_appends_after``: an
    ``append`` beyond that many entries of a stream raises ``redis_unavailable`` (the entry
    still reaches this process's readers, as the Redis log does for the owner's clients).
    """

    def __init__(self) -> None:
        self.mem = MemoryStreamLog()
        self.dead: set[str] = set()
        self.owners: dict[str, str] = {}
        self.fail_reads = 0
        self.fail_appends_after: int | None = None

    @staticmethod
    def _unavailable() -> StreamciteError:
        return StreamciteError("Redis at test:0/0 unavailable", code="redis_unavailable",
                               retryable=True)  # fmt: skip

    def kill(self, owner: str) -> None:
        self.dead.add(owner)

    async def open_stream(self, stream_id: str, *, owner: str) -> None:
        self.owners[stream_id] = owner
        await self.mem.open_stream(stream_id, owner=owner)

    async def append(self, stream_id: str, payload: bytes) -> int:
        if self.owners.get(stream_id) in self.dead:
            raise self._unavailable()
        seq = await self.mem.append(stream_id, payload)
        if self.fail_appends_after is not None and seq > self.fail_appends_after:
            raise self._unavailable()
        return seq

    async def finish(self, stream_id: str) -> None:
        if self.owners.get(stream_id) not in self.dead:
            await self.mem.finish(stream_id)

    async def read(
        self, stream_id: str, after_seq: int, *, block: float | None = None
    ) -> list[LogEntry]:
        if self.fail_reads > 0:
            self.fail_reads -= 1
            raise self._unavailable()
        return await self.mem.read(stream_id, after_seq, block=block)

    async def status(self, stream_id: str) -> StreamStatus | None:
        st = await self.mem.status(stream_id)
        if st is None or st.finished or self.owners.get(stream_id) not in self.dead:
            return st
        return StreamStatus(last_seq=st.last_seq, finished=False, owner=st.owner,
                            owner_alive=False)  # fmt: skip

    async def request_cancel(self, stream_id: str) -> None:
        await self.mem.request_cancel(stream_id)

    def on_cancel(self, callback: Any) -> None:
        self.mem.on_cancel(callback)

    async def aclose(self) -> None:
        await self.mem.aclose()


@contextlib.asynccontextmanager
async def relays_sharing(
    log: FaultyLog, base_url: str, names: tuple[str, ...] = ("relay-a", "relay-b")
) -> AsyncIterator[list[RelayServer]]:
    servers = [
        RelayServer(
            RelayConfig(
                base_url=base_url,
                instance_id=name,
                retries=0,
                shutdown_grace=0.5,
                heartbeat_interval=0.5,
            ),
            log=log,
            shutdown_timeout=2.0,
        )
        for name in names
    ]
    try:
        for server in servers:
            await server.start()
        yield servers
    finally:
        for server in servers:
            await asyncio.wait_for(server.stop(), 30)
        await log.aclose()


async def test_dead_owner_ends_the_stream_with_owner_lost_and_the_same_partial_answer() -> None:
    log = FaultyLog()
    async with (
        fake_upstream(delay=0.02, tokens=[f" w{i}" for i in range(400)]) as up,
        relays_sharing(log, up.url + "/v1") as (a, b),
        ws_client(a) as on_a,
        ws_client(b) as on_b,
    ):
        sid = await on_a.ask("q")
        await on_b.send({"type": "resume", "stream_id": sid, "after_seq": 0})
        await on_b.until(lambda o: o.get("stream_id") == sid and o.get("seq", 0) >= 4)
        log.kill("relay-a")  # A's writes stop reaching the log; its lease "lapses"
        done_a = await on_a.until_done(sid)
        done_b = await on_b.until_done(sid)
        status = await log.mem.status(sid)
        assert status is not None
        # A client that holds events the log never got resumes past its end: not bad_seq.
        async with ws_client(b) as ahead:
            await ahead.send({"type": "resume", "stream_id": sid, "after_seq": status.last_seq + 3})
            accepted = await ahead.until(lambda o: o.get("stream_id") == sid)
            assert accepted["type"] == "accepted", accepted
            done_ahead = await ahead.until_done(sid)
            ahead_events = ahead.events(sid)
    events_a, events_b = on_a.events(sid), on_b.events(sid)
    # Both instances synthesised the same ending from the log: same events, same seqs.
    assert events_a == events_b
    assert_contiguous(events_a)
    assert events_a[-2]["seq"] == status.last_seq + 1 and done_a["seq"] == status.last_seq + 2
    errors = [e for e in events_a if e["type"] == "error"]
    assert [(e["code"], e["retryable"], e["stage"]) for e in errors] == [
        ("owner_lost", True, "relay")
    ]
    answer = done_b["answer"]
    assert (
        answer["text"]
        == text_of(events_b)
        == "".join(f" w{i}" for i in range(len(answer["text"].split())))
    )
    assert 0 < len(answer["text"]) < len(up.answer)
    assert [e["code"] for e in answer["errors"]] == ["owner_lost"]
    assert answer["complete"] is False
    assert [e["type"] for e in ahead_events] == ["error", "done"]
    assert ahead_events[0]["seq"] == status.last_seq + 4 and ahead_events[0]["code"] == "owner_lost"
    assert done_ahead["answer"]["text"] == answer["text"]
    assert a.relay.metrics.errors["owner_lost"] == 1 and b.relay.metrics.errors["owner_lost"] == 2


async def test_log_read_failure_ends_the_client_stream_with_its_error_and_done() -> None:
    log = FaultyLog()
    async with (
        fake_upstream(delay=0.02, tokens=[" t"] * 200) as up,
        relays_sharing(log, up.url + "/v1", ("relay-a",)) as (a,),
        ws_client(a) as client,
    ):
        sid = await client.ask("q")
        await client.until(lambda o: o.get("stream_id") == sid and o.get("seq", 0) >= 3)
        log.fail_reads = 1  # the pump's next read fails; the log answers again afterwards
        done = await client.until_done(sid)
        events = client.events(sid)
        await client.send({"type": "cancel", "stream_id": sid})
    assert_contiguous(events)
    error = events[-2]
    assert (error["type"], error["code"], error["retryable"]) == (
        "error",
        "redis_unavailable",
        True,
    )
    assert "test:0" not in error["message"]  # the log's address stays on the server
    assert done["answer"]["text"] == text_of(events)
    assert [e["code"] for e in done["answer"]["errors"]] == ["redis_unavailable"]
    assert a.relay.metrics.errors["redis_unavailable"] == 1


async def test_log_write_failure_ends_the_stream_with_the_logs_error_code() -> None:
    log = FaultyLog()
    log.fail_appends_after = 5
    async with (
        fake_upstream(tokens=[" t"] * 50) as up,
        relays_sharing(log, up.url + "/v1", ("relay-a",)) as (a,),
        ws_client(a) as client,
    ):
        sid = await client.ask("q")
        done = await client.until_done(sid)
        events = client.events(sid)
        await eventually(lambda: a.relay.metrics.streams_finished["error"] == 1)
    assert_contiguous(events)
    errors = [e for e in events if e["type"] == "error"]
    assert [(e["code"], e["retryable"]) for e in errors] == [("redis_unavailable", True)]
    assert [e["code"] for e in done["answer"]["errors"]] == ["redis_unavailable"]
    assert done["answer"]["text"] == text_of(events)


# -- backpressure --------------------------------------------------------------------------


async def _read_raw_until_close(raw: RawWs) -> tuple[list[dict[str, Any]], int | None]:
    frames: list[dict[str, Any]] = []
    with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError, TimeoutError):
        while True:
            op, payload = await raw.read_frame(limit=5)
            if op == 8:
                await raw.send_close()
                return frames, int.from_bytes(payload[:2], "big")
            frames.append(orjson.loads(payload))
    return frames, None


async def _resume_rest(server: Any, sid: str, after: int) -> list[dict[str, Any]]:
    async with ws_client(server, max_msg_size=0) as again:
        await again.send({"type": "resume", "stream_id": sid, "after_seq": after})
        await again.until_done(sid, limit=30)
        return again.events(sid)


async def test_stalled_client_is_closed_and_never_slows_the_others() -> None:
    tokens = ["x" * 2000] * 200  # ~400 kB of events, written as fast as possible
    async with (
        fake_upstream(tokens=tokens) as up,
        relay(
            up.url + "/v1", send_timeout=2.0, client_buffer_bytes=16384, client_sndbuf=8192
        ) as server,
    ):
        raw = RawWs("127.0.0.1", server.port, rcvbuf=4096)
        await raw.connect()
        await raw.send_text('{"type":"ask","question":"slow","ref":"slow"}')  # never reads
        async with ws_client(server, max_msg_size=0) as fast:
            sid_fast = await fast.ask("fast")
            await fast.until_done(sid_fast, limit=30)
            assert_contiguous(fast.events(sid_fast))
            assert len([e for e in fast.events(sid_fast) if e["type"] == "token"]) == 200
        # the stalled client's upstream was read to the end all the same
        await eventually(
            lambda: up.completed == 2 and server.relay.metrics.client_closed["too_slow"] > 0
        )
        frames, close_code = await _read_raw_until_close(raw)
        raw.close()
        assert close_code == 4008
        sid = next(f for f in frames if f.get("type") == "accepted")["stream_id"]
        got = [f for f in frames if f.get("stream_id") == sid and f.get("seq")]
        assert got and got[-1]["type"] != "done"
        assert seqs_of(got) == list(range(1, len(got) + 1))
        # it reconnects and resumes where it stopped, exactly once
        assert_contiguous(got + await _resume_rest(server, sid, got[-1]["seq"]))


async def test_client_falling_behind_is_closed_and_can_resume() -> None:
    # A steady producer and a client that reads a little, slowly: every wait for its
    # socket is short (no send timeout), but it falls further and further behind.
    tokens = ["y" * 2000] * 300
    async with (
        fake_upstream(tokens=tokens, delay=0.002) as up,
        relay(
            up.url + "/v1",
            send_timeout=30,
            client_buffer_events=50,
            client_buffer_bytes=16384,
            client_sndbuf=8192,
        ) as server,
    ):
        raw = RawWs("127.0.0.1", server.port, rcvbuf=4096)
        await raw.connect()
        await raw.send_text('{"type":"ask","question":"slow reader","ref":"r"}')
        frames: list[dict[str, Any]] = []
        close_code = None
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            async with asyncio.timeout(60):
                while True:
                    op, payload = await raw.read_frame(limit=10)
                    if op == 8:
                        close_code = int.from_bytes(payload[:2], "big")
                        await raw.send_close()
                        break
                    frames.append(orjson.loads(payload))
                    await asyncio.sleep(0.005)
        raw.close()
        assert close_code == 4008
        # the upstream is read to its end regardless
        await eventually(lambda: up.completed == 1)
        sid = next(f for f in frames if f.get("type") == "accepted")["stream_id"]
        got = [f for f in frames if f.get("stream_id") == sid and f.get("seq")]
        assert seqs_of(got) == list(range(1, len(got) + 1))
        assert_contiguous(got + await _resume_rest(server, sid, got[-1]["seq"]))


# -- security ------------------------------------------------------------------------------


async def test_token_required_on_every_transport() -> None:
    async with fake_upstream() as up, relay(up.url + "/v1", token="s3cret-token") as server:
        async with aiohttp.ClientSession() as session:
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await session.ws_connect(server.ws_url)
            assert refused.value.status == 401
            with pytest.raises(aiohttp.WSServerHandshakeError):
                await session.ws_connect(server.ws_url, headers={"Authorization": "Bearer wrong"})
            for kw in (
                {"headers": {"Authorization": "Bearer s3cret-token"}},
                {"params": {"token": "s3cret-token"}},
            ):
                async with ws_client(server, session, **kw) as client:
                    sid = await client.ask("q")
                    await client.until_done(sid)
            async with (
                aiohttp.ClientSession(cookies={"streamcite_token": "s3cret-token"}) as jar,
                ws_client(server, jar) as client,
            ):
                assert client.hello is not None
            resp = await session.post(server.url + "/sse", data=b'{"type":"ask","question":"q"}')
            assert resp.status == 401
            assert (await session.get(server.url + "/metrics")).status == 401
            assert (await session.get(server.url + "/healthz")).status == 200
            # the page sets the cookie when opened with the right token only
            page = await session.get(server.url + "/", params={"token": "s3cret-token"})
            assert "streamcite_token" in page.cookies
            assert "HttpOnly" in page.headers["Set-Cookie"]
            page = await session.get(server.url + "/", params={"token": "wrong"})
            assert "streamcite_token" not in page.cookies
        assert server.relay.metrics.rejected["unauthorized"] >= 4


async def test_origin_allow_list() -> None:
    async with fake_upstream() as up:
        async with relay(up.url + "/v1") as server, aiohttp.ClientSession() as session:
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await session.ws_connect(server.ws_url, origin="http://evil.example")
            assert refused.value.status == 403
            async with ws_client(server, session, origin=server.url):
                pass  # same origin is fine
            async with ws_client(server, session):
                pass  # no Origin: not a browser
            resp = await session.post(
                server.url + "/sse",
                data=b'{"type":"ask","question":"q"}',
                headers={"Origin": "http://evil.example"},
            )
            assert resp.status == 403
        async with (
            relay(up.url + "/v1", allowed_origins=("https://app.example",)) as server,
            aiohttp.ClientSession() as session,
        ):
            async with ws_client(server, session, origin="https://app.example"):
                pass
            with pytest.raises(aiohttp.WSServerHandshakeError):
                await session.ws_connect(server.ws_url, origin=server.url)


async def test_oversize_and_invalid_messages() -> None:
    async with (
        fake_upstream() as up,
        relay(up.url + "/v1", max_message_bytes=1024, max_question_chars=50) as server,
    ):
        async with ws_client(server) as client:
            await client.send({"type": "ask", "question": "x" * 60})
            err = await client.until(lambda o: o.get("type") == "error")
            assert err["code"] == "question_too_long" and err["stage"] == "relay"
            await client.ws.send_str("not json")
            assert (await client.until(lambda o: o.get("type") == "error"))["code"] == "bad_json"
            await client.ws.send_bytes(b"\x00\x01")
            assert (await client.until(lambda o: o.get("type") == "error"))["code"] == "bad_message"
            # still usable after refusals
            sid = await client.ask("short")
            await client.until_done(sid)
            await client.ws.send_str('{"type":"ask","question":"' + "y" * 2000 + '"}')
            msg = await client.ws.receive(timeout=5)
            assert msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
            assert client.ws.close_code == 1009
        async with aiohttp.ClientSession() as session:
            resp = await session.post(server.url + "/sse", data=b"x" * 5000)
            assert resp.status == 413
            resp = await session.post(server.url + "/sse", data=b'{"type":"nope"}')
            assert resp.status == 400
            assert (await resp.json())["code"] == "unknown_type"


async def test_client_cannot_choose_the_upstream_and_keys_never_leak() -> None:
    key = "sk-relay-TOPSECRET-123"
    error_body = orjson.dumps({"error": {"message": f"bad key {key}"}})
    async with fake_upstream(status=401, error_body=error_body) as up:
        with capture_logs() as logs:
            async with relay(up.url + "/v1", api_key=key) as server, ws_client(server) as client:
                await client.send(
                    {"type": "ask", "question": "q", "options": {"base_url": "http://evil"}}
                )
                err = await client.until(lambda o: o.get("type") == "error")
                assert err["code"] == "bad_option"
                sid = await client.ask("q", faults="status=500")  # ignored: faults not allowed
                await client.until_done(sid)
        assert up.requests == 1
        assert up.seen_headers[0]["Authorization"] == f"Bearer {key}"
        assert "X-Streamcite-Fault" not in up.seen_headers[0]
        assert any(f.get("code") == "unauthorized" for f in client.frames)
        assert key not in "".join(client.raw)
        assert key not in repr(logs) and key not in repr(server.relay.config)


# -- upstream faults from the embedded backend ------------------------------------------------


@pytest.mark.parametrize(
    ("faults", "code", "tokens_expected"),
    [
        ("status=503", "upstream_unavailable", False),
        ("status=429;retry_after=0", "rate_limited", False),
        ("drop_after=3", "connection_lost", True),
        ("error_at=4", None, True),
        ("malformed_at=2", None, True),
    ],
)
async def test_upstream_faults_end_with_error_and_done(
    faults: str, code: str | None, tokens_expected: bool
) -> None:
    async with (
        backend() as be,
        relay(be.base_url, allow_client_faults=True, timeouts=FAST) as server,
        ws_client(server) as client,
    ):
        sid = await client.ask(QUESTION, faults=faults)
        await client.until_done(sid)
        events = client.events(sid)
    assert_contiguous(events)
    errors = [e for e in events if e["type"] == "error"]
    assert errors, faults
    if code is not None:
        assert errors[0]["code"] == code
    assert any(e["type"] == "token" for e in events) == tokens_expected
    assert [e["code"] for e in events[-1]["answer"]["errors"]] == [e["code"] for e in errors]
    assert server.relay.metrics.errors[errors[0]["code"]] >= 1


# -- SSE -----------------------------------------------------------------------------------


async def test_sse_ask_cut_and_resume_with_last_event_id() -> None:
    async with backend(token_delay=0.02) as be, relay(be.base_url) as server:
        expected = await direct_answer(be)
        async with aiohttp.ClientSession() as session:
            resp = await session.post(
                server.url + "/sse", data=orjson.dumps({"type": "ask", "question": QUESTION})
            )
            assert resp.status == 200
            assert resp.headers["Content-Type"].startswith("text/event-stream")
            first = await read_sse(resp, stop_after=8)
            resp.close()  # the client goes away mid-answer
            accepted = orjson.loads(first[0].data)
            assert accepted["type"] == "accepted" and first[0].id == ""
            sid = accepted["stream_id"]
            got = [orjson.loads(e.data) for e in first[1:]]
            assert [int(e.id) for e in first[1:]] == seqs_of(got)
            last = got[-1]["seq"]
            resp = await session.post(
                server.url + "/sse",
                data=orjson.dumps({"type": "resume", "stream_id": sid}),
                headers={"Last-Event-ID": str(last)},
            )
            rest_events = await read_sse(resp)
            rest = [orjson.loads(e.data) for e in rest_events[1:]]
            # EventSource-style GET resume from the middle, too
            resp = await session.get(
                server.url + "/sse", params={"stream_id": sid, "after_seq": "5"}
            )
            replay = [orjson.loads(e.data) for e in (await read_sse(resp))[1:]]
            assert replay[0]["seq"] == 6 and replay[-1]["type"] == "done"
            resp = await session.get(server.url + "/sse", params={"stream_id": "nope"})
            assert resp.status == 404
    events = got + rest
    assert_contiguous(events)
    assert text_of(events) == expected


async def test_sse_cancel() -> None:
    async with (
        fake_upstream(delay=0.02, tokens=[" t"] * 500) as up,
        relay(up.url + "/v1") as server,
        aiohttp.ClientSession() as session,
    ):
        resp = await session.post(server.url + "/sse", data=b'{"type":"ask","question":"q"}')
        dec_events = await read_sse(resp, stop_after=4)
        sid = orjson.loads(dec_events[0].data)["stream_id"]
        c = await session.post(
            server.url + "/sse", data=orjson.dumps({"type": "cancel", "stream_id": sid})
        )
        assert c.status == 202
        rest = [orjson.loads(e.data) for e in await read_sse(resp)]
        assert rest[-1]["type"] == "done"
        assert any(e.get("code") == "cancelled" for e in rest)
        await eventually(lambda: up.open_streams == 0, 5)
        assert up.closed_by_client == 1


# -- heartbeats, metrics, static files --------------------------------------------------------


async def test_heartbeats_on_an_idle_connection() -> None:
    async with (
        fake_upstream() as up,
        relay(up.url + "/v1", heartbeat_interval=0.1) as server,
        ws_client(server) as client,
    ):
        beats = [await client.until(lambda o: o.get("type") == "heartbeat") for _ in range(2)]
    assert all(isinstance(b["ts"], float) and "seq" not in b for b in beats)


async def test_metrics_exposition() -> None:
    async with backend() as be, relay(be.base_url) as server:
        async with ws_client(server) as client:
            sid = await client.ask(QUESTION)
            await client.until_done(sid)
        async with aiohttp.ClientSession() as session:
            resp = await session.get(server.url + "/metrics")
            text = await resp.text()
            health = await (await session.get(server.url + "/healthz")).json()
    assert resp.headers["Content-Type"].startswith("text/plain")
    assert health["status"] == "ok"
    samples: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        name, value = line.rsplit(" ", 1)
        samples[name] = float(value)
    assert samples["streamcite_relay_active_streams"] == 0
    assert samples["streamcite_relay_streams_started_total"] == 1
    assert samples['streamcite_relay_streams_finished_total{outcome="ok"}'] == 1
    assert samples["streamcite_relay_time_to_first_token_seconds_count"] == 1
    assert samples['streamcite_relay_stage_seconds_count{stage="total"}'] == 1
    assert samples['streamcite_relay_time_to_first_token_seconds_bucket{le="+Inf"}'] == 1
    assert samples["streamcite_relay_events_sent_total"] == len(client.events(sid))


async def test_page_and_static_files_are_served_with_a_strict_csp() -> None:
    async with (
        fake_upstream() as up,
        relay(up.url + "/v1") as server,
        aiohttp.ClientSession() as session,
    ):
        page = await session.get(server.url + "/")
        assert page.status == 200 and "text/html" in page.headers["Content-Type"]
        csp = page.headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert page.headers["X-Content-Type-Options"] == "nosniff"
        js = await session.get(server.url + "/static/app.js")
        assert js.status == 200 and "javascript" in js.headers["Content-Type"]
        assert "innerHTML" not in (await js.text()).replace("never innerHTML", "")
        assert (await session.get(server.url + "/static/")).status in (403, 404)
        assert (await session.get(server.url + "/static/../server.py")).status in (403, 404)


# -- shutdown and leaks --------------------------------------------------------------------


async def test_graceful_shutdown_ends_streams_with_shutdown_error() -> None:
    async with fake_upstream(delay=0.02, tokens=[" t"] * 1000) as up:
        server_cm = relay(up.url + "/v1", shutdown_grace=0.2)
        server = await server_cm.__aenter__()
        try:
            async with ws_client(server) as client:
                sid = await client.ask("q")
                await client.until(lambda o: o.get("type") == "token")
                stopping = asyncio.create_task(server.stop())
                await client.until_done(sid)
                msg = await client.ws.receive(timeout=10)
                assert msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
                assert client.ws.close_code == 1001
                await asyncio.wait_for(stopping, 20)
        finally:
            await server_cm.__aexit__(None, None, None)
        events = client.events(sid)
        assert_contiguous(events)
        assert events[-2]["type"] == "error" and events[-2]["code"] == "shutdown"
        assert events[-2]["retryable"] is True
        assert up.closed_by_client == 1 and up.open_streams == 0


async def test_no_leaked_tasks_or_upstream_connections() -> None:
    async with (
        fake_upstream(delay=0.01, tokens=[" t"] * 300) as up,
        relay(up.url + "/v1", resume_grace=0.0) as server,
    ):
        await asyncio.sleep(0.05)
        baseline = len(asyncio.all_tasks())
        async with aiohttp.ClientSession() as session:
            for _ in range(3):
                async with contextlib.AsyncExitStack() as stack:
                    clients = [
                        await stack.enter_async_context(ws_client(server, session))
                        for _ in range(4)
                    ]
                    sids = [await c.ask("q") for c in clients]
                    for c in clients:
                        await c.until(lambda o: o.get("type") == "token")
                    await clients[0].send({"type": "cancel", "stream_id": sids[0]})
                # leaving the block disconnects the others mid-stream, without resume
        await eventually(
            lambda: (
                not (up.open_streams or server.relay.active_streams or server.relay.client_count)
            )
        )
        await eventually(lambda: len(asyncio.all_tasks()) <= baseline)
        assert len(asyncio.all_tasks()) == baseline
        assert up.open_streams == 0 and up.closed_by_client == 12
        connector = server.relay._session.connector  # type: ignore[union-attr]
        assert connector is not None and not getattr(connector, "_acquired", set())


# -- the command line --------------------------------------------------------------------------


async def test_cli_serves_and_shuts_down_on_sigterm() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "streamcite.cli",
        "relay",
        "--port",
        "0",
        "--grounding",
        "none",
        "--no-sources",
        "--token-delay",
        "0",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "STREAMCITE_RELAY_TOKEN": "cli-token"},
    )
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        assert line.startswith("streamcite relay on http://127.0.0.1:")
        url = line.split()[-1]
        async with aiohttp.ClientSession() as session:
            assert (await session.get(url + "/healthz")).status == 200
            async with session.ws_connect(
                url.replace("http", "ws") + "/ws", headers={"Authorization": "Bearer cli-token"}
            ) as ws:
                client = RelayClient(ws)
                await client.recv()
                sid = await client.ask(QUESTION)
                await client.until_done(sid)
                assert "[1]" in client.events(sid)[-1]["answer"]["text"]
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def test_browser_gate_skips_locally_but_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests import _relay_fixtures

    monkeypatch.setattr(_relay_fixtures, "CHROMIUM", "/nonexistent/chromium")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"install-chromium\.sh"):
        _relay_fixtures.require_chromium()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        _relay_fixtures.require_chromium()
