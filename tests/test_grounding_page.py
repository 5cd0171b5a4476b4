"""The relay page renders 'nothing to check' for an answer with no claim to check."""

from __future__ import annotations

import pytest

from streamcite.grounding.checker import LocalGrounding
from streamcite.local.server import BackendConfig, LocalBackend
from tests._relay_fixtures import relay
from tests.test_relay_browser import ask, browser_page, wait_done

pytestmark = pytest.mark.browser


async def test_a_refusal_reads_nothing_to_check_not_support_100() -> None:
    async with (
        LocalBackend(BackendConfig()) as be,
        relay(be.base_url, enrichers=[LocalGrounding()]) as server,
        browser_page() as page,
    ):
        await page.goto(server.url + "/")
        await ask(page, "What is the airspeed of an unladen swallow on Jupiter?")
        stream = await wait_done(page)
        assert stream["text"].startswith("I found no source")
        await page.wait_for_function(
            "document.querySelector('.support') && !document.querySelector('.support').hidden"
        )
        support = page.locator(".support")
        assert (await support.text_content() or "") == "nothing to check"
        assert await support.get_attribute("data-level") == "neutral"
