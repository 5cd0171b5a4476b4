"""The Vercel AI SDK's own UI and client against streamcite's UI message stream (issue 15 §4).

- The page built on ``useChat`` from ``@ai-sdk/react`` (examples/usechat, bundled with
  esbuild by scripts/node-deps.sh; versions pinned in examples/usechat/package-lock.json) runs
  in real Chromium against ``streamcite relay``'s ``POST /api/chat`` and against
  examples/fastapi_app.py under uvicorn: the answer, its footnotes and a sources list
  render; Stop leaves no connection open on the embedded backend.
- ``DefaultChatTransport`` (Node, examples/usechat/chat.mjs) aborting a request to the FastAPI
  example leaves no upstream connection on the embedded backend's side.

The page is served at the endpoint's own origin (Playwright answers its three files), so
``/api/chat`` is a same-origin request and the relay's Origin check applies as it would
to a page the relay served.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import re
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from streamcite import stream_chat
from streamcite.enrich.wikit import WikitSources
from streamcite.grounding.checker import LocalGrounding
from streamcite.local.server import BackendConfig, LocalBackend
from tests._relay_fixtures import CHROMIUM_ARGS, eventually, relay, require_chromium
from tests.test_relay_browser import backend_answer

NODE_DIR = Path(__file__).parent.parent / "examples" / "usechat"
PAGE_DIR = NODE_DIR
BUNDLE = PAGE_DIR / "dist" / "app.js"
EXAMPLE = Path(__file__).parent.parent / "examples" / "fastapi_app.py"
NODE = shutil.which("node")
READY = NODE is not None and all(
    (NODE_DIR / "node_modules" / name).is_dir() for name in ("ai", "@ai-sdk/react", "esbuild")
)
if not READY and os.environ.get("CI") == "true":
    raise RuntimeError(
        "CI: node and examples/usechat/node_modules are required (scripts/node-deps.sh)"
    )
pytestmark = pytest.mark.skipif(not READY, reason="node or examples/usechat deps missing")

QUESTION = "How many days can I work remotely?"
MARKER = re.compile(r"\[(\d{1,4}(?:, *\d{1,4})*)\]")


def save_artifact(png: bytes, name: str) -> None:
    """Keep a screenshot under test-artifacts/ (never the docs' screenshot)."""
    folder = Path(__file__).resolve().parent.parent / "test-artifacts"
    folder.mkdir(exist_ok=True)
    (folder / name).write_bytes(png)


# -- servers ------------------------------------------------------------------------


@pytest.fixture
def fastapi_app(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], Any]]:
    """examples/fastapi_app.py, loaded against a given embedded backend."""

    def load(root_url: str) -> Any:
        monkeypatch.setenv("STREAMCITE_LOCAL_URL", root_url)
        spec = importlib.util.spec_from_file_location("fastapi_app_usechat", EXAMPLE)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.app

    yield load


PACE = 1.0
"""Seconds between tokens where a stop must end the stream long before its end."""


async def unpaced_answer(base_url: str) -> str:
    """The backend's whole answer, its server-wide pacing off for this request."""
    req = {
        "model": "streamcite-local",
        "messages": [{"role": "user", "content": QUESTION}],
        "stream": True,
    }
    headers = {"X-Streamcite-Fault": "token_delay=0"}
    async with stream_chat(req, base_url=base_url, headers=headers) as s:
        return (await s.until_done()).text


def served_connections(port: int) -> int:
    """ESTABLISHED TCP connections whose local end is 127.0.0.1:``port`` (server side)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(FileNotFoundError), open(table) as f:
            for line in f.readlines()[1:]:
                parts = line.split()
                local, state = parts[1], parts[3]
                if state == "01" and int(local.rsplit(":", 1)[1], 16) == port:
                    count += 1
    return count


class ConnectionWatch:
    """Samples the backend's served connections every 10 ms: the most seen, the last seen."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.most = 0
        self.now = 0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            self.now = served_connections(self.port)
            self.most = max(self.most, self.now)
            await asyncio.sleep(0.01)

    async def __aenter__(self) -> ConnectionWatch:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


