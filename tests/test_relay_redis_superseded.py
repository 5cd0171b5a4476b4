"""Issue 25 item 2 on the Redis log: a stream that re-sends a changed citations list on every
chunk must not push tokens out of the log, nor keep every superseded set in Redis.

Two relay instances share a real redis-server (127.0.0.1, ephemeral port). A live WebSocket
client asks instance A (the owner); after the end, late readers on A and on B read the
stream from seq 0. ``maxlen=150`` entries is less than the 243 the stream appends (120
tokens, 120 citations sets, meta, finish, done). Before: the superseded sets took the place
of the oldest tokens — late readers on A and B got 74 of 120 tokens (after a ``resume_gap``)
and the live client 109 (the owner's memory copy was trimmed while it waited) — and Redis held 3.56 MB
(5.7 MB with the default maxlen). Now the superseded sets are deleted from the stream and
read back as ``{"type":"superseded","by":N}``: every reader gets all 120, Redis holds 132 KB.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

import aiohttp
import orjson
import pytest

from streamcite.core.bounds import MAX_CITATIONS
from streamcite.relay.config import RelayConfig
from streamcite.relay.producer import CITATIONS_RESEND
from streamcite.relay.server import RelayServer
from tests._redis_fixtures import (  # noqa: F401  (fixtures, requested by name)
    RedisServer,
    redis_prefix,
    redis_server,
    redis_server_factory,
)
from tests._relay_fixtures import read_sse, text_of, ws_client
from tests.test_hardening_relay_edge import _perplexity_upstream

pytest.importorskip("redis")
pytestmark = pytest.mark.redis

CHUNKS, URLS, MAXLEN = 120, MAX_CITATIONS, 150


async def _late(server: RelayServer, sid: str) -> list[dict[str, Any]]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(server.url + "/sse", params={"stream_id": sid, "after_seq": "0"}) as resp,
    ):
        return [orjson.loads(ev.data) for ev in await read_sse(resp)]


async def _run(server_url: str, prefix: str) -> tuple[str, list[Any], list[Any], int]:
    """Live text on A, late frames on A and B, and the bytes Redis holds for the stream."""
    from redis.asyncio import Redis

    from streamcite.relay.redis import RedisLogSettings, RedisStreamLog

    async with AsyncExitStack() as stack, _perplexity_upstream(CHUNKS, URLS) as up:
        servers = []
        for name in "AB":
            log = RedisStreamLog(
                RedisLogSettings(server_url, instance_id=name, prefix=prefix, maxlen=MAXLEN)
            )
            stack.push_async_callback(log.aclose)
            config = RelayConfig(base_url=up + "/v1", retries=0, instance_id=name)
            servers.append(await stack.enter_async_context(RelayServer(config, log=log)))
        a, b = servers
        async with ws_client(a) as live:
            sid = await live.ask("hi")
            await live.until_done(sid, limit=60)
            live_text = text_of(live.events(sid))
        late_a, late_b = await asyncio.gather(_late(a, sid), _late(b, sid))
        redis = Redis.from_url(server_url)
        try:
            held = int(await redis.memory_usage(f"{prefix}s:{sid}") or 0)
            held += int(await redis.memory_usage(f"{prefix}m:{sid}") or 0)
        finally:
            await redis.aclose()
    return live_text, late_a, late_b, held


@pytest.fixture
async def outcome(
    redis_server: RedisServer,  # noqa: F811
    redis_prefix: str,  # noqa: F811
) -> AsyncIterator[tuple[str, list[Any], list[Any], int]]:
    yield await _run(redis_server.url, redis_prefix)


async def test_late_readers_on_either_instance_get_every_token(
    outcome: tuple[str, list[Any], list[Any], int],
) -> None:
    live_text, late_a, late_b, held = outcome
    expected = "".join(f"t{i} " for i in range(CHUNKS))
    assert live_text == expected
    for late in (late_a, late_b):
        # Before: 46 of 120 tokens missing (MAXLEN counted every superseded set).
        assert not [f for f in late if f.get("code") == "resume_gap"]
        frames = [f for f in late if f.get("seq")]
        assert text_of(frames) == expected
        assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
        cits = [f for f in frames if f["type"] == "citations"]
        assert len(cits) == 1 and len(cits[0]["citations"]) == URLS  # the newest, whole
        assert cits[0]["citations"][0]["source_url"] == f"https://example.org/{CHUNKS - 1}/0"
        # the sets logged while within CITATIONS_RESEND, then the newest before done
        assert sum(1 for f in frames if f["type"] == "superseded") == CITATIONS_RESEND + 1
    # Before: 3,559,975 bytes (74 sets of ~48 KB that MAXLEN had not trimmed yet).
    assert held < 256 * 1024, held
