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
NODE_DIR = Path(__file__).parent / "node"
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


@pytest.mark.skipif(not NODE_READY, reason="node or tests/node deps missing")
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