# -- the useChat page -----------------------------------------------------------------


async def ensure_bundle() -> None:
    """Build examples/usechat/dist/app.js when missing or older than its sources."""
    sources = [PAGE_DIR / "app.jsx", PAGE_DIR / "build.mjs", NODE_DIR / "package-lock.json"]
    if BUNDLE.is_file() and all(BUNDLE.stat().st_mtime >= p.stat().st_mtime for p in sources):
        return
    assert NODE is not None
    proc = await asyncio.create_subprocess_exec(
        NODE, "build.mjs", cwd=NODE_DIR, stderr=asyncio.subprocess.PIPE
    )
    _, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()


_FILES = {
    "index.html": "text/html; charset=utf-8",
    "app.css": "text/css",
    "dist/app.js": "text/javascript",
}


@contextlib.asynccontextmanager
async def usechat_page(origin: str) -> AsyncIterator[Any]:
    """Chromium on ``origin + /usechat/`` (the page's files answered by Playwright)."""
    await ensure_bundle()
    executable = require_chromium()
    from playwright.async_api import async_playwright

    async def serve_file(route: Any) -> None:
        name = route.request.url.split("/usechat/", 1)[1].split("?", 1)[0] or "index.html"
        if name not in _FILES:
            await route.fulfill(status=404, body="not found")
            return
        body = (PAGE_DIR / name).read_bytes()
        await route.fulfill(status=200, body=body, headers={"Content-Type": _FILES[name]})

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            context = await browser.new_context(viewport={"width": 900, "height": 900})
            page = await context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            await page.route(origin + "/usechat/**", serve_file)
            await page.goto(origin + "/usechat/")
            await page.wait_for_function("window.usechat && window.usechat.status === 'ready'")
            yield page
            assert not errors, errors
        finally:
            await browser.close()


async def ask(page: Any, question: str) -> None:
    await page.fill("#question", question)
    await page.click("#send")


async def until_ready(page: Any, limit_ms: float = 30_000) -> dict[str, Any]:
    """Wait for the answer to finish; return what useChat holds (status, messages)."""
    await page.wait_for_function(
        "window.usechat.messages.length >= 2 && window.usechat.status === 'ready'",
        timeout=limit_ms,
    )
    state: dict[str, Any] = await page.evaluate("window.usechat")
    return state


def shown(text: str) -> str:
    """The answer as the page shows it: each marker's numbers, without the brackets."""
    return MARKER.sub(lambda m: ",".join(n.strip() for n in m.group(1).split(",")), text)


async def check_cited_answer(page: Any, expected: str) -> None:
    state = await until_ready(page)
    assert state["error"] is None
    answer = state["messages"][-1]
    text = "".join(p["text"] for p in answer["parts"] if p["type"] == "text")
    assert text == expected and "[1]" in text
    assert await page.locator(".msg.assistant .answer").text_content() == shown(expected)
    # footnotes: superscript links, each to an entry of the sources list
    links = await page.eval_on_selector_all(
        ".msg.assistant sup.fn a", "els => els.map(a => a.getAttribute('href'))"
    )
    assert links and all(h.startswith("#src-") for h in links)
    for href in set(links):
        assert await page.locator(f".sources [id='{href[1:]}']").count() == 1
    await page.locator("sup.fn a").first.click()
    target = page.locator(".sources li:target")
    assert await target.count() == 1
    assert (await target.locator("blockquote.cited").text_content() or "").strip()
    # the sources list: one entry per source part, titled, linked to the document
    items = page.locator(".sources li")
    parts = [p for p in answer["parts"] if p["type"] in ("source-url", "source-document")]
    assert await items.count() == len(parts) >= 1
    title = await items.first.locator(".title").text_content()
    assert title and title == parts[0]["title"]
    # grounding arrived as a data part
    assert (await page.locator(".support").text_content() or "").startswith("support ")


