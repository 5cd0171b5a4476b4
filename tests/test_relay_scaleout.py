"""Several ``streamcite relay --redis-url`` processes sharing one Redis and one backend.

Real processes on loopback: one ``streamcite serve-local`` (the upstream, slowed down so
that streams are still running when the tests interfere), two or three relay processes with
their stream logs in a throwaway redis-server, and WebSocket clients. A client that moves
from one relay to another must see every event exactly once; a dead owner must end its
streams with ``owner_lost``; a cancel sent anywhere must reach the owner.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

try:
    from _redis_fixtures import RedisServer, free_port, redis_server, redis_server_factory
except ImportError:  # tests/ imported as a package
    from tests._redis_fixtures import (  # noqa: F401  (fixtures, used by name)
        RedisServer,
        free_port,
        redis_server,
        redis_server_factory,
    )

pytestmark = pytest.mark.redis

QUESTION = "How many days a week can I work remotely?"
MODEL = "streamcite-local"
TOKEN_DELAY = 0.08
"""Backend seconds between tokens: an answer takes a few seconds, time enough to interfere."""
GUARD = float(os.environ.get("SCALEOUT_GUARD", "30"))
"""Hang guard of any single wait (not a timing assertion)."""


# -- processes ----------------------------------------------------------------------------


@dataclass
class Proc:
    """A child process started with ``python -m streamcite.cli ...``; its first stdout line
    names the URL it serves."""

    name: str
    args: list[str]
    log_dir: Path
    popen: subprocess.Popen[str] | None = None
    url: str = ""

    def start(self, ready_prefix: str) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        stderr = (self.log_dir / f"{self.name}.stderr").open("w")
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "streamcite.cli", *self.args],
            stdout=subprocess.PIPE,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        stderr.close()
        assert self.popen.stdout is not None
        deadline = time.monotonic() + GUARD
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.popen.stdout], [], [], 0.2)
            if ready:
                line = self.popen.stdout.readline()
                if line.startswith(ready_prefix):
                    self.url = line.split(" on ", 1)[1].strip()
                    return
                if not line:
                    break
            if self.popen.poll() is not None:
                break
        err = (self.log_dir / f"{self.name}.stderr").read_text()[-2000:]
        self.stop()
        raise RuntimeError(f"{self.name} did not start: {err}")

    def kill(self) -> None:
        """SIGKILL: no shutdown, no lease release — a crash."""
        if self.popen is not None and self.popen.poll() is None:
            self.popen.send_signal(signal.SIGKILL)
            self.popen.wait(10)

    def stop(self) -> None:
        if self.popen is None:
            return
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(10)
        if self.popen.stdout is not None:
            self.popen.stdout.close()


@dataclass
class Cluster:
    backend: Proc
    redis_url: str
    log_dir: Path
    relays: list[Proc] = field(default_factory=list)

    def add_relay(self, name: str, *extra: str) -> Proc:
        relay = Proc(
            name,
            [
                "relay",
                "--port",
                "0",
                "--base-url",
                self.backend.url + "/v1",
                "--model",
                MODEL,
                "--grounding",
                "none",
                "--redis-url",
                self.redis_url,
                "--shutdown-grace",
                "1",
                *extra,
            ],
            self.log_dir,
        )
        relay.start("streamcite relay on ")
        self.relays.append(relay)
        return relay

    def stop(self) -> None:
        for relay in self.relays:
            relay.stop()
        self.backend.stop()


@contextlib.contextmanager
def cluster(redis_url: str, log_dir: Path, relays: int) -> Iterator[Cluster]:
    backend = Proc(
        "backend",
        ["serve-local", "--port", "0", "--token-delay", str(TOKEN_DELAY)],
        log_dir,
    )
    backend.start("streamcite local backend on ")
    c = Cluster(backend, redis_url, log_dir)
    try:
        for i in range(relays):
            c.add_relay("relay-" + "ABC"[i])
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def shared(
    redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """Backend + relays A, B, C on the session's Redis (database 5: its own key space)."""
    url = redis_server.url.rsplit("/", 1)[0] + "/5"
    with cluster(url, tmp_path_factory.mktemp("scaleout"), relays=3) as c:
        yield c


# -- clients ------------------------------------------------------------------------------


