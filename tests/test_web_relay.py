"""`streamcite relay`'s POST /api/chat: the UI message stream behind the relay's gates."""

from __future__ import annotations

import aiohttp
import orjson
import pytest

from streamcite.enrich.wikit import WikitSources
from streamcite.grounding.checker import LocalGrounding
from streamcite.local.server import BackendConfig, LocalBackend
from streamcite.relay.server import RelayConfig, RelayServer
from tests._relay_fixtures import eventually, fake_upstream, relay
from tests.test_web import chunks
from tests.test_web_asgi import QUESTION, body
from tests.test_web_node import READY, run_node, run_node_raw


async def test_relay_api_chat_needs_the_token_and_streams_cited_answers() -> None:
    async with LocalBackend(BackendConfig()) as backend:
        root = backend.root_url
        cfg = RelayConfig(
            base_url=root + "/v1",
            token="tok-SECRET",
            retries=0,
            enrichers=[
                WikitSources("streamcite-demo", "streamcite-local", base_url=root),
                LocalGrounding(),
            ],
        )
        async with RelayServer(cfg) as relay, aiohttp.ClientSession() as s:
            url = relay.url.rstrip("/") + "/api/chat"
            async with s.post(url, json=body(QUESTION)) as r:
                assert r.status == 401
                assert "tok-SECRET" not in await r.text()
            async with s.post(url, json=body(QUESTION), headers={"Origin": "http://evil.example"},
                              params={"token": "tok-SECRET"}) as r:  # fmt: skip
                assert r.status == 403
            async with s.post(url, json={"messages": []}, params={"token": "tok-SECRET"}) as r:
                assert r.status == 400
            auth = {"Authorization": "Bearer tok-SECRET"}
            async with s.post(url, json=body(QUESTION), headers=auth) as r:
                assert r.status == 200
                assert r.headers["x-vercel-ai-ui-message-stream"] == "v1"
                got = chunks(await r.read())
            types = [c["type"] for c in got]
            assert "[1]" in "".join(c["delta"] for c in got if c["type"] == "text-delta")
            assert types.count("data-grounding") == 1 and types.count("data-sources") == 1
            if READY:  # the AI SDK's DefaultChatTransport through the relay
                result = await run_node(url + "?token=tok-SECRET", QUESTION)
                parts = result["message"]["parts"]
                assert result["errors"] == []
                assert "[1]" in "".join(p["text"] for p in parts if p["type"] == "text")
                assert any(p["type"].startswith("source-") for p in parts)
                assert any(p["type"] == "data-grounding" for p in parts)
                rc, _, err = await run_node_raw(url, QUESTION)  # no token: the SDK sees 401
                assert rc != 0 and b"unauthorized" in err and b"tok-SECRET" not in err


@pytest.mark.skipif(not READY, reason="node or examples/usechat deps missing")
async def test_an_aborted_sdk_request_leaves_no_upstream_connection() -> None:
    async with (
        fake_upstream(tokens=[f"t{i} " for i in range(400)], delay=0.02) as up,
        relay(up.url + "/v1") as server,
    ):
        url = server.url.rstrip("/") + "/api/chat"
        rc, out, err = await run_node_raw(url, "q", "abort")
        assert rc == 0, err.decode()
        assert any("abort" in e.lower() for e in orjson.loads(out)["errors"])
        await eventually(lambda: up.open_streams == 0 and up.closed_by_client == 1)
        assert up.completed == 0
