"""streamcite.web: the AI SDK UI message stream (v1), chunk by chunk and over loopback."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from streamcite import stream_chat
from streamcite.events import (
    CitationsEvent,
    ClaimEvent,
    DoneEvent,
    ErrorEvent,
    FinishEvent,
    GroundingEvent,
    SourcesEvent,
    TokenEvent,
)
from streamcite.local.server import BackendConfig, LocalBackend
from streamcite.models import Citation
from streamcite.web import UIMessageEncoder, question_from_ui_messages, ui_message_stream
from streamcite.web.aiohttp import ui_message_handler

# The fields of each chunk in `ai` 5.0.277's ui-message-chunks.ts: (required, optional).
_PM = {"providerMetadata"}
SCHEMA: dict[str, tuple[set[str], set[str]]] = {
    "start": ({"type"}, {"messageId", "messageMetadata"}),
    "start-step": ({"type"}, set()),
    "text-start": ({"type", "id"}, _PM),
    "text-delta": ({"type", "id", "delta"}, _PM),
    "text-end": ({"type", "id"}, _PM),
    "reasoning-start": ({"type", "id"}, _PM),
    "reasoning-delta": ({"type", "id", "delta"}, _PM),
    "reasoning-end": ({"type", "id"}, _PM),
    "error": ({"type", "errorText"}, set()),
    "tool-input-start": ({"type", "toolCallId", "toolName"}, {"providerExecuted", "dynamic"}),
    "tool-input-delta": ({"type", "toolCallId", "inputTextDelta"}, set()),
    "tool-input-available": (
        {"type", "toolCallId", "toolName", "input"},
        {"providerExecuted", "dynamic", *_PM},
    ),
    "tool-input-error": (
        {"type", "toolCallId", "toolName", "input", "errorText"},
        {"providerExecuted", "dynamic", *_PM},
    ),
    "source-url": ({"type", "sourceId", "url"}, {"title", *_PM}),
    "source-document": ({"type", "sourceId", "mediaType", "title"}, {"filename", *_PM}),
    "finish-step": ({"type"}, set()),
    "finish": ({"type"}, {"finishReason", "messageMetadata"}),
    "message-metadata": ({"type", "messageMetadata"}, set()),
}
FINISH_REASONS = {"stop", "length", "content-filter", "tool-calls", "error", "other"}


def chunks(raw: bytes) -> list[Any]:
    """Every chunk of a UI message stream, checked strictly; ``[DONE]`` last."""
    assert raw.endswith(b"data: [DONE]\n\n")
    out: list[Any] = []
    for block in raw.decode().split("\n\n")[:-2]:
        assert block.startswith("data: ") and "\n" not in block, block
        chunk = orjson.loads(block[6:])
        kind = chunk["type"]
        if kind.startswith("data-"):
            assert set(chunk) <= {"type", "id", "data", "transient"} and "data" in chunk
        else:
            required, optional = SCHEMA[kind]
            assert required <= set(chunk) <= required | optional, chunk
            assert all(v is not None for v in chunk.values()), chunk
        if kind == "finish" and "finishReason" in chunk:
            assert chunk["finishReason"] in FINISH_REASONS
        out.append(chunk)
    return out


def encode(events: list[Any]) -> list[Any]:
    enc = UIMessageEncoder("m1")
    raw = enc.start() + b"".join(enc.feed(e) for e in events) + enc.close()
    return chunks(raw)


def test_tokens_citations_sources_grounding_map_to_chunks() -> None:
    cites = [
        Citation(document_index=0, document_title="Doc A", source_url="http://x/a"),
        Citation(document_index=1, cited_text="quoted"),
    ]
    got = encode(
        [
            TokenEvent(text="Hello [1"),
            TokenEvent(text="] and [2]."),
            FinishEvent(reason="stop"),
            CitationsEvent(citations=cites),
            SourcesEvent(query_id="q"),
            GroundingEvent(support_score=0.5),
            ClaimEvent(index=0, end=18, end_utf16=18, text="Hello [1] and [2].", score=0.9),
            DoneEvent(),
        ]
    )
    types = [c["type"] for c in got]
    assert types == [
        "start", "start-step", "text-start", "text-delta", "text-delta", "text-end",
        "source-url", "source-document", "data-sources", "data-grounding", "data-claim",
        "finish-step", "finish",
    ]  # fmt: skip
    assert got[10]["id"] == "claim-local-0" and got[10]["data"]["score"] == 0.9
    assert got[0]["messageId"] == "m1"
    assert "".join(c["delta"] for c in got if c["type"] == "text-delta") == "Hello [1] and [2]."
    assert got[6]["sourceId"] == "cite-1" and got[6]["url"] == "http://x/a"
    assert got[6]["title"] == "Doc A"
    assert got[7]["sourceId"] == "cite-2" and got[7]["mediaType"] == "text/plain"
    assert got[7]["providerMetadata"]["streamcite"]["cited_text"] == "quoted"
    assert got[8]["data"]["query_id"] == "q" and got[9]["data"]["support_score"] == 0.5
    assert got[-1]["finishReason"] == "stop"


def test_new_event_kinds_map_by_their_type_string() -> None:
    ev = SimpleNamespace
    got = encode(
        [
            ev(type="reasoning", index=0, text="think"),
            ev(type="reasoning", index=0, text="ing"),
            {"type": "token", "index": 0, "text": "A"},
            ev(type="tool_call", index=0, tool_index=0, id=None, name=None, arguments='{"q"'),
            ev(type="tool_call", index=0, tool_index=0, id="c1", name="search", arguments=":1"),
            ev(type="tool_call", index=0, tool_index=0, id=None, name=None, arguments="}"),
            ev(type="tool_call", index=0, tool_index=1, id="c2", name="bad", arguments="{"),
            ev(type="refusal", index=0, text="no"),
            ev(type="refusal", index=0, text="pe"),
            ev(type="finish", index=0, reason="tool_calls"),
            ev(type="done", answer=None),
        ]
    )
    types = [c["type"] for c in got]
    assert types[2:5] == ["reasoning-start", "reasoning-delta", "reasoning-delta"]
    assert types[5:7] == ["reasoning-end", "text-start"]
    start = next(c for c in got if c["type"] == "tool-input-start")
    assert start == {"type": "tool-input-start", "toolCallId": "c1", "toolName": "search"}
    deltas = [c["inputTextDelta"] for c in got if c["type"] == "tool-input-delta"]
    assert deltas[:2] == ['{"q":1', "}"]
    avail = next(c for c in got if c["type"] == "tool-input-available")
    assert avail["input"] == {"q": 1}
    bad = next(c for c in got if c["type"] == "tool-input-error")
    assert bad["toolCallId"] == "c2" and bad["input"] == "{"
    refusals = [c for c in got if c["type"] == "data-refusal"]
    assert refusals[-1] == {
        "type": "data-refusal",
        "id": "refusal-0",
        "data": {"index": 0, "text": "nope"},
    }
    assert got[-1] == {"type": "finish", "finishReason": "tool-calls"}


def test_errors_unknown_events_and_an_early_end_still_finish() -> None:
    got = encode([TokenEvent(text="x"), ErrorEvent(code="timeout", message="slow"), object()])
    assert {"type": "error", "errorText": "timeout: slow"} in got
    assert any(c["type"] == "error" and c["errorText"].startswith("unknown_event") for c in got)
    assert got[-1] == {"type": "finish", "finishReason": "error"}
    assert got[-3]["type"] == "text-end"


def test_question_is_the_last_user_messages_text() -> None:
    body = {
        "id": "c",
        "messages": [
            {"id": "1", "role": "user", "parts": [{"type": "text", "text": "old"}]},
            {"id": "2", "role": "assistant", "parts": [{"type": "text", "text": "a"}]},
            {
                "id": "3",
                "role": "user",
                "parts": [{"type": "text", "text": "new "}, {"type": "file"}],
            },
        ],
    }
    assert question_from_ui_messages(body) == "new"
    for bad in ({}, {"messages": []}, {"messages": [{"role": "user", "parts": []}]}):
        try:
            question_from_ui_messages(bad)
        except ValueError:
            continue
        raise AssertionError(bad)


async def test_the_source_is_closed_when_the_consumer_stops() -> None:
    closed: list[bool] = []

    class Source:
        def __aiter__(self) -> Source:
            return self

        async def __anext__(self) -> TokenEvent:
            return TokenEvent(text="t")

        async def aclose(self) -> None:
            closed.append(True)

    stream = ui_message_stream(Source())
    assert (await anext(stream)).startswith(b'data: {"type":"start"')
    await anext(stream)
    await stream.aclose()
    assert closed == [True]


async def test_aiohttp_handler_over_loopback_against_the_embedded_backend(serve: Any) -> None:
    async with LocalBackend(BackendConfig()) as backend:

        def make(question: str, body: dict[str, Any]) -> Any:
            request = {"model": "streamcite-local", "stream": True,
                       "messages": [{"role": "user", "content": question}]}  # fmt: skip
            return stream_chat(request, base_url=backend.root_url + "/v1")

        app = web.Application()
        app.router.add_post("/api/chat", ui_message_handler(make))
        url = await serve(app)
        body = {"id": "c", "messages": [{"id": "u", "role": "user",
                "parts": [{"type": "text", "text": "Combien de jours de télétravail par semaine ?"}]}]}  # fmt: skip
        async with aiohttp.ClientSession() as s:
            async with s.post(url + "/api/chat", json=body) as r:
                assert r.status == 200
                assert r.headers["x-vercel-ai-ui-message-stream"] == "v1"
                raw = await r.read()
            async with s.post(url + "/api/chat", json={"messages": []}) as r:
                assert r.status == 400
    got = chunks(raw)
    text = "".join(c["delta"] for c in got if c["type"] == "text-delta")
    assert text and "[1]" in text
    assert any(c["type"] in ("source-url", "source-document") for c in got)
    assert got[-1]["type"] == "finish"