class Client:
    """A WebSocket client of one relay; keeps every frame it received."""

    def __init__(self, session: aiohttp.ClientSession, relay: Proc) -> None:
        self.session = session
        self.relay = relay
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self.frames: list[dict[str, Any]] = []

    async def __aenter__(self) -> Client:
        ws_url = self.relay.url.replace("http://", "ws://", 1) + "/ws"
        self.ws = await self.session.ws_connect(ws_url, heartbeat=None)
        hello = await self.recv()
        assert hello["type"] == "hello", hello
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self.ws is not None and not self.ws.closed:
            await self.ws.close()

    async def recv(self) -> dict[str, Any]:
        assert self.ws is not None
        msg = await self.ws.receive(timeout=GUARD)
        if msg.type is not aiohttp.WSMsgType.TEXT:
            raise ConnectionError(f"{msg.type.name}: {msg.data!r}")
        frame: dict[str, Any] = orjson.loads(msg.data)
        self.frames.append(frame)
        return frame

    async def send(self, obj: dict[str, Any]) -> None:
        assert self.ws is not None
        await self.ws.send_str(orjson.dumps(obj).decode())

    async def ask(self, question: str) -> str:
        await self.send({"type": "ask", "question": question, "ref": "q"})
        frame = await self.until(lambda f: f.get("type") in ("accepted", "error"))
        assert frame["type"] == "accepted", frame
        return str(frame["stream_id"])

    async def until(self, pred: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        async with asyncio.timeout(GUARD):
            while True:
                frame = await self.recv()
                if pred(frame):
                    return frame

    def events(self, sid: str) -> list[dict[str, Any]]:
        """This stream's events (frames with a seq), in arrival order."""
        return [f for f in self.frames if f.get("stream_id") == sid and f.get("seq")]


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


async def backend_answer(session: aiohttp.ClientSession, backend: Proc, question: str) -> str:
    """The backend's own answer (non-streaming), to compare the relayed text with."""
    async with session.post(
        backend.url + "/v1/chat/completions",
        json={"model": MODEL, "messages": [{"role": "user", "content": question}]},
    ) as resp:
        assert resp.status == 200
        body = await resp.json()
    return str(body["choices"][0]["message"]["content"])


def tokens_text(events: list[dict[str, Any]]) -> str:
    return "".join(e["text"] for e in events if e["type"] == "token" and e["index"] == 0)


def assert_exactly_once(events: list[dict[str, Any]]) -> None:
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(1, len(seqs) + 1)), f"gap or duplicate: {seqs}"


async def metric(session: aiohttp.ClientSession, relay: Proc, name: str) -> float:
    async with session.get(relay.url + "/metrics") as resp:
        text = await resp.text()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and not line.startswith("#"):
            total += float(line.rsplit(" ", 1)[1])
    return total


