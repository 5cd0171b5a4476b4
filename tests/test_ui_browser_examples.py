"""The Gradio, Chainlit and Streamlit examples in a real headless Chromium, as a person
uses them: type the README's question into the chat input, read the page.

Each example runs as its framework runs it (a subprocess, a free port) against the
embedded backend, paced (``token_delay``) so the answer is seen before it ends. Stop
is proven on the backend's side: it logs the stream it could not finish because the
client closed the connection. Screenshots go to test-artifacts/ (and docs/ with
STREAMCITE_UPDATE_SCREENSHOT=1).
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from streamcite.local import BackendConfig, LocalBackend
from tests._ui_apps import (
    CHAINLIT,
    GRADIO,
    PASSAGE,
    QUESTION,
    STREAMLIT,
    Framework,
    answer_text,
    ask,
    chromium_page,
    example_app,
    finished,
    open_footnote,
    save_screenshot,
    watch_backend,
)
from tests._wait import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]
FRAMEWORKS = pytest.mark.parametrize("fw", [GRADIO, CHAINLIT, STREAMLIT], ids=lambda f: f.name)
SECOND = "Which security rules apply outside the office?"
VERDICT = "Grounding (local)"


async def _wait_text(page: Any, fw: Framework, cond: Any, what: str, limit: float = 60) -> str:
    async def check() -> bool:
        return bool(cond(await answer_text(page, fw)))

    await wait_until(check, timeout=limit, interval=0.1, what=what)
    return await answer_text(page, fw)


@FRAMEWORKS
async def test_cited_answer_streams_with_quotes_and_verdict_and_stop_cancels_upstream(
    fw: Framework, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = watch_backend(monkeypatch)
    async with (
        LocalBackend(BackendConfig(token_delay=0.12)) as be,
        example_app(fw, be.base_url, tmp_path) as url,
        chromium_page() as page,
    ):
        await page.goto(url)
        await ask(page, fw, QUESTION)
        # text is on the page while the answer still streams
        partial = await _wait_text(page, fw, lambda t: "Employees" in t, "first tokens")
        assert VERDICT not in partial and PASSAGE not in partial
        await _wait_text(page, fw, lambda t: VERDICT in t, "the grounding verdict")
        await finished(page, fw)  # the enrichers' events come in either order: all of them
        text = await answer_text(page, fw)
        # footnotes as superscripts, claim marks, the footnote's source, the verdict
        assert "manager¹" in text and "that day¹" in text
        assert text.count("✓") >= 3  # two claims and the verdict
        assert "¹ remote work policy — 2. remote work days" in text.lower()  # Chainlit: caps
        assert "2 of 2 claims supported" in text
        assert "[1] Remote Work Policy" in text  # Wikit's quoted source
        # the footnote's own passage and its document's link: under the answer, or in
        # Chainlit's side panel, opened by the source link the message names
        where = await open_footnote(page, fw, "¹ Remote Work Policy")
        assert PASSAGE in await where.inner_text()
        if fw is CHAINLIT:
            assert PASSAGE not in text  # in the side panel, not in the message
        link = where.locator("a", has_text="Remote Work Policy").first
        assert (await link.get_attribute("href") or "").startswith(be.root_url + "/documents/")
        save_screenshot(await page.screenshot(), f"ui-{fw.name}.png")

        # Stop while the next answer streams: the backend sees the connection closed
        assert (seen.finished, seen.closed_by_client) == (1, 0)
        await ask(page, fw, SECOND)
        await _wait_text(page, fw, lambda t: "VPN" in t, "the second answer's first tokens")
        await page.locator(fw.stop).first.click()
        await wait_until(lambda: seen.closed_by_client == 1, timeout=30, what="closed by client")
        assert seen.finished == 1
        page_text = await page.inner_text("body")
        assert page_text.count(VERDICT) == 1  # the stopped answer never got one


@FRAMEWORKS
async def test_backend_down_is_a_readable_error_in_the_chat(fw: Framework, tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    async with example_app(fw, dead, tmp_path) as url, chromium_page() as page:
        await page.goto(url)
        await ask(page, fw, QUESTION)
        text = await _wait_text(page, fw, lambda t: "⚠" in t, "the error")
        assert "connect" in text.lower()
        assert "(" in text and ")" in text  # the error's code is shown with its message
