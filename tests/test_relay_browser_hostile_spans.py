"""Hostile span frames on the chat page (a real headless Chromium).

The relay's ``citations`` frames come from the core, which bounds and checks them; the
page must still hold against frames it did not expect: spans out of range, negative,
overlapping, ending inside a surrogate pair, thousands of them, titles with markup.
Here Playwright stands in for the relay's WebSocket (the page is the relay's own), so
the frames are exactly the hostile ones written below.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests._relay_fixtures import FakeUpstream, relay, running
from tests.test_relay_browser import ask, browser_page, wait_done

pytestmark = pytest.mark.browser

TEXT = "Paris 🙂 is big. Lyon is not."  # the emoji is a surrogate pair in UTF-16
EMOJI_MID = TEXT.index("🙂") + 1  # a UTF-16 offset between the pair's two halves
CITES = [
    {"document_index": 0, "document_title": "<img src=x onerror=window.__pwned=1>A"},
    {"document_index": 1, "document_title": "B", "source_url": "https://example.org/b"},
]


def _frames(spans: list[Any]) -> list[dict[str, Any]]:
    sid = "s-hostile"
    evs: list[dict[str, Any]] = [
        {"type": "token", "index": 0, "text": TEXT[:9]},
        {"type": "citations", "citations": CITES, "spans": spans},
        {"type": "token", "index": 0, "text": TEXT[9:]},
        {"type": "done", "answer": {"text": TEXT, "citations": CITES}},
    ]
    return [{"stream_id": sid, "seq": i + 1, **ev} for i, ev in enumerate(evs)]


async def _show(page: Any, spans: list[Any]) -> dict[str, Any]:
    def handler(ws: Any) -> None:
        def on_message(message: str | bytes) -> None:
            msg = orjson.loads(message)
            if msg.get("type") == "ask":
                ws.send(
                    orjson.dumps(
                        {"type": "accepted", "ref": msg["ref"], "stream_id": "s-hostile"}
                    ).decode()
                )
                for frame in _frames(spans):
                    ws.send(orjson.dumps(frame).decode())

        ws.on_message(on_message)
        ws.send(orjson.dumps({"type": "hello", "heartbeat_interval": 15}).decode())

    await page.route_web_socket("**/*", handler)
    return await _ask(page)


async def _ask(page: Any) -> dict[str, Any]:
    async with running(FakeUpstream().app()) as url, relay(url + "/v1") as server:
        await page.goto(server.url + "/")
        await ask(page, "Where?")
        return await wait_done(page)


SHOWN = """() => { const t = document.querySelector('.turn .text').cloneNode(true);
  t.querySelectorAll('sup').forEach(s => s.remove()); return t.textContent; }"""

SUPS = """() => [...document.querySelectorAll('.turn .text sup.fn[data-span]')].map(sup => {
  const r = document.createRange();
  r.setStart(document.querySelector('.turn .text'), 0);
  r.setEndBefore(sup);
  const f = r.cloneContents();
  f.querySelectorAll('sup').forEach(s => s.remove());
  return [f.textContent.length, sup.textContent]; })"""


async def test_hostile_spans_stay_inert_and_in_range() -> None:
    good_end = TEXT.index(".") + 1
    spans: list[Any] = [
        {"document_index": 0, "start": -5, "end": -1},  # negative character offsets
        {"document_index": 1, "start": 0, "end": good_end},  # a valid one after it
        {"document_index": 0, "start_utf16": 0, "end_utf16": EMOJI_MID},  # inside the pair
        {"document_index": 0, "start_utf16": 0, "end_utf16": 10**9},  # out of range
        {"document_index": -3, "start_utf16": 0, "end_utf16": 3},  # negative source
        {"document_index": 1, "start_utf16": 2, "end_utf16": 8},  # overlapping
        None,
        "x",
        {"document_index": "0", "end_utf16": "4"},
    ]
    async with browser_page() as page:
        stream = await _show(page, spans)
        assert stream["text"] == TEXT
        assert await page.evaluate(SHOWN) == TEXT  # no half of the emoji, nothing lost
        assert await page.evaluate("window.__pwned") is None
        assert page.errors == []
        ends = await page.evaluate(SUPS)
        # the valid span keeps its own place (a negative one before it moved every
        # later character offset to the end of the text); none cuts the emoji in two
        # and none numbers a source 0 or below
        assert [good_end + 1, "2"] in ends  # in UTF-16: the emoji counts twice
        assert all(end != EMOJI_MID for end, _ in ends)
        assert all(int(n) >= 1 for _, label in ends for n in label.split(","))


async def test_thousands_of_spans_are_bounded() -> None:
    spans = [
        {"document_index": i % 2000, "start_utf16": 0, "end_utf16": 1 + i % len(TEXT)}
        for i in range(20_000)
    ]
    async with browser_page() as page:
        stream = await _show(page, spans)
        assert stream["text"] == TEXT and page.errors == []
        assert stream["spans"] <= 1024
        links = await page.locator(".turn .text sup.fn a").count()
        assert links <= 1024
