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


async def test_hebrew_reads_right_to_left_and_passages_show_no_markdown() -> None:
    from streamcite.enrich.wikit import WikitSources
    from streamcite.local.server import BackendConfig, LocalBackend
    from tests.test_relay_browser import ask, wait_done

    async with LocalBackend(BackendConfig()) as be:
        wikit = WikitSources("streamcite-local", "streamcite-local", base_url=be.root_url)
        async with relay(be.base_url, enrichers=[wikit]) as server, browser_page() as page:
            await page.goto(server.url + "/")
            await ask(page, "כמה ימים אפשר לעבוד מהבית?")
            await wait_done(page)
            # Wikit's passages are the cited ones: shown once, under Sources (issue 27)
            await page.wait_for_selector(".sources blockquote.cited")
            direction = "el => getComputedStyle(el).direction"
            assert await page.locator(".question").first.evaluate(direction) == "rtl"
            assert await page.locator(".turn .text").first.evaluate(direction) == "rtl"
            quoted = await page.locator(".sources blockquote.cited").all_text_contents()
            assert quoted and not any(q.lstrip().startswith("#") for q in quoted)
            assert not any("\n#" in q for q in quoted)
            # the footnote is tied to the word before it (a word joiner before the number)
            joiner = "el => getComputedStyle(el, '::before').content"
            assert await page.locator("sup.fn").first.evaluate(joiner) == '"\u2060"'
