"""The chat page renders reasoning, tool calls and refusals, and tags each message with
its language (issue 10 §5, issue 17 §3), in real Chromium against the relay.

The embedded backend produces the provider shapes (``profile=reasoning``,
``tool_call=NAME``, ``profile=refusal``: streamcite/local/profiles.py) as its server-wide
fault spec; hostile text comes from a scripted upstream. The page runs under the relay's
CSP in one test (its modules load with ``script-src 'self'``) and with the CSP bypassed
in the hostile one: rendering must be inert on its own.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web

from streamcite.enrich.wikit import WikitSources
from streamcite.grounding.checker import LocalGrounding
from streamcite.local.profiles import REASONING_TEXT, REFUSAL_TEXT
from streamcite.local.server import BackendConfig, LocalBackend
from tests._relay_fixtures import CHROMIUM_ARGS, relay, require_chromium, running
from tests.test_relay_browser import backend_answer

pytestmark = pytest.mark.browser

QUESTION = "How many days can I work remotely?"


def save_artifact(png: bytes, name: str) -> None:
    """Keep a screenshot under test-artifacts/ (never the docs' screenshot)."""
    folder = Path(__file__).resolve().parent.parent / "test-artifacts"
    folder.mkdir(exist_ok=True)
    (folder / name).write_bytes(png)


@contextlib.asynccontextmanager
async def page_for(url: str, *, bypass_csp: bool = True) -> AsyncIterator[Any]:
    """A Chromium page on ``url``; fails the test on any page error."""
    executable = require_chromium()
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            context = await browser.new_context(
                viewport={"width": 1000, "height": 900}, bypass_csp=bypass_csp
            )
            page = await context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on(
                "console",
                lambda msg: errors.append(msg.text) if msg.type == "error" else None,
            )
            await page.goto(url)
            yield page
            assert not errors, errors
        finally:
            await browser.close()


STREAM = "window.streamcite.streams()[0]"


async def until(page: Any, condition: str, limit_ms: int = 30_000) -> None:
    """Wait until the JS expression ``condition`` holds in the page (checked every 10 ms).

    Playwright's ``wait_for_function`` evaluates its predicate with ``eval``, which the
    relay's CSP forbids; ``page.evaluate`` compiles this whole function through the
    DevTools protocol instead, so it works with the CSP enforced.
    """
    await page.evaluate(
        "() => new Promise((ok, fail) => { const t0 = performance.now();"
        " const check = () => { let v = false; try { v = (" + condition + "); } catch (e) {}"
        " if (v) return ok(true);"
        " if (performance.now() - t0 > " + str(limit_ms) + ")"
        " return fail(new Error('timed out waiting for: ' + " + json.dumps(condition) + "));"
        " setTimeout(check, 10); }; check(); })"
    )


async def ask(page: Any, question: str) -> None:
    await until(page, "window.streamcite && window.streamcite.connected()")
    await page.fill("#question", question)
    await page.click("#send")


async def wait_done(page: Any, index: int = 0) -> dict[str, Any]:
    await until(page, f"window.streamcite.streams()[{index}]?.done")
    streams: list[dict[str, Any]] = await page.evaluate("window.streamcite.streams()")
    return streams[index]


async def test_reasoning_streams_open_then_folds_when_the_answer_starts() -> None:
    async with (
        LocalBackend(BackendConfig(token_delay=0.1, faults="profile=reasoning")) as be,
        relay(be.base_url, enrichers=[LocalGrounding()]) as server,
    ):
        expected = await backend_answer(be.base_url)
        # the relay's own CSP is enforced here: the page's modules load under it
        async with page_for(server.url + "/", bypass_csp=False) as page:
            await ask(page, QUESTION)
            # while the model reasons (no answer token yet) the block is shown, open
            await until(
                page,
                f"(() => {{ const s = {STREAM}; const d = document.querySelector('.reasoning');"
                " return s && s.reasoning.length > 0 && s.text === '' && !d.hidden && d.open"
                " && d.querySelector('.reasoning-text').textContent === s.reasoning; })()",
            )
            # once the answer starts it is folded (and the answer keeps streaming)
            await until(
                page,
                f"(() => {{ const s = {STREAM}; return s.text.length > 0 && !s.done"
                " && !document.querySelector('.reasoning').open; })()",
            )
            stream = await wait_done(page)
            assert stream["reasoning"] == REASONING_TEXT
            assert stream["text"] == expected and stream["verified"] is True
            assert stream["seqs"] == list(range(1, len(stream["seqs"]) + 1))
            details = page.locator(".reasoning")
            assert await details.get_attribute("open") is None
            assert await page.locator(".reasoning-text").text_content() == REASONING_TEXT
            words = len(REASONING_TEXT.split())
            assert await page.locator(".reasoning summary").text_content() == (
                f"Reasoning ({words} words)"
            )
            # above the answer, and the reader can open it again
            above = await page.evaluate(
                "document.querySelector('.reasoning').compareDocumentPosition("
                "document.querySelector('.turn .text')) & Node.DOCUMENT_POSITION_FOLLOWING"
            )
            assert above
            await page.click(".reasoning summary")
            assert await details.evaluate("d => d.open") is True
            assert await page.locator(".reasoning-text").is_visible()
            await until(page, "document.querySelector('mark.claim')")  # grounding as usual
            save_artifact(await page.screenshot(full_page=True), "relay-reasoning.png")


async def test_reasoning_resumes_after_a_cut_without_loss_or_repeat() -> None:
    async with (
        LocalBackend(BackendConfig(token_delay=0.1, faults="profile=reasoning")) as be,
        relay(be.base_url) as server,
        page_for(server.url + "/") as page,
    ):
        await ask(page, QUESTION)
        await until(
            page, f"{STREAM} && {STREAM}.reasoning.split(' ').length >= 3 && {STREAM}.text === ''"
        )
        assert server.relay.drop_clients() == 1  # the network cut, mid-reasoning
        await until(page, "document.querySelector('#conn').dataset.state === 'reconnecting'")
        stream = await wait_done(page)
        assert server.relay.metrics.resumes >= 1
        assert stream["reasoning"] == REASONING_TEXT  # not a word lost, none repeated
        assert await page.locator(".reasoning-text").text_content() == REASONING_TEXT
        assert stream["seqs"] == list(range(1, len(stream["seqs"]) + 1))
        assert stream["verified"] is True


async def test_tool_call_card_builds_up_then_pretty_prints_its_arguments() -> None:
    async with (
        LocalBackend(BackendConfig(token_delay=0.3, faults="tool_call=search_docs")) as be,
        relay(be.base_url, enrichers=[LocalGrounding()]) as server,
        page_for(server.url + "/") as page,
    ):
        await ask(page, QUESTION)
        # the card is there with its name before the arguments are complete
        await until(
            page,
            "(() => { const c = document.querySelector('.tool-call');"
            " return c && c.dataset.json === 'partial'"
            " && c.querySelector('.tool-name').textContent === 'search_docs'"
            " && c.querySelector('.tool-args').textContent.length > 0; })()",
        )
        partial = await page.locator(".tool-args").text_content() or ""
        stream = await wait_done(page)
        [call] = stream["toolCalls"]
        assert call["name"] == "search_docs" and call["id"].startswith("call_")
        args = call["arguments"]
        assert args.startswith(partial) and len(partial) < len(args)
        card = page.locator(".tool-call")
        assert await card.count() == 1
        assert await card.get_attribute("data-json") == "valid"
        shown = await page.locator(".tool-args").text_content()
        assert shown == json.dumps(json.loads(args), indent=2, ensure_ascii=False)
        assert await page.locator(".tool-id").text_content() == call["id"]
        assert await page.locator(".tool-note").is_hidden()
        assert not await page.locator(".tool-calls").is_hidden()
        assert stream["text"] == "" and stream["seqs"] == list(range(1, len(stream["seqs"]) + 1))
        save_artifact(await page.screenshot(full_page=True), "relay-tool-call.png")


async def test_refusal_is_shown_as_such_and_not_as_a_grounding_failure() -> None:
    async with LocalBackend(BackendConfig(token_delay=0.02, faults="profile=refusal")) as be:
        wikit = WikitSources("streamcite-local", "streamcite-local", base_url=be.root_url)
        async with (
            relay(be.base_url, enrichers=[wikit, LocalGrounding()]) as server,
            page_for(server.url + "/") as page,
        ):
            await ask(page, QUESTION)
            stream = await wait_done(page)
            assert stream["refusal"] == REFUSAL_TEXT
            assert stream["text"] == "" and stream["verified"] is True
            refusal = page.locator(".refusal")
            assert await refusal.is_visible()
            assert await page.locator(".refusal-text").text_content() == REFUSAL_TEXT
            assert await page.locator(".status").get_attribute("data-state") == "refused"
            # no grounding shown as failure: a neutral note, no claims, no red
            support = page.locator(".support")
            assert await support.get_attribute("data-level") == "neutral"
            assert await support.get_attribute("data-skipped") == "refusal"
            assert "declined" in (await support.text_content() or "")
            assert await page.locator("mark.claim").count() == 0
            assert await page.locator(".stream-error").count() == 0
            assert await page.locator(".sources").is_hidden()
            style = await refusal.evaluate(
                "n => { const c = getComputedStyle(n); return [c.borderStyle, c.backgroundColor]; }"
            )
            text_bg = await page.locator(".answer").evaluate(
                "n => getComputedStyle(n).backgroundColor"
            )
            assert style[0] == "dashed" and style[1] != text_bg  # styled apart from an answer
            save_artifact(await page.screenshot(full_page=True), "relay-refusal.png")


# -- hostile text in the new parts ------------------------------------------------------

HOSTILE_REASONING = '<img src=x onerror="window.__pwned=1">thinking'
HOSTILE_TOOL = "<script>window.__pwned=2</script>"
HOSTILE_ARGS = ['{"q": "<img src=x onerror=', '\\"window.__pwned=3\\">"}']
HOSTILE_REFUSAL = "<svg onload=window.__pwned=4></svg>no"


def _frame(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {
        "id": "chatcmpl-hostile",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "fake",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + orjson.dumps(body) + b"\n\n"


async def _hostile(request: web.Request) -> web.StreamResponse:
    await request.read()
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    tool = {"index": 0, "id": "call_<b>x</b>", "type": "function"}
    frames = [
        _frame({"role": "assistant", "content": None}),
        _frame({"reasoning_content": HOSTILE_REASONING}),
        _frame({"tool_calls": [{**tool, "function": {"name": HOSTILE_TOOL, "arguments": ""}}]}),
        *[
            _frame({"tool_calls": [{"index": 0, "function": {"arguments": a}}]})
            for a in HOSTILE_ARGS
        ],
        _frame({"refusal": HOSTILE_REFUSAL}),
        _frame({}, "stop"),
        b"data: [DONE]\n\n",
    ]
    for f in frames:
        await resp.write(f)
    return resp


async def test_hostile_reasoning_tool_call_and_refusal_stay_inert() -> None:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", _hostile)
    async with (
        running(app) as url,
        relay(url + "/v1") as server,
        page_for(server.url + "/") as page,
    ):
        await ask(page, "anything")
        stream = await wait_done(page)
        assert await page.evaluate("window.__pwned") is None
        assert await page.locator("#conversation img, #conversation svg").count() == 0
        assert await page.locator("#conversation script, #conversation b").count() == 0
        assert await page.locator(".reasoning-text").text_content() == HOSTILE_REASONING
        assert await page.locator(".tool-name").text_content() == HOSTILE_TOOL
        assert await page.locator(".tool-id").text_content() == "call_<b>x</b>"
        args = "".join(HOSTILE_ARGS)
        shown = await page.locator(".tool-args").text_content()
        assert shown == json.dumps(json.loads(args), indent=2)  # pretty, and as text
        assert await page.locator(".refusal-text").text_content() == HOSTILE_REFUSAL
        assert stream["refusal"] == HOSTILE_REFUSAL and stream["reasoning"] == HOSTILE_REASONING


# -- language of each message (issue 17 §3) -------------------------------------------


async def test_messages_carry_the_language_they_are_written_in() -> None:
    async with LocalBackend(BackendConfig()) as be:
        wikit = WikitSources("streamcite-local", "streamcite-local", base_url=be.root_url)
        async with (
            relay(be.base_url, enrichers=[wikit]) as server,
            page_for(server.url + "/") as page,
        ):
            await ask(page, "כמה ימים אפשר לעבוד מהבית?")
            await wait_done(page)
            await page.wait_for_selector(".sources:not([hidden]) .doc")
            await page.wait_for_selector(".wikit:not([hidden]) .doc")
            assert await page.locator(".question").get_attribute("lang") == "he"
            assert await page.locator(".turn .text").get_attribute("lang") == "he"
            langs = await page.eval_on_selector_all(
                ".sources .doc, .wikit .doc", "els => els.map(e => e.getAttribute('lang'))"
            )
            assert langs and set(langs) == {"he"}
            # the page's own words stay English
            assert await page.locator(".status").evaluate("n => n.closest('[lang]').lang") == "en"
            # a Latin-script question: language unknown, said so (not inherited "en")
            await ask(page, "Combien de jours de télétravail par semaine ?")
            await wait_done(page, 1)
            second = page.locator(".turn").nth(1)
            assert await second.locator(".question").get_attribute("lang") == ""
            assert await second.locator(".text").get_attribute("lang") == ""
            # the detector itself: unambiguous scripts only
            got = await page.evaluate(
                """async () => {
                  const m = await import('/static/lang.js');
                  return {
                    el: m.languageOf('Πόσες μέρες τηλεργασίας;'),
                    ja: m.languageOf('在宅勤務は週に何日できますか'),
                    zh: m.languageOf('每周可以远程工作几天'),
                    ru: m.languageOf('Сколько дней можно работать из дома?'),
                    ar: m.languageOf('كم يوما يمكنني العمل عن بعد؟'),
                    en: m.languageOf('How many days?'),
                    mixed: m.languageOf('מדיניות עבודה מרחוק (Remote work policy) — עד שלושה ימים'),
                    none: m.languageOf('42 — 7'),
                    stated: m.statedLanguage('fr-CA'),
                    bad: m.statedLanguage('<b>'),
                  };
                }"""
            )
            assert got == {
                "el": "el",
                "ja": "ja",
                "zh": "",
                "ru": "",
                "ar": "",
                "en": "",
                "mixed": "he",
                "none": "",
                "stated": "fr-CA",
                "bad": None,
            }