@pytest.mark.browser
async def test_use_chat_page_against_the_relay_renders_answer_footnotes_and_sources() -> None:
    async with LocalBackend(BackendConfig(token_delay=0.01)) as be:
        wikit = WikitSources("streamcite-local", "streamcite-local", base_url=be.root_url)
        expected = await backend_answer(be.base_url)
        async with (
            relay(be.base_url, enrichers=[wikit, LocalGrounding()]) as server,
            usechat_page(server.url) as page,
        ):
            await ask(page, QUESTION)
            # tokens render as they arrive
            await page.wait_for_function(
                "window.usechat.status === 'streaming'"
                " && (document.querySelector('.msg.assistant .answer')?.textContent || '').length > 0"
            )
            await check_cited_answer(page, expected)
            await eventually(lambda: server.relay.active_streams == 0)
            save_artifact(await page.screenshot(full_page=True), "usechat-relay.png")


@pytest.mark.browser
async def test_use_chat_page_against_the_fastapi_example(
    uvicorn_serve: Any, fastapi_app: Any
) -> None:
    question = "Combien de jours de télétravail par semaine ?"
    async with LocalBackend(BackendConfig()) as be:
        expected = await backend_answer(be.base_url, question)
        origin = await uvicorn_serve(fastapi_app(be.root_url))
        async with usechat_page(origin) as page:
            await ask(page, question)
            await check_cited_answer(page, expected)


@pytest.mark.browser
async def test_use_chat_stop_leaves_no_connection_on_the_backend(
    uvicorn_serve: Any, fastapi_app: Any
) -> None:
    # about 37 tokens at 1 s: the answer would stream for 37 s (room for a loaded machine
    # to see the stop through; the whole answer is read unpaced)
    async with LocalBackend(BackendConfig(token_delay=PACE)) as be:
        origin = await uvicorn_serve(fastapi_app(be.root_url))
        async with usechat_page(origin) as page, ConnectionWatch(be.port) as watch:
            await ask(page, QUESTION)
            await page.wait_for_function(
                "(document.querySelector('.msg.assistant .answer')?.textContent || '').length > 0"
            )
            assert watch.now >= 1  # the backend is streaming to the example
            loop = asyncio.get_running_loop()
            started = loop.time()
            await page.click("#stop")
            await eventually(lambda: served_connections(be.port) == 0, limit=15.0)
            assert loop.time() - started < 15.0
            state = await page.evaluate("window.usechat")
            assert state["status"] == "ready"
            text = "".join(p["text"] for p in state["messages"][-1]["parts"] if p["type"] == "text")
            assert 0 < len(text) < len(await unpaced_answer(be.base_url))


# -- DefaultChatTransport (Node) against the FastAPI example ---------------------------


async def test_sdk_abort_against_the_fastapi_example_leaves_no_upstream_connection(
    uvicorn_serve: Any, fastapi_app: Any
) -> None:
    from tests.test_web_node import run_node_raw

    async with LocalBackend(BackendConfig(token_delay=PACE)) as be:
        full = await unpaced_answer(be.base_url)
        url = await uvicorn_serve(fastapi_app(be.root_url)) + "/api/chat"
        async with ConnectionWatch(be.port) as watch:
            loop = asyncio.get_running_loop()
            started = loop.time()
            rc, out, err = await run_node_raw(url, QUESTION, "abort")
            assert rc == 0, err.decode()
            result = orjson.loads(out)
            assert any("abort" in e.lower() for e in result["errors"])
            await eventually(lambda: served_connections(be.port) == 0, limit=15.0)
            elapsed = loop.time() - started
        assert watch.most >= 1  # the example did stream from the backend
        # closed long before the answer would have ended (about 37 tokens × 1 s)
        assert elapsed < PACE * len(full.split()) / 2
        text = "".join(p.get("text", "") for p in result["message"]["parts"] if p["type"] == "text")
        assert 0 < len(text) < len(full)
