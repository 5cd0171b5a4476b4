"""The chat page, round 3 (issue 27 §5), in real Chromium over the embedded backend:
sources grouped by document, footnotes with no space before them and never alone on a
line, "14 tokens" in a right-to-left answer, retrieved passages not repeating Sources."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from streamcite import stream_chat
from streamcite.apps.ask import DEMO_QUESTION
from streamcite.enrich import WikitSources
from streamcite.local import BackendConfig, LocalBackend
from tests._relay_fixtures import relay
from tests.test_relay_browser import ask, browser_page, wait_done

pytestmark = pytest.mark.browser


@asynccontextmanager
async def page_over_backend(question: str = DEMO_QUESTION) -> AsyncIterator[tuple[Any, Any]]:
    """The page over a relay over the embedded backend, and the answer the same question
    gets from the backend directly (the backend is deterministic)."""
    async with LocalBackend(BackendConfig()) as be:
        wikit = WikitSources(base_url=be.root_url)  # no ids: the embedded backend
        request = {
            "model": "streamcite-local",
            "messages": [{"role": "user", "content": question}],
            "stream": True,
        }
        async with stream_chat(request, base_url=be.base_url, after=[wikit]) as direct:
            answer = await direct.until_done()
        async with relay(be.base_url, enrichers=[wikit]) as server, browser_page() as page:
            await page.goto(server.url + "/")
            yield page, answer


async def test_sources_are_grouped_by_document_not_by_chunk_anchor() -> None:
    async with page_over_backend() as (page, answer):
        await ask(page, DEMO_QUESTION)  # two documents, one of them cited twice
        await wait_done(page)
        await page.wait_for_selector(".sources .doc-title")
        urls = [c.source_url for c in answer.citations]
        assert len(urls) == 3 and len({u.split("#")[0] for u in urls}) == 2, urls
        titles = await page.locator(".sources .doc-title").all_text_contents()
        assert sorted(titles) == ["Information Security Policy", "Remote Work Policy"]
        # the document links to itself; each passage links to its own chunk
        heads = await page.locator(".sources .doc-title a").evaluate_all(
            "els => els.map(a => a.getAttribute('href'))"
        )
        assert all("#" not in h for h in heads), heads
        nums = await page.locator(".sources .passage a.num").evaluate_all(
            "els => els.map(a => a.getAttribute('href'))"
        )
        assert sorted(nums) == sorted(urls)


_FOOTNOTE_LAYOUT = """
() => {
  const out = [];
  for (const sup of document.querySelectorAll('.turn .text sup.fn')) {
    const keep = sup.parentElement;
    const word = keep.firstChild;
    const range = document.createRange();
    range.setStart(word, Math.max(0, word.data.length - 1));
    range.setEnd(word, word.data.length);
    const last = range.getBoundingClientRect();
    const mark = sup.getBoundingClientRect();
    out.push({
      keep: keep.className,
      nowrap: getComputedStyle(keep).whiteSpace,
      word: word.data,
      before: (keep.previousSibling && keep.previousSibling.textContent) || '',
      sameLine: mark.top < last.bottom && last.top < mark.bottom,
      gap: mark.left - last.right,
    });
  }
  return out;
}
"""


async def test_a_footnote_has_no_space_before_it_and_never_wraps_alone() -> None:
    async with page_over_backend() as (page, _):
        await ask(page, DEMO_QUESTION)
        stream = await wait_done(page)
        assert " [1]" in stream["text"]  # the backend writes "manager [1]."
        visible = await page.locator(".turn .text").first.inner_text()
        assert "manager¹" in visible.replace("\u2060", "") or "manager1" in visible
        assert " [1]" not in visible
        # At every width from narrow to wide, each footnote sits on its word's line.
        for width in range(140, 520, 9):
            await page.evaluate(f"document.querySelector('.turn .text').style.width = '{width}px'")
            layout = await page.evaluate(_FOOTNOTE_LAYOUT)
            assert layout, "no footnote rendered"
            for fn in layout:
                assert fn["keep"] == "fn-keep" and fn["nowrap"] == "nowrap", fn
                assert fn["word"].strip() == fn["word"] and not fn["before"].endswith(" ["), fn
                assert fn["sameLine"], (width, fn)
                assert fn["gap"] < 3.0, (width, fn)  # no space before the number


async def test_the_token_count_reads_number_first_in_a_right_to_left_answer() -> None:
    async with page_over_backend() as (page, _):
        await ask(page, "כמה ימים אפשר לעבוד מהבית?")
        await wait_done(page)
        usage = page.locator(".turn .usage").first
        await page.wait_for_function(
            "/\\d+ tokens/.test(document.querySelector('.turn .usage').textContent)"
        )
        direction = "el => getComputedStyle(el.closest('.answer')).direction"
        assert await usage.evaluate(direction) == "rtl"
        # Where the number and the word are drawn: the number on the left of "tokens".
        order = await usage.evaluate(
            """el => {
              const node = [...el.childNodes].concat([...el.querySelectorAll('*')].flatMap(
                e => [...e.childNodes])).find(n => n.nodeType === 3 && /tokens/.test(n.data));
              const at = node.data.indexOf('tokens');
              const digits = node.data.search(/\\d/);
              const r = document.createRange();
              r.setStart(node, digits); r.setEnd(node, digits + 1);
              const number = r.getBoundingClientRect().left;
              r.setStart(node, at); r.setEnd(node, at + 6);
              return { number, word: r.getBoundingClientRect().left };
            }"""
        )
        assert order["number"] < order["word"], order
        for selector in (".status", ".support", ".usage"):
            assert await page.locator(f".turn {selector}").first.get_attribute("dir") == "auto"


async def test_retrieved_passages_do_not_repeat_the_sources() -> None:
    async with page_over_backend() as (page, answer):
        await ask(page, DEMO_QUESTION)
        await wait_done(page)
        assert len(answer.sources) == 3  # Wikit returned the three cited passages
        await page.wait_for_selector(".wikit:not([hidden]) .passage")
        wikit = page.locator(".turn .wikit").first
        assert await wikit.get_attribute("data-repeated") == "3"
        # the passages' own data stays (score, data source, chunk); their text is not repeated
        assert await wikit.locator("blockquote").count() == 0
        pointers = wikit.locator("a.same-as")
        assert await pointers.count() == 3
        for i in range(3):
            href = await pointers.nth(i).get_attribute("href") or ""
            assert href.startswith("#cite-")
            assert await page.locator(f".sources [id='{href[1:]}']").count() == 1
        panels = await page.locator(".turn .sources").first.inner_text()
        panels += await wikit.inner_text()
        assert panels.count("Employees may work remotely") == 1
        assert "score " in panels and "data source:" in panels
