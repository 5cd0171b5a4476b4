"""The three chat-UI examples as a person runs them, for the Chromium tests.

Each example starts the way its framework starts (``python examples/gradio_chat.py``,
``chainlit run ...``, ``streamlit run ...``) in a subprocess, in a temporary directory
(Chainlit writes ``.chainlit/``, ``chainlit.md`` and ``.files/`` where it runs), on a
free 127.0.0.1 port, against the embedded backend the test runs in its own loop. A
page is ready when its HTTP root answers; every wait has a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from streamcite.local import BackendConfig, LocalBackend
from tests._relay_fixtures import CHROMIUM_ARGS, require_chromium
from tests._wait import wait_until

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
QUESTION = "How many remote-work days are allowed?"
"""The README's question: serve-local answers it with a footnote and a quoted passage."""
PASSAGE = "Remote days that are not used in a given week cannot be carried over"
"""A phrase of footnote 1's quoted passage that the answer itself does not contain."""
BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Framework:
    name: str
    input: str
    """The chat input (CSS)."""
    answer: str
    """The last assistant message (CSS; ``.last`` of the matches)."""
    stop: str
    """The Stop button while an answer streams (CSS)."""
    start_seconds: float


GRADIO = Framework("gradio", "textarea", ".bot", "button.stop-button", 90)
CHAINLIT = Framework(
    "chainlit", "#chat-input", "[data-step-type=assistant_message]", "#stop-button", 90
)
STREAMLIT = Framework(
    "streamlit",
    "[data-testid=stChatInputTextArea]",
    "[data-testid=stChatMessage]",
    "[data-testid=stBaseButton-header]:has-text('Stop')",
    60,
)


def require_framework(fw: Framework) -> None:
    """Skip when the framework is not installed (fail under CI=true: ``.ci/run`` installs it)."""
    try:
        __import__(fw.name)
    except ImportError:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{fw.name} is not installed; CI=true: .ci/run installs the UI extras")
        pytest.skip(f"{fw.name} is not installed (pip install 'streamcite[{fw.name}]')")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _command(fw: Framework, port: int) -> list[str]:
    example = str(ROOT / "examples" / f"{fw.name}_chat.py")
    if fw is GRADIO:
        return [sys.executable, example]
    if fw is CHAINLIT:
        return [str(BIN / "chainlit"), "run", example, "--headless", "--port", str(port),
                "--host", "127.0.0.1"]  # fmt: skip
    return [str(BIN / "streamlit"), "run", example, "--server.headless", "true",
            "--server.port", str(port), "--server.address", "127.0.0.1",
            "--browser.gatherUsageStats", "false"]  # fmt: skip


