"""Review of the relay page's Sources panel (a real headless Chromium): a passage is
shown as text, and at most ``MAX_PASSAGE_CHARS`` (2,000) characters of it.

Before, each passage was put in the page whole: a provider quoting a whole document (or
a hostile one quoting 16 MiB, which the core keeps: no passage cap there yet) put all of
it in the DOM, again at every ``citations`` event (the panel is drawn anew each time).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests._relay_fixtures import relay, running
from tests.test_relay_browser import ask, browser_page, wait_done
from tests.test_relay_browser_spans import upstream

pytestmark = pytest.mark.browser

HOSTILE = '<img src=x onerror="window.__pwned=1"> \u202e'
_POLICY = {
    "type": "web_search_result_location",
    "url": "https://example.org/remote",
    "title": "Remote Work Policy",
    "encrypted_index": "e1",
}
LONG = HOSTILE + " ".join(f"word{i}" for i in range(30_000))  # ~230,000 characters
BLOCKS: list[tuple[str, dict[str, Any] | None]] = [
    ("Remote work is allowed up to three days per week.", {**_POLICY, "cited_text": LONG}),
    (" ", None),
    ("Tuesday is a team day.", {**_POLICY, "cited_text": "\U0001f600" * 3000}),
]


async def test_long_passages_are_cut_and_inert() -> None:
    async with (
        running(upstream(BLOCKS)) as url,
        relay(url + "/v1", api="anthropic", model="claude-test") as server,
        browser_page() as page,
    ):
        await page.goto(server.url + "/")
        await ask(page, "How many remote days?")
        stream = await wait_done(page)
        assert stream["spans"] == 2
        await page.wait_for_selector(".sources article.doc blockquote.cited")
        quotes: list[str] = await page.eval_on_selector_all(
            ".sources article.doc blockquote.cited", "els => els.map(e => e.textContent)"
        )
        assert len(quotes) == 2
        assert all(len(q) <= 2001 and q.endswith("…") for q in quotes), [len(q) for q in quotes]
        assert quotes[0].startswith(HOSTILE.strip())  # the markup is shown as text
        assert set(quotes[1][:-1]) == {"\U0001f600"}  # no half of a surrogate pair before "…"
        assert await page.locator(".sources img").count() == 0
        assert await page.evaluate("() => window.__pwned === undefined")
