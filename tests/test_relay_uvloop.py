"""The relay on uvloop: every test here runs its body on uvloop's event loop.

uvloop's transports implement asyncio's transport interface without subclassing its
classes; the relay once took that for "no transport" and so wrote nothing on uvloop (each
pump ended at its first write as if its client had gone). The same protocol as on asyncio's
loop: WebSocket and SSE clients, backpressure on a stalled client, the page in Chromium.
"""

from __future__ import annotations

import asyncio
import functools
import signal
import sys
from collections.abc import Callable, Coroutine
from typing import Any

import aiohttp
import orjson
import pytest

from streamcite.local.server import BackendConfig, LocalBackend
from streamcite.relay.eventloop import resolve, run
from tests._relay_fixtures import (
    RawWs,
    RelayClient,
    eventually,
    fake_upstream,
    read_sse,
    relay,
    seqs_of,
    text_of,
    ws_client,
)

uvloop = pytest.importorskip("uvloop")


def on_uvloop(test: Callable[[], Coroutine[Any, Any, None]]) -> Callable[[], None]:
    """A synchronous test that runs ``test()`` on uvloop (through the relay's own loop
    choice, as ``streamcite relay --loop uvloop`` does)."""

    async def checked() -> None:
        loop = asyncio.get_running_loop()
        assert type(loop).__module__.startswith("uvloop"), type(loop)
        await test()

    @functools.wraps(test)
    def sync() -> None:
        run(checked(), "uvloop")

    return sync


def _contiguous(events: list[dict[str, Any]]) -> None:
    assert seqs_of(events) == list(range(1, len(events) + 1))
    assert [e["type"] for e in events].count("done") == 1 and events[-1]["type"] == "done"


def test_auto_is_uvloop_when_installed() -> None:
    assert resolve("auto") == "uvloop"
    assert resolve("asyncio") == "asyncio"


@on_uvloop
async def test_ws_clients_get_every_event_on_uvloop() -> None:
    async with (
        fake_upstream(delay=0.002) as up,
        relay(up.url + "/v1") as server,
        ws_client(server) as one,
        ws_client(server) as two,
    ):
        sids = [await one.ask("first"), await one.ask("second"), await two.ask("third")]
        await one.until_done(sids[0])
        await one.until_done(sids[1])
        await two.until_done(sids[2])
        for client, sid in ((one, sids[0]), (one, sids[1]), (two, sids[2])):
            events = client.events(sid)
            _contiguous(events)
            assert text_of(events) == up.answer
            assert events[-1]["answer"]["text"] == up.answer
        assert server.relay.metrics.events_sent == sum(
            len(c.events(s)) for c, s in ((one, sids[0]), (one, sids[1]), (two, sids[2]))
        )


@on_uvloop
async def test_sse_client_gets_every_event_on_uvloop() -> None:
    async with fake_upstream() as up, relay(up.url + "/v1") as server:
        async with (
            aiohttp.ClientSession() as session,
            session.post(server.url + "/sse", data=b'{"type":"ask","question":"q"}') as resp,
        ):
            assert resp.status == 200
            events = [e for e in await read_sse(resp) if e.id]
        frames = [orjson.loads(e.data) for e in events]
        _contiguous(frames)
        assert text_of(frames) == up.answer


@on_uvloop
async def test_stalled_client_is_closed_on_uvloop_and_others_still_served() -> None:
    """The write-buffer cap and the watchdog act on uvloop's transports too."""
    tokens = ["x" * 2000] * 200
    async with (
        fake_upstream(tokens=tokens) as up,
        relay(
            up.url + "/v1", send_timeout=2.0, client_buffer_bytes=16384, client_sndbuf=8192
        ) as server,
    ):
        raw = RawWs("127.0.0.1", server.port, rcvbuf=4096)
        await raw.connect()
        await raw.send_text('{"type":"ask","question":"slow","ref":"slow"}')  # never reads
        try:
            async with ws_client(server, max_msg_size=0) as fast:
                sid = await fast.ask("fast")
                await fast.until_done(sid, limit=30)
                _contiguous(fast.events(sid))
            await eventually(lambda: server.relay.metrics.client_closed["too_slow"] > 0, 30)
            assert up.completed == 2
        finally:
            raw.close()


@pytest.mark.browser
@on_uvloop
async def test_page_in_chromium_on_uvloop() -> None:
    from tests.test_relay_browser import QUESTION, ask, backend_answer, browser_page, wait_done

    async with (
        LocalBackend(BackendConfig(token_delay=0.01)) as be,
        relay(be.base_url) as server,
    ):
        expected = await backend_answer(be.base_url)
        async with browser_page() as page:
            await page.goto(server.url + "/")
            await ask(page, QUESTION)
            stream = await wait_done(page)
            assert stream["text"] == expected
            assert stream["seqs"] == list(range(1, len(stream["seqs"]) + 1))


# -- the command line --------------------------------------------------------------------------


async def test_cli_relay_runs_on_uvloop_by_default_and_delivers() -> None:
    """``streamcite relay`` (``--loop auto``) picks uvloop when installed and answers."""
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
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        assert line.startswith("streamcite relay on http://127.0.0.1:")
        banner = (await asyncio.wait_for(proc.stderr.readline(), 30)).decode()
        assert "loop: uvloop" in banner, banner
        url = line.split()[-1]
        async with (
            aiohttp.ClientSession() as session,
            session.ws_connect(url.replace("http", "ws") + "/ws") as ws,
        ):
            client = RelayClient(ws)
            await client.recv()
            sid = await client.ask("How many days can I work remotely?")
            await client.until_done(sid)
            _contiguous(client.events(sid))
            assert "[1]" in client.events(sid)[-1]["answer"]["text"]
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def test_cli_loop_uvloop_without_uvloop_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from click.testing import CliRunner

    from streamcite.apps.relay import command

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "uvloop" else real(name, *a)
    )
    result = CliRunner().invoke(command, ["--loop", "uvloop"])
    assert result.exit_code == 2
    assert "pip install 'streamcite[uvloop]'" in result.output
    assert resolve("auto") == "asyncio"
