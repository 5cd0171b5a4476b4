"""The AI SDK's own client (`ai` 5.0.277 from npm, examples/usechat/chat.mjs) reads streamcite's UI message stream."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web

from streamcite import stream_chat
from streamcite.local.server import BackendConfig, LocalBackend
from streamcite.web.aiohttp import ui_message_handler

NODE_DIR = Path(__file__).parent.parent / "examples" / "usechat"
NODE = shutil.which("node")
READY = NODE is not None and (NODE_DIR / "node_modules" / "ai").is_dir()
if not READY and os.environ.get("CI") == "true":
    raise RuntimeError(
        "CI: node and examples/usechat/node_modules are required (scripts/node-deps.sh)"
    )
pytestmark = pytest.mark.skipif(not READY, reason="node or examples/usechat deps missing")


async def run_node_raw(url: str, question: str, *mode: str) -> tuple[int | None, bytes, bytes]:
    assert NODE is not None
    proc = await asyncio.create_subprocess_exec(
        NODE, "chat.mjs", url, question, *mode, cwd=NODE_DIR,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode, out, err


async def run_node(url: str, question: str) -> dict[str, Any]:
    rc, out, err = await run_node_raw(url, question)
    assert rc == 0, err.decode()
    result: dict[str, Any] = orjson.loads(out)
    return result


async def test_default_chat_transport_reads_text_sources_and_grounding(serve: Any) -> None:
    from streamcite.enrich.wikit import WikitSources
    from streamcite.grounding.checker import LocalGrounding

    async with LocalBackend(BackendConfig()) as backend:
        root = backend.root_url

        def make(question: str, body: dict[str, Any]) -> Any:
            request = {"model": "streamcite-local", "stream": True,
                       "messages": [{"role": "user", "content": question}]}  # fmt: skip
            after = [
                WikitSources("streamcite-demo", "streamcite-local", base_url=root),
                LocalGrounding(),
            ]
            return stream_chat(request, base_url=root + "/v1", after=after)

        app = web.Application()
        app.router.add_post("/api/chat", ui_message_handler(make))
        url = await serve(app)
        got = await run_node(url + "/api/chat", "Combien de jours de télétravail par semaine ?")
    message, errors = got["message"], got["errors"]
    assert errors == []
    parts = message["parts"]
    text = "".join(p["text"] for p in parts if p["type"] == "text")
    assert "[1]" in text
    sources = [p for p in parts if p["type"] in ("source-url", "source-document")]
    assert sources and all(p["sourceId"].startswith("cite-") for p in sources)
    assert len({p["sourceId"] for p in sources}) == len(sources)
    assert [p["type"] for p in parts].count("data-grounding") == 1
    assert [p["type"] for p in parts].count("data-sources") == 1
    # One data-claim part per claim (the AI SDK keeps each by its id), UTF-16 offsets
    # into the JavaScript text.
    claims = [p for p in parts if p["type"] == "data-claim"]
    assert claims and len({p["id"] for p in claims}) == len(claims)
    for p in claims:
        c = p["data"]
        assert c["checker"] == "local" and c["supported"] in (True, False, None)
        assert (
            text.encode("utf-16-le")[2 * c["start_utf16"] : 2 * c["end_utf16"]].decode("utf-16-le")
            == c["text"]
        )