@contextlib.asynccontextmanager
async def example_app(fw: Framework, base_url: str, workdir: Path) -> AsyncIterator[str]:
    """``examples/<fw>_chat.py`` running against ``base_url``; yields its page URL."""
    require_framework(fw)
    port = _free_port()
    env = {
        **os.environ,
        "STREAMCITE_BASE_URL": base_url,
        "GRADIO_SERVER_PORT": str(port),
        "GRADIO_SERVER_NAME": "127.0.0.1",
        "GRADIO_ANALYTICS_ENABLED": "False",
        "PYTHONPATH": str(ROOT),
    }
    log = (workdir / f"{fw.name}.log").open("wb")
    proc = subprocess.Popen(  # noqa: ASYNC220 -- started once; waits are polled
        _command(fw, port), cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/"
    try:
        async with aiohttp.ClientSession() as http:

            async def up() -> bool:
                assert proc.poll() is None, (workdir / f"{fw.name}.log").read_text()[-2000:]
                with contextlib.suppress(aiohttp.ClientError, OSError):
                    async with http.get(url, timeout=aiohttp.ClientTimeout(total=2)) as r:
                        return r.status == 200
                return False

            await wait_until(up, timeout=fw.start_seconds, interval=0.2, what=f"{fw.name} up")
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        log.close()


@contextlib.contextmanager
def backend_thread(config: BackendConfig | None = None) -> Iterator[LocalBackend]:
    """The embedded backend on a thread and loop of its own, for a test that is not async
    (Streamlit's ``AppTest`` runs the script in this process and blocks)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="serve-local", daemon=True)
    thread.start()
    backend = LocalBackend(config or BackendConfig())
    try:
        asyncio.run_coroutine_threadsafe(backend.__aenter__(), loop).result(60)
        try:
            yield backend
        finally:
            stop = backend.__aexit__(None, None, None)
            asyncio.run_coroutine_threadsafe(stop, loop).result(60)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


@contextlib.asynccontextmanager
async def chromium_page() -> AsyncIterator[Any]:
    executable = require_chromium()
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1000, "height": 1200})
            page.set_default_timeout(30_000)
            yield page
        finally:
            await browser.close()


async def ask(page: Any, fw: Framework, question: str) -> None:
    """Type ``question`` into the chat input and press Enter, as a person does. Chainlit
    ignores Enter until its socket is up: pressed again until the input is emptied."""
    box = page.locator(fw.input).first
    await box.wait_for(state="visible")
    await box.fill(question)

    async def sent() -> bool:  # each framework empties its input once it took the message
        if await box.input_value() != question:
            return True
        await box.press("Enter")
        return bool(await box.input_value() != question)

    await wait_until(sent, timeout=30, interval=0.5, what="the question sent")


async def answer_text(page: Any, fw: Framework) -> str:
    """The text of the last assistant message ("" before there is one)."""
    messages = page.locator(fw.answer)
    if await messages.count() == 0:
        return ""
    text: str = await messages.last.inner_text()
    return text


async def finished(page: Any, fw: Framework, limit: float = 60) -> None:
    """Until the answer has ended: the framework hides its Stop button then."""
    await page.locator(fw.stop).first.wait_for(state="hidden", timeout=limit * 1000)


async def open_footnote(page: Any, fw: Framework, name: str) -> Any:
    """Where a person reads a footnote's own passage: under the answer, or in Chainlit in
    the side panel a click on the source's link (its element's ``name``) opens, once its
    text has loaded. Returns that area (a locator)."""
    if fw is not CHAINLIT:
        return page.locator(fw.answer).last
    await page.locator(f"{fw.answer} a.element-link", has_text=name).last.click()
    panel = page.locator("#side-view-content")

    async def loaded() -> bool:  # the panel fetches the element's text after it opens
        return bool(await panel.count()) and bool((await panel.inner_text()).strip())

    await wait_until(loaded, timeout=30, interval=0.1, what="the source's side panel")
    return panel


def save_screenshot(png: bytes, name: str) -> None:
    """Under test-artifacts/; also docs/<name> when STREAMCITE_UPDATE_SCREENSHOT=1."""
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / name).write_bytes(png)
    if os.environ.get("STREAMCITE_UPDATE_SCREENSHOT") == "1":
        shutil.copyfile(ARTIFACTS / name, ROOT / "docs" / name)


@dataclass
class Watched:
    """What the backend's chat endpoint saw: streams finished, streams cut by the client."""

    finished: int = 0
    closed_by_client: int = 0


def watch_backend(monkeypatch: pytest.MonkeyPatch) -> Watched:
    """Count, on the embedded backend's side, the chat streams a client closed: aiohttp
    cancels a handler whose client went away (the backend runs with
    ``handler_cancellation``); a middleware on the app the backend builds sees it."""
    import asyncio

    from aiohttp import web

    from streamcite.local import server

    seen = Watched()
    create = server.create_app

    @web.middleware
    async def observe(request: web.Request, handler: Any) -> web.StreamResponse:
        if not request.path.endswith("/chat/completions"):
            return await handler(request)  # type: ignore[no-any-return]
        try:
            response = await handler(request)
        except asyncio.CancelledError:
            seen.closed_by_client += 1
            raise
        seen.finished += 1
        return response  # type: ignore[no-any-return]

    def create_watched(*args: Any, **kwargs: Any) -> web.Application:
        app = create(*args, **kwargs)
        app.middlewares.append(observe)
        return app

    monkeypatch.setattr(server, "create_app", create_watched)
    return seen
