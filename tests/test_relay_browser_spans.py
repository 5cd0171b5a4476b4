"""The chat page shows footnotes for span-anchored citations (a real headless Chromium).

Anthropic, Gemini and Responses answers carry no ``[n]`` in their text: their citations
anchor spans of it. The relay's ``citations`` frames carry those spans (UTF-16 offsets);
the page puts a footnote link after each span, pointing into the sources panel, and
leaves the text itself as it came. The upstream here is an Anthropic Messages stream
written for this test: two cited text blocks (the first with an emoji, so UTF-16 and
characters differ) and an uncited one between them.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from aiohttp import web

from tests._relay_fixtures import relay, running
from tests.test_relay_browser import ask, browser_page, save_screenshot, wait_done

pytestmark = pytest.mark.browser

BLOCKS: list[tuple[str, dict[str, Any] | None]] = [
    (
        "Remote work 🙂 is allowed up to three days per week.",
        {
            "type": "web_search_result_location",
            "url": "https://example.org/remote",
            "title": "Remote Work Policy",
            "cited_text": "Employees may work remotely up to three days per week.",
            "encrypted_index": "e1",
        },
    ),
    (" Otherwise, ", None),
    (
        "laptops must use full-disk encryption.",
        {
            "type": "web_search_result_location",
            "url": "https://example.org/security",
            "title": "Information Security Policy",
            "cited_text": "Laptops must use full-disk encryption.",
            "encrypted_index": "e2",
        },
    ),
]
TEXT = "".join(text for text, _ in BLOCKS)


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return (
        f"event: {event}\n".encode() + b"data: " + orjson.dumps({"type": event, **data}) + b"\n\n"
    )


def anthropic_stream(blocks: list[tuple[str, dict[str, Any] | None]] = BLOCKS) -> list[bytes]:
    message = {
        "id": "msg_spans",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 9, "output_tokens": 1},
    }
    out = [_sse("message_start", {"message": message})]
    for i, (text, cite) in enumerate(blocks):
        block: dict[str, Any] = {"type": "text", "text": ""}
        if cite is not None:
            block["citations"] = []
        out.append(_sse("content_block_start", {"index": i, "content_block": block}))
        if cite is not None:
            delta = {"type": "citations_delta", "citation": cite}
            out.append(_sse("content_block_delta", {"index": i, "delta": delta}))
        half = len(text) // 2
        for piece in (text[:half], text[half:]):
            delta = {"type": "text_delta", "text": piece}
            out.append(_sse("content_block_delta", {"index": i, "delta": delta}))
        out.append(_sse("content_block_stop", {"index": i}))
    out.append(
        _sse(
            "message_delta",
            {
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 30},
            },
        )
    )
    out.append(_sse("message_stop", {}))
    return out


def upstream(blocks: list[tuple[str, dict[str, Any] | None]] = BLOCKS) -> web.Application:
    async def messages(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for part in anthropic_stream(blocks):
            await resp.write(part)
        return resp

    app = web.Application()
    app.router.add_post("/v1/messages", messages)
    return app


async def test_span_anchored_citations_get_footnotes() -> None:
    async with (
        running(upstream()) as url,
        relay(url + "/v1", api="anthropic", model="claude-test") as server,
        browser_page() as page,
    ):
        await page.goto(server.url + "/")
        await ask(page, "How many remote days, and what about laptops?")
        stream = await wait_done(page)
        assert stream["text"] == TEXT and stream["verified"] is True
        assert stream["spans"] == 2
        await page.wait_for_selector("sup.fn[data-span]")
        sups = page.locator(".turn .text sup.fn")
        assert await sups.count() == 2
        assert await page.locator("sup.fn[data-marker]").count() == 0  # no [n] to replace
        # each footnote follows its span: the text before it is the text up to the span end
        before = await page.evaluate(
            """() => [...document.querySelectorAll('.turn .text sup.fn')].map(sup => {
                 const r = document.createRange();
                 r.setStart(document.querySelector('.turn .text'), 0);
                 r.setEndBefore(sup);
                 const f = r.cloneContents();
                 f.querySelectorAll('sup').forEach(s => s.remove());
                 return f.textContent; })"""
        )
        assert before == [BLOCKS[0][0], TEXT]
        # the text shown is the answer's, footnote numbers aside
        shown = await page.evaluate(
            """() => { const t = document.querySelector('.turn .text').cloneNode(true);
                 t.querySelectorAll('sup').forEach(s => s.remove()); return t.textContent; }"""
        )
        assert shown == TEXT
        # the links lead to the cited passages in the sources panel
        hrefs = await page.eval_on_selector_all(
            "sup.fn a", "els => els.map(a => a.getAttribute('href'))"
        )
        assert [h.rsplit("-", 1)[1] for h in hrefs] == ["1", "2"]
        for href in hrefs:
            assert await page.locator(f".sources [id='{href[1:]}']").count() == 1
        await page.locator("sup.fn a").nth(1).click()
        target = page.locator(".passage:target blockquote")
        assert await target.text_content() == BLOCKS[2][1]["cited_text"]  # type: ignore[index]
        save_screenshot(await page.screenshot(full_page=True), "relay-spans.png")


# One document cited twice, each time with its own passage (as Anthropic does).
_POLICY = {
    "type": "web_search_result_location",
    "url": "https://example.org/remote",
    "title": "Remote Work Policy",
    "encrypted_index": "e1",
}
TWICE: list[tuple[str, dict[str, Any] | None]] = [
    (
        "Remote work is allowed up to three days per week.",
        {**_POLICY, "cited_text": "Employees may work remotely up to three days per week."},
    ),
    (" ", None),
    ("Tuesday is a team day.", {**_POLICY, "cited_text": "Tuesday is a team day for everyone."}),
]


async def test_each_footnote_shows_its_own_passage() -> None:
    async with (
        running(upstream(TWICE)) as url,
        relay(url + "/v1", api="anthropic", model="claude-test") as server,
        browser_page() as page,
    ):
        await page.goto(server.url + "/")
        await ask(page, "How many remote days, and which is the team day?")
        stream = await wait_done(page)
        assert stream["spans"] == 2
        await page.wait_for_selector(".sources article.doc")
        assert await page.locator(".sources article.doc").count() == 1  # one source...
        quotes = await page.eval_on_selector_all(
            ".sources article.doc blockquote.cited", "els => els.map(e => e.textContent)"
        )
        # ...and both passages the provider quoted from it, each once
        assert quotes == [TWICE[0][1]["cited_text"], TWICE[2][1]["cited_text"]]  # type: ignore[index]
