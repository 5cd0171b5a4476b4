"""The chat page reads right for a newcomer (issue 17 §3), in real Chromium."""

from __future__ import annotations

import pytest

from tests._relay_fixtures import fake_upstream, relay
from tests.test_relay_browser import browser_page

pytestmark = pytest.mark.browser


async def test_page_without_the_relay_token_says_how_to_pass_it() -> None:
    async with (
        fake_upstream() as up,
        relay(up.url + "/v1", token="s3cret") as server,
        browser_page() as page,
    ):
        await page.goto(server.url + "/")
        await page.wait_for_function(
            "document.querySelector('#conn').dataset.state === 'unauthorized'", timeout=15_000
        )
        text = await page.locator("#conn").text_content() or ""
        assert "requires a token" in text and "?token=" in text
        assert "s3cret" not in text


async def test_a_question_not_sent_stays_in_the_input() -> None:
    async with fake_upstream() as up, relay(up.url + "/v1") as server, browser_page() as page:
        await page.goto(server.url + "/")
        await page.wait_for_function("window.streamcite && window.streamcite.connected()")
        # The network goes away: every reconnection attempt fails from now on.
        await page.evaluate(
            "window.WebSocket = function () { throw new Error('offline'); };"
            "window.streamcite.dropConnection()"
        )
        await page.wait_for_function("!window.streamcite.connected()")
        await page.fill("#question", "kept when not sent?")
        await page.evaluate("document.querySelector('#ask').requestSubmit()")
        await page.wait_for_function("document.querySelector('.status')")
        assert await page.locator(".status").first.text_content() == "not sent"
        assert await page.input_value("#question") == "kept when not sent?"
