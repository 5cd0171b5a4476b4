"""The chat page in a real headless Chromium (Debian's, driven by Playwright for Python).

Skips with a reason when /usr/bin/chromium is missing — except under CI=true, where a
missing browser fails the run (see tests/_relay_fixtures.require_chromium). The page is
exercised with its Content-Security-Policy bypassed: rendering must be inert on its own,
the CSP is only a second wall. A screenshot is saved under test-artifacts/ (and copied to
docs/relay-screenshot.png when STREAMCITE_UPDATE_SCREENSHOT=1).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from streamcite import stream_chat
from streamcite.enrich.wikit import WikitSources
from streamcite.grounding.checker import LocalGrounding
from streamcite.local.server import MODEL, BackendConfig, LocalBackend
from tests._relay_fixtures import (
    CHROMIUM_ARGS,
    HOSTILE_CITATIONS,
    fake_upstream,
    relay,
    require_chromium,
)

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
QUESTION = "How many days can I work remotely?"


@contextlib.asynccontextmanager
async def browser_page() -> AsyncIterator[Any]:
    executable = require_chromium()
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            context = await browser.new_context(
                viewport={"width": 1100, "height": 1000}, bypass_csp=True
            )
            page = await context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.errors = errors  # type: ignore[attr-defined]
            yield page
            assert not errors, errors
        finally:
            await browser.close()


async def ask(page: Any, question: str) -> None:
    await page.wait_for_function("window.streamcite && window.streamcite.connected()")
    await page.fill("#question", question)
    await page.click("#send")


async def wait_done(page: Any, index: int = 0, limit_ms: float = 30_000) -> dict[str, Any]:
    await page.wait_for_function(
        f"window.streamcite.streams()[{index}] && window.streamcite.streams()[{index}].done",
        timeout=limit_ms,
    )
    streams: list[dict[str, Any]] = await page.evaluate("window.streamcite.streams()")
    return streams[index]


async def backend_answer(base_url: str, question: str = QUESTION) -> str:
    req = {
        "model": "streamcite-local",
        "messages": [{"role": "user", "content": question}],
        "stream": True,
    }
    async with stream_chat(req, base_url=base_url, transport="aiohttp") as s:
        return (await s.until_done()).text


def save_screenshot(png: bytes, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / name).write_bytes(png)
    if os.environ.get("STREAMCITE_UPDATE_SCREENSHOT") == "1":
        shutil.copyfile(ARTIFACTS / name, ROOT / "docs" / "relay-screenshot.png")


async def test_tokens_stream_footnotes_link_sources_and_claims_are_highlighted() -> None:
    async with LocalBackend(BackendConfig(token_delay=0.04)) as be:
        wikit = WikitSources("streamcite-local", "streamcite-local", base_url=be.root_url)
        async with relay(be.base_url, enrichers=[wikit, LocalGrounding()]) as server:
            expected = await backend_answer(be.base_url)
            async with browser_page() as page:
                await page.goto(server.url + "/")
                await ask(page, QUESTION)
                # tokens render as they arrive: some text while the answer is not done
                await page.wait_for_function(
                    "(() => { const s = window.streamcite.streams()[0];"
                    " return s && !s.done && s.text.length > 0"
                    " && document.querySelector('.turn .text').textContent.length > 0; })()"
                )
                partial = await page.evaluate("window.streamcite.streams()[0].text")
                assert 0 < len(partial) < len(expected) and expected.startswith(partial)
                stream = await wait_done(page)
                await page.wait_for_selector("mark.claim")
                await page.wait_for_selector(".wikit:not([hidden]) .passage")
                assert stream["text"] == expected
                assert stream["verified"] is True
                assert stream["seqs"] == list(range(1, len(stream["seqs"]) + 1))

                # footnotes: superscript links to entries of the sources panel
                links = await page.eval_on_selector_all(
                    "sup.fn a", "els => els.map(a => a.getAttribute('href'))"
                )
                assert links and all(h.startswith("#cite-") for h in links)
                for href in set(links):
                    assert await page.locator(f".sources [id='{href[1:]}']").count() == 1
                assert await page.locator("sup.fn").first.get_attribute("data-marker") == "[1]"
                await page.locator("sup.fn a").first.click()
                assert await page.evaluate("location.hash") == links[0]
                target = page.locator(".passage:target")
                assert await target.count() == 1
                assert "remotely" in (await target.locator("blockquote").text_content() or "")
                doc_href = await page.locator(".sources .doc-title a").first.get_attribute("href")
                assert (doc_href or "").startswith(f"{be.root_url}/documents/")
                assert await page.locator(".sources .reference").count() >= 1

                # grounding: claims highlighted by support, score on hover, support shown
                claims = page.locator("mark.claim")
                assert await claims.count() >= 2
                title = await claims.first.get_attribute("title") or ""
                assert "support score" in title
                assert "supported" in (await claims.first.get_attribute("class") or "")
                joined = "".join(
                    await page.eval_on_selector_all(
                        "mark.claim", "els => els.map(e => e.textContent)"
                    )
                )
                assert "three days per week" in joined
                support = page.locator(".support")
                assert (await support.text_content() or "").startswith("support ")
                # Wikit sources: document, chunk, data source, score
                wikit_text = await page.locator(".wikit").text_content() or ""
                assert "data source:" in wikit_text and "score " in wikit_text
                assert "chunk " in wikit_text

                await page.locator("mark.claim").first.hover()
                save_screenshot(await page.screenshot(full_page=True), "relay-page.png")


_WATCH_FIRST_TINT = """
window.__firstTint = null;
new MutationObserver(() => {
  const mark = document.querySelector("mark.claim");
  if (window.__firstTint !== null || !mark) return;
  const s = window.streamcite.streams()[0];
  window.__firstTint = {
    done: Boolean(s && s.done), chars: s ? s.text.length : 0,
    cls: mark.className, checker: mark.dataset.checker || null, text: mark.textContent,
  };
}).observe(document.body, { subtree: true, childList: true });
"""


async def test_a_sentence_is_tinted_as_its_claim_arrives_before_done() -> None:
    async with LocalBackend(BackendConfig(token_delay=0.03)) as be:
        req = {"model": MODEL, "messages": [{"role": "user", "content": QUESTION}], "stream": True}
        async with stream_chat(req, base_url=be.base_url) as s:
            first = await s.until_done()
        facts = [c.cited_text for c in first.citations if c.cited_text]
        assert facts
        grounding = LocalGrounding(facts=facts)
        async with relay(be.base_url, enrichers=[grounding]) as server, browser_page() as page:
            await page.goto(server.url + "/")
            await page.evaluate(_WATCH_FIRST_TINT)
            await ask(page, QUESTION)
            stream = await wait_done(page)
            tint = await page.evaluate("window.__firstTint")
    assert tint is not None, "no claim was tinted"
    # The first sentence was tinted while the answer was still streaming.
    assert tint["done"] is False and 0 < tint["chars"] < len(stream["text"])
    assert tint["checker"] == "local" and "supported" in tint["cls"]
    assert tint["text"].startswith(stream["text"][:40])  # the first sentence (footnote as <sup>)
    assert stream["claims"] >= 2


async def test_hostile_citation_is_rendered_inert() -> None:
    async with (
        fake_upstream(citations=HOSTILE_CITATIONS) as up,
        relay(up.url + "/v1") as server,
        browser_page() as page,
    ):
        await page.goto(server.url + "/")
        await ask(page, "anything")
        await wait_done(page)
        await page.wait_for_selector(".sources:not([hidden]) .passage")
        assert await page.evaluate("window.__pwned") is None
        assert await page.locator("img, script:not([src]), svg, b").count() == 0
        assert await page.locator("a[href^='javascript:']").count() == 0
        cited = await page.locator("#conversation blockquote.cited").first.text_content()
        assert cited == HOSTILE_CITATIONS[0]["cited_text"]  # shown, as text
        title = page.locator(".sources .doc-title").first
        assert await title.text_content() == HOSTILE_CITATIONS[0]["document_title"]
        assert await title.locator("a").count() == 0  # javascript: is no link
        assert await title.locator(".inert-link").count() == 1
        safe = page.locator(".sources .doc-title a")
        assert await safe.count() == 1
        assert await safe.get_attribute("href") == "https://example.org/doc"
        assert await safe.get_attribute("rel") == "noopener noreferrer"
        save_screenshot(await page.screenshot(full_page=True), "relay-hostile.png")


async def test_connection_cut_mid_answer_resumes_without_loss_or_repeat() -> None:
    async with (
        LocalBackend(BackendConfig(token_delay=0.05)) as be,
        relay(be.base_url) as server,
    ):
        expected = await backend_answer(be.base_url)
        async with browser_page() as page:
            await page.goto(server.url + "/")
            await ask(page, QUESTION)
            await page.wait_for_function(
                "window.streamcite.streams()[0] && window.streamcite.streams()[0].seqs.length >= 8"
            )
            assert server.relay.drop_clients() == 1  # the network cut, server side
            await page.wait_for_selector("#conn[data-state='reconnecting']")
            stream = await wait_done(page)
            assert server.relay.metrics.resumes >= 1
            assert stream["text"] == expected  # not a token lost, none repeated
            assert stream["seqs"] == list(range(1, len(stream["seqs"]) + 1))
            assert stream["verified"] is True
            # what is on screen is the answer, footnote markers shown as superscripts
            shown = await page.locator(".turn .text").first.text_content()
            # (a space before a marker goes with it: "manager [1]." shows "manager¹.")
            assert shown == re.sub(r"[ \t]*\[(\d+)\]", r"\1", expected)
            # a second cut, from the page this time, mid-way through a new answer
            await ask(page, "Quali spese di trasferta sono rimborsate?")
            await page.wait_for_function("window.streamcite.streams().length === 2")
            await page.wait_for_function("window.streamcite.streams()[1].seqs.length >= 4")
            await page.evaluate("window.streamcite.dropConnection()")
            second = await wait_done(page, 1)
            assert second["text"] == await backend_answer(
                be.base_url, "Quali spese di trasferta sono rimborsate?"
            )
            assert second["seqs"] == list(range(1, len(second["seqs"]) + 1))


async def test_stop_cancels_and_errors_show_as_a_banner() -> None:
    async with (
        fake_upstream(delay=0.05, tokens=[f" w{i}" for i in range(400)]) as up,
        relay(up.url + "/v1") as server,
        browser_page() as page,
    ):
        await page.goto(server.url + "/")
        await ask(page, "a long one")
        await page.wait_for_function("window.streamcite.streams()[0]?.seqs.length >= 3")
        assert await page.locator("#stop").is_enabled()
        await page.click("#stop")
        await wait_done(page)
        assert await page.locator(".status").first.get_attribute("data-state") == "cancelled"
        banner = page.locator(".stream-error").first
        assert "cancelled" in (await banner.text_content() or "")
        assert await page.locator("#stop").is_disabled()
        assert up.closed_by_client == 1 and up.completed == 0
    async with (
        fake_upstream(status=503, error_body=b'{"error":{"message":"overloaded"}}') as up,
        relay(up.url + "/v1") as server,
        browser_page() as page,
    ):
        await page.goto(server.url + "/")
        await ask(page, "fails")
        await wait_done(page)
        text = await page.locator(".stream-error").first.text_content() or ""
        assert "upstream_unavailable" in text and "overloaded" in text
        assert await page.locator(".status").first.get_attribute("data-state") == "error"