async def metric_reaches(
    session: aiohttp.ClientSession, relay: Proc, name: str, value: float, limit: float = 10.0
) -> bool:
    """Whether the metric reaches ``value`` within ``limit`` seconds (polled)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while True:
        if await metric(session, relay, name) == value:
            return True
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(0.05)


# -- tests --------------------------------------------------------------------------------


async def test_resume_on_another_instance_is_exactly_once(
    shared: Cluster, session: aiohttp.ClientSession
) -> None:
    a, b = shared.relays[0], shared.relays[1]
    expected = await backend_answer(session, shared.backend, QUESTION)
    async with Client(session, a) as on_a:
        sid = await on_a.ask(QUESTION)
        await on_a.until(lambda f: f.get("stream_id") == sid and f.get("seq", 0) >= 8)
        # Cut off mid-answer: the socket goes away without a goodbye.
        assert on_a.ws is not None
        on_a.ws._response.connection.transport.abort()  # type: ignore[union-attr]
    last = on_a.events(sid)[-1]["seq"]
    async with Client(session, b) as on_b:
        await on_b.send({"type": "resume", "stream_id": sid, "after_seq": last})
        await on_b.until(lambda f: f.get("stream_id") == sid and f.get("type") == "done")
    events = on_a.events(sid) + on_b.events(sid)
    assert_exactly_once(events)
    assert on_b.events(sid)[0]["seq"] == last + 1  # B really served the rest
    assert tokens_text(events) == expected
    done = events[-1]
    assert done["type"] == "done" and done["answer"]["text"] == expected
    assert not [e for e in events if e["type"] == "error"]


async def test_several_clients_on_all_instances_see_the_same_stream(
    shared: Cluster, session: aiohttp.ClientSession
) -> None:
    """One stream asked on A, read live from A, B and C at once (B and C via Redis)."""
    expected = await backend_answer(session, shared.backend, QUESTION)
    async with (
        Client(session, shared.relays[0]) as on_a,
        Client(session, shared.relays[1]) as on_b,
        Client(session, shared.relays[2]) as on_c,
    ):
        sid = await on_a.ask(QUESTION)
        for other in (on_b, on_c):
            await other.send({"type": "resume", "stream_id": sid, "after_seq": 0})

        async def done(c: Client) -> None:
            await c.until(lambda f: f.get("stream_id") == sid and f.get("type") == "done")

        await asyncio.gather(done(on_a), done(on_b), done(on_c))
    for c in (on_a, on_b, on_c):
        events = c.events(sid)
        assert_exactly_once(events)
        assert tokens_text(events) == expected
    # Every instance sent the same events, byte for byte the same JSON.
    assert on_a.events(sid) == on_b.events(sid) == on_c.events(sid)


async def test_cancel_sent_to_another_instance_stops_the_owner(
    shared: Cluster, session: aiohttp.ClientSession
) -> None:
    a, b = shared.relays[0], shared.relays[1]
    expected = await backend_answer(session, shared.backend, QUESTION)
    cancelled_before = await metric(
        session, a, 'streamcite_relay_streams_finished_total{outcome="cancelled"}'
    )
    async with Client(session, a) as on_a, Client(session, b) as on_b:
        sid = await on_a.ask(QUESTION)
        await on_a.until(lambda f: f.get("stream_id") == sid and f.get("seq", 0) >= 3)
        await on_b.send({"type": "cancel", "stream_id": sid})
        done = await on_a.until(lambda f: f.get("stream_id") == sid and f.get("type") == "done")
    events = on_a.events(sid)
    assert_exactly_once(events)
    errors = [e for e in events if e["type"] == "error"]
    assert [e["code"] for e in errors] == ["cancelled"]
    # Stopped early: the upstream request was ended, not read to its end.
    assert len(done["answer"]["text"]) < len(expected)
    assert expected.startswith(done["answer"]["text"])
    # The owner counts the stream after it has sent `done`: wait for it (bounded).
    finished = 'streamcite_relay_streams_finished_total{outcome="cancelled"}'
    assert await metric_reaches(session, a, finished, cancelled_before + 1)
    assert await metric_reaches(session, a, "streamcite_relay_active_streams", 0)


async def test_owner_killed_mid_stream_ends_with_owner_lost_and_the_partial_answer(
    shared: Cluster, session: aiohttp.ClientSession
) -> None:
    victim = shared.add_relay("relay-victim")
    b = shared.relays[1]
    expected = await backend_answer(session, shared.backend, QUESTION)
    async with Client(session, victim) as on_v:
        sid = await on_v.ask(QUESTION)
        await on_v.until(lambda f: f.get("stream_id") == sid and f.get("seq", 0) >= 5)
        last = on_v.events(sid)[-1]["seq"]
        victim.kill()
    async with Client(session, b) as on_b:
        await on_b.send({"type": "resume", "stream_id": sid, "after_seq": last})
        # Within the lease time (5 s) plus a heartbeat; GUARD only stops a hang.
        try:
            done = await on_b.until(lambda f: f.get("stream_id") == sid and f.get("type") == "done")
        except TimeoutError:
            raise AssertionError(f"no done after owner_lost; B sent: {on_b.frames}") from None
    events = on_v.events(sid) + on_b.events(sid)
    assert_exactly_once(events)
    errors = [e for e in events if e["type"] == "error"]
    assert [(e["code"], e["retryable"]) for e in errors] == [("owner_lost", True)]
    partial = done["answer"]["text"]
    assert partial == tokens_text(events)  # the partial answer is what the client got
    assert expected.startswith(partial) and len(partial) < len(expected)


async def test_redis_restart_mid_stream_is_recovered_or_a_clear_error(
    redis_server_factory: Callable[[], RedisServer],
    tmp_path: Path,
    session: aiohttp.ClientSession,
) -> None:
    """Redis restarts (empty: no persistence) while A streams an answer: the client on A gets
    the whole answer, or an ``error`` and ``done`` — never silence."""
    server = redis_server_factory()
    with cluster(server.url, tmp_path, relays=2) as c:
        a = c.relays[0]
        expected = await backend_answer(session, c.backend, QUESTION)
        async with Client(session, a) as on_a:
            sid = await on_a.ask(QUESTION)
            await on_a.until(lambda f: f.get("stream_id") == sid and f.get("seq", 0) >= 3)
            await asyncio.to_thread(server.restart)
            done = await on_a.until(lambda f: f.get("stream_id") == sid and f.get("type") == "done")
        events = on_a.events(sid)
        assert_exactly_once(events)
        errors = [e for e in events if e["type"] == "error"]
        if errors:
            assert errors[-1]["code"] in ("redis_unavailable", "relay_error")
            assert expected.startswith(done["answer"]["text"])
        else:
            assert done["answer"]["text"] == expected == tokens_text(events)
        # The instances work again once Redis is back: a new stream, resumed on B.
        async with Client(session, a) as on_a2:
            sid2 = await on_a2.ask(QUESTION)
            await on_a2.until(lambda f: f.get("stream_id") == sid2 and f.get("seq", 0) >= 2)
            async with Client(session, c.relays[1]) as on_b:
                await on_b.send({"type": "resume", "stream_id": sid2, "after_seq": 0})
                await on_b.until(lambda f: f.get("stream_id") == sid2 and f.get("type") == "done")
        assert_exactly_once(on_b.events(sid2))
        assert tokens_text(on_b.events(sid2)) == expected


async def test_immediate_local_delivery_streams_the_whole_answer(
    shared: Cluster, session: aiohttp.ClientSession
) -> None:
    """`--redis-local-delivery immediate`: local clients get events before Redis stores
    them; the answer is still complete, in order, exactly once, and resumable elsewhere."""
    relay = shared.add_relay("relay-D", "--redis-local-delivery", "immediate")
    expected = await backend_answer(session, shared.backend, QUESTION)
    async with Client(session, relay) as on_d:
        sid = await on_d.ask(QUESTION)
        done = await on_d.until(lambda f: f.get("stream_id") == sid and f.get("type") == "done")
    events = on_d.events(sid)
    assert_exactly_once(events)
    assert tokens_text(events) == expected == done["answer"]["text"]
    async with Client(session, shared.relays[0]) as on_a:  # the log on Redis is complete
        await on_a.send({"type": "resume", "stream_id": sid, "after_seq": 0})
        await on_a.until(lambda f: f.get("stream_id") == sid and f.get("type") == "done")
    assert [e["seq"] for e in on_a.events(sid)] == [e["seq"] for e in events]


# -- readers on other instances keep a stream alive (issue 13 §3) --------------------------


@pytest.fixture(scope="module")
def short_grace(
    redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """Backend + relays D and E with a 1 s resume grace, in their own Redis database."""
    url = redis_server.url.rsplit("/", 1)[0] + "/6"
    log_dir = tmp_path_factory.mktemp("grace")
    backend = Proc(
        "backend-grace",
        ["serve-local", "--port", "0", "--token-delay", "0.2"],  # an answer lasts ~8 graces
        log_dir,
    )
    backend.start("streamcite local backend on ")
    c = Cluster(backend, url, log_dir)
    try:
        c.add_relay("relay-D", "--resume-grace", "1")
        c.add_relay("relay-E", "--resume-grace", "1")
        yield c
    finally:
        c.stop()


async def test_a_reader_on_another_instance_keeps_the_stream_alive_past_the_grace(
    short_grace: Cluster, session: aiohttp.ClientSession
) -> None:
    """The owner (D) has no reader of its own after the client moved to E; before, it
    cancelled the stream as ``abandoned`` one grace period later while E's client read it.
    The answer takes several grace periods (TOKEN_DELAY per token), so a heartbeat is what
    keeps it."""
    d, e = short_grace.relays
    expected = await backend_answer(session, short_grace.backend, QUESTION)
    abandoned = 'streamcite_relay_streams_finished_total{outcome="abandoned"}'
    before = await metric(session, d, abandoned)
    async with Client(session, e) as on_e:
        async with Client(session, d) as on_d:
            sid = await on_d.ask(QUESTION)
            first = await on_d.until(lambda f: f.get("stream_id") == sid and f.get("seq"))
        # D's only client is gone; E's client reads from the next event on.
        await on_e.send({"type": "resume", "stream_id": sid, "after_seq": first["seq"]})
        done = await on_e.until(lambda f: f.get("stream_id") == sid and f.get("type") == "done")
    errors = [f["code"] for f in on_e.events(sid) if f["type"] == "error"]
    assert errors == []
    assert done["answer"]["text"] == expected and done["answer"]["complete"] is True
    assert await metric(session, d, abandoned) == before


async def test_with_no_reader_anywhere_the_stream_is_abandoned(
    short_grace: Cluster, session: aiohttp.ClientSession
) -> None:
    d, e = short_grace.relays
    abandoned = 'streamcite_relay_streams_finished_total{outcome="abandoned"}'
    before = await metric(session, d, abandoned)
    async with Client(session, e) as on_e:
        async with Client(session, d) as on_d:
            sid = await on_d.ask(QUESTION)
            await on_d.until(lambda f: f.get("stream_id") == sid and f.get("seq"))
        await on_e.send({"type": "resume", "stream_id": sid, "after_seq": 0})
        await on_e.until(lambda f: f.get("stream_id") == sid and f.get("seq", 0) >= 2)
    # Nobody reads it now, on any instance: cancelled one grace period (plus a heartbeat
    # period) later, long before the answer would have ended.
    assert await metric_reaches(session, d, abandoned, before + 1, limit=GUARD)
    assert await metric_reaches(session, d, "streamcite_relay_active_streams", 0)
