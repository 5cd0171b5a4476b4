"""``provider_tool`` events where people see them: the AI SDK UI message stream (parts the
AI SDK's own schema takes, read by its own client where node is set up), the relay (its
frames, its page in Chromium) and ``ask`` (one terminal-safe line per tool).

The upstream is a loopback server replaying the project's fixture
``tests/fixtures/dialects/anthropic__server_tools.sse`` (or a hostile variant of it)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web
from click.testing import CliRunner

from streamcite import stream_chat
from streamcite.cli import main
from streamcite.core.api import ChatStreamParser
from streamcite.events import ProviderToolEvent
from streamcite.web.aiohttp import ui_message_handler
from streamcite.web.uimessage import UIMessageEncoder
from tests._relay_fixtures import relay, running, ws_client
from tests._upstream import threaded_upstream

FIXTURE = Path(__file__).parent / "fixtures" / "dialects" / "anthropic__server_tools.sse"
STREAM = FIXTURE.read_bytes()
ANSWER = "Je regarde le site du café.Le café ouvre à 8 h ☕ et ferme à 18 h (10 h d’ouverture)."
NODE_DIR = Path(__file__).parent.parent / "examples" / "usechat"
NODE = shutil.which("node")
NODE_READY = NODE is not None and (NODE_DIR / "node_modules" / "ai").is_dir()


def _messages_app(stream: bytes = STREAM) -> web.Application:
    async def messages(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(stream)
        return resp

    app = web.Application()
    app.router.add_post("/v1/messages", messages)
    return app


def _frames(data: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(line[6:]) for line in data.split(b"\n\n") if line.startswith(b"data: {")]


# -- the AI SDK UI message stream ---------------------------------------------------------


def _encode(events: list[Any]) -> list[dict[str, Any]]:
    enc = UIMessageEncoder("msg-t")
    data = enc.start() + b"".join(enc.feed(e) for e in events) + enc.close()
    return _frames(data)


def test_ui_stream_maps_provider_tools_to_provider_executed_tool_parts() -> None:
    parser = ChatStreamParser(dialect="anthropic")
    events = [*parser.feed(STREAM), *parser.close(), parser.done_event()]
    frames = _encode(events)
    assert not [f for f in frames if f["type"] == "error"], frames
    tool = [f for f in frames if f["type"].startswith("tool-")]
    ws = [f for f in tool if f["toolCallId"] == "srvtoolu_1"]
    assert ws == [
        {"type": "tool-input-available", "toolCallId": "srvtoolu_1", "toolName": "web_search",
         "input": {"query": "café Tel Aviv horaires"}, "providerExecuted": True},
        {"type": "tool-output-available", "toolCallId": "srvtoolu_1", "providerExecuted": True,
         "output": {"status": "completed", "summary": {"count": 1, "results": [
             {"type": "web_search_result", "url": "https://example.org/cafe-tel-aviv",
              "title": "Le café — תל אביב", "page_age": None}]}}},
    ]  # fmt: skip
    # A result without its call: its input part first (``{}``), then its output.
    fetch = [f["type"] for f in tool if f["toolCallId"] == "srvtoolu_5"]
    assert fetch == ["tool-input-available", "tool-output-available"]
    # Only the fields of the AI SDK's strict chunk schemas (ui-message-chunks.ts).
    allowed = {
        "tool-input-start": {"type", "toolCallId", "toolName", "providerExecuted"},
        "tool-input-available": {"type", "toolCallId", "toolName", "input", "providerExecuted"},
        "tool-output-available": {"type", "toolCallId", "output", "providerExecuted"},
        "tool-output-error": {"type", "toolCallId", "errorText", "providerExecuted"},
    }
    assert all(set(f) <= allowed[f["type"]] for f in tool), tool
    assert [f["type"] for f in tool].count("tool-output-available") == 6


def test_ui_stream_a_call_without_input_then_a_failed_result() -> None:
    call = ProviderToolEvent(tool_index=0, id="mcp_1", name="t", phase="call", status="in_progress")
    result = ProviderToolEvent(tool_index=0, id="mcp_1", name="t", phase="result",
                               input='{"a":1}', status="failed", summary={"error": {}})  # fmt: skip
    gem = ProviderToolEvent(tool_index=1, name="code_execution", phase="call", input='{"code":"1"}')
    frames = _encode([call, result, gem])
    assert [(f["type"], f.get("toolCallId")) for f in frames[2:-2]] == [
        ("tool-input-start", "mcp_1"),
        ("tool-input-available", "mcp_1"),
        ("tool-output-error", "mcp_1"),
        ("tool-input-available", "provider-tool-1"),  # Gemini's carry no id
    ]
    assert frames[3]["input"] == {"a": 1} and frames[3]["providerExecuted"] is True
    assert frames[4]["errorText"] == "t: failed"


@pytest.mark.skipif(not NODE_READY, reason="node or examples/usechat deps missing")
async def test_the_ai_sdk_client_reads_the_provider_tool_parts(serve: Any) -> None:
    from tests.test_web_node import run_node

    upstream = await serve(_messages_app())

    def make(question: str, body: dict[str, Any]) -> Any:
        request = {"model": "claude-t", "max_tokens": 100, "stream": True,
                   "messages": [{"role": "user", "content": question}]}  # fmt: skip
        return stream_chat(request, base_url=upstream + "/v1", api="anthropic")

    app = web.Application()
    app.router.add_post("/api/chat", ui_message_handler(make))
    url = await serve(app)
    got = await run_node(url + "/api/chat", "Horaires du café ?")
    assert got["errors"] == []
    parts = got["message"]["parts"]
    tools = {p["toolCallId"]: p for p in parts if p["type"].startswith("tool-")}
    web_search = tools["srvtoolu_1"]
    assert web_search["type"] == "tool-web_search" and web_search["state"] == "output-available"
    assert web_search["providerExecuted"] is True
    assert web_search["input"] == {"query": "café Tel Aviv horaires"}
    assert web_search["output"]["summary"]["count"] == 1
    assert tools["mcptoolu_1"]["type"] == "tool-horaires"
    assert len(tools) == 6
    text = "".join(p["text"] for p in parts if p["type"] == "text")
    assert text == ANSWER


# -- the relay ----------------------------------------------------------------------------


async def test_relay_forwards_provider_tools_and_keeps_them_on_the_answer() -> None:
    async with (
        running(_messages_app()) as url,
        relay(url + "/v1", api="anthropic") as server,
        ws_client(server) as client,
    ):
        sid = await client.ask("Horaires du café ?")
        done = await client.until_done(sid)
        events = client.events(sid)
    tools = [e for e in events if e["type"] == "provider_tool"]
    assert [(t["tool_index"], t["phase"]) for t in tools][:2] == [(0, "call"), (0, "result")]
    assert len(tools) == 11 and tools[0]["name"] == "web_search"
    answer = done["answer"]
    assert answer["text"] == ANSWER and answer["errors"] == []
    assert [t["id"] for t in answer["provider_tools"]] == [t["id"] for t in tools]


@pytest.mark.browser
async def test_relay_page_takes_provider_tools_without_an_error() -> None:
    from tests.test_relay_page_kinds import ask, page_for, wait_done

    async with (
        running(_messages_app()) as url,
        relay(url + "/v1", api="anthropic") as server,
        page_for(server.url + "/") as page,  # fails on any page or console error
    ):
        await ask(page, "Horaires du café ?")
        stream = await wait_done(page)
        assert stream["text"] == ANSWER
        status = await page.locator(".turn .status").last.text_content()
        assert status == "done"


def _many_tools(n: int) -> bytes:
    """An Anthropic stream with ``n`` web searches (a call and its result each), then text."""

    def frame(data: dict[str, Any]) -> bytes:
        return b"event: " + str(data["type"]).encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"

    head, _, _ = STREAM.partition(b"event: content_block_start")
    out = [head]
    for i in range(n):
        use = {"type": "server_tool_use", "id": f"srvtoolu_m{i}", "name": "web_search",
               "input": {"query": f"q{i}"}}  # fmt: skip
        res = {"type": "web_search_tool_result", "tool_use_id": f"srvtoolu_m{i}", "content": []}
        for k, block in ((2 * i, use), (2 * i + 1, res)):
            out.append(frame({"type": "content_block_start", "index": k, "content_block": block}))
            out.append(frame({"type": "content_block_stop", "index": k}))
    k = 2 * n
    out.append(frame({"type": "content_block_start", "index": k,
                      "content_block": {"type": "text", "text": ""}}))  # fmt: skip
    out.append(frame({"type": "content_block_delta", "index": k,
                      "delta": {"type": "text_delta", "text": "Fini."}}))  # fmt: skip
    out.append(frame({"type": "content_block_stop", "index": k}))
    out.append(frame({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                      "usage": {"output_tokens": 9}}))  # fmt: skip
    out.append(frame({"type": "message_stop"}))
    return b"".join(out)


HOSTILE_RESULT = STREAM.replace(
    b'"url":"https://example.org/cafe-tel-aviv","title":"Le caf\xc3\xa9 \xe2\x80\x94 \xd7\xaa\xd7\x9c \xd7\x90\xd7\x91\xd7\x99\xd7\x91","encrypted_content"',
    b'"url":"javascript:alert(1)","title":"<img src=x onerror=alert(1)>","encrypted_content"',
).replace(b'"name":"horaires"', b'"name":"<b>horaires</b>"')


@pytest.mark.browser
async def test_relay_page_shows_a_card_per_provider_tool() -> None:
    from tests.test_relay_page_kinds import ask, page_for, wait_done

    async with (
        running(_messages_app()) as url,
        relay(url + "/v1", api="anthropic") as server,
        page_for(server.url + "/", bypass_csp=False) as page,
    ):
        await ask(page, "Horaires du café ?")
        stream = await wait_done(page)
        assert stream["text"] == ANSWER
        tools = stream["providerTools"]
        assert [t["name"] for t in tools] == [
            "web_search", "bash_code_execution", "text_editor_code_execution",
            "code_execution", "horaires", "web_fetch",
        ]  # fmt: skip
        assert all(t["phase"] == "result" and t["status"] == "completed" for t in tools)
        cards = page.locator(".turn .provider-tool")
        assert await cards.count() == 6
        first = cards.nth(0)
        assert await first.locator(".tool-name").text_content() == "web_search"
        assert await first.locator(".tool-id").text_content() == "srvtoolu_1"
        assert await first.locator(".ptool-input").text_content() == (
            '{"query":"café Tel Aviv horaires"}'
        )
        assert await first.locator(".ptool-result").text_content() == "completed · 1 result"
        link = first.locator("a.ptool-link")
        assert await link.text_content() == "Le café — תל אביב"
        assert await link.get_attribute("href") == "https://example.org/cafe-tel-aviv"
        code = cards.nth(3)
        assert await code.locator(".ptool-result").text_content() == "completed · exit 0"
        assert await code.locator(".ptool-output").text_content() == "10"
        assert await cards.nth(4).locator(".ptool-server").text_content() == "(cafes)"
        # a result without its call still gets its card, its fetched URL as a link
        fetch = cards.nth(5)
        assert await fetch.locator(".ptool-input").is_hidden()
        assert await fetch.locator("a.ptool-link").get_attribute("href") == (
            "https://example.org/cafe-tel-aviv"
        )
        # the cards come before the answer's text, in the turn
        before = await page.evaluate(
            "document.querySelector('.provider-tools').compareDocumentPosition("
            "document.querySelector('.turn .text')) & Node.DOCUMENT_POSITION_FOLLOWING"
        )
        assert before


@pytest.mark.browser
async def test_relay_page_provider_tool_cards_are_inert() -> None:
    from tests.test_relay_page_kinds import ask, page_for, wait_done

    assert b"javascript:alert(1)" in HOSTILE_RESULT and b"<b>horaires" in HOSTILE_RESULT
    async with (
        running(_messages_app(HOSTILE_RESULT)) as url,
        relay(url + "/v1", api="anthropic") as server,
        page_for(server.url + "/") as page,  # CSP bypassed: the rendering must be inert
    ):
        await ask(page, "Horaires du café ?")
        await wait_done(page)
        first = page.locator(".turn .provider-tool").nth(0)
        assert await first.locator("a").count() == 0  # javascript: never a link
        assert await page.locator(".turn img, .turn b").count() == 0
        name = page.locator(".turn .provider-tool").nth(4).locator(".tool-name")
        assert await name.text_content() == "<b>horaires</b>"


@pytest.mark.browser
async def test_relay_page_shows_at_most_64_provider_tool_cards() -> None:
    from tests.test_relay_page_kinds import ask, page_for, wait_done

    async with (
        running(_messages_app(_many_tools(70))) as url,
        relay(url + "/v1", api="anthropic") as server,
        page_for(server.url + "/") as page,
    ):
        await ask(page, "Horaires du café ?")
        stream = await wait_done(page)
        assert stream["text"] == "Fini."
        assert len(stream["providerTools"]) == 64
        assert await page.locator(".turn .provider-tool").count() == 64
        more = await page.locator(".turn .ptool-more").text_content()
        assert more == "12 more provider tool events not shown"  # 6 calls, 6 results


# -- ask ----------------------------------------------------------------------------------

_EVIL = orjson.dumps("\x1b]0;pwned\x07[bold]x[/bold]\x1b[2J\u202e").decode()  # JSON-escaped
HOSTILE = STREAM.replace(
    b'"partial_json":"{\\"query\\":"',
    b'"partial_json":' + orjson.dumps('{"query":' + _EVIL + ',"q":'),
)


def test_ask_prints_one_line_per_provider_tool() -> None:
    with threaded_upstream(STREAM, "/v1/messages") as base_url:
        result = CliRunner().invoke(
            main,
            ["ask", "Horaires ?", "--api", "anthropic", "--base-url", base_url, "--model", "m"],
            catch_exceptions=False,
        )
    out = result.output
    assert result.exit_code == 0, out
    assert '🔎 web_search: "café Tel Aviv horaires" → 1 result' in out
    assert "🔎 bash_code_execution: \"python3 -c 'print(8*60)'\" → exit 0" in out
    assert "🔎 horaires (cafes)" in out and "🔎 web_fetch → completed" in out
    assert out.count("🔎") == 6
    assert out.index("Je regarde le site du café.") < out.index("🔎") < out.index("Le café ouvre")


def test_ask_tool_lines_are_terminal_safe() -> None:
    assert b"pwned" in HOSTILE
    with threaded_upstream(HOSTILE, "/v1/messages") as base_url:
        result = CliRunner().invoke(
            main,
            ["ask", "Horaires ?", "--api", "anthropic", "--base-url", base_url, "--model", "m"],
            catch_exceptions=False,
        )
    out = result.output
    line = next(x for x in out.splitlines() if x.startswith("🔎 web_search"))
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert line == '🔎 web_search: "[bold]x[/bold]" → 1 result'  # markup as text; the OSC gone
