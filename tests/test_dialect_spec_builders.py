"""The spec suite's hand-written streams are the vendors' real shapes: every event and body the
builders of ``tests/_dialect_streams.py`` write validates against the vendor SDK's own types
(anthropic, openai, google-genai, cohere), and the offsets mean what the spec says they mean.
These tests check the test data, not streamcite: they keep the spec suite honest."""

from __future__ import annotations

import typing
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from pydantic import TypeAdapter

from tests import test_dialect_spec_anthropic as t_anthropic
from tests import test_dialect_spec_cohere as t_cohere
from tests import test_dialect_spec_gemini as t_gemini
from tests import test_dialect_spec_responses as t_responses
from tests._dialect_streams import (
    anthropic_body,
    anthropic_stream,
    cohere_body,
    cohere_stream,
    gemini_body,
    gemini_stream,
    responses_body,
    responses_stream,
)


def _payloads(data: bytes) -> Iterator[tuple[str | None, Any]]:
    for block in data.split(b"\n\n"):
        if not block:
            continue
        name = None
        payload = None
        for line in block.split(b"\n"):
            if line.startswith(b"event: "):
                name = line[7:].decode()
            elif line.startswith(b"data: "):
                payload = line[6:]
        assert payload is not None, block
        if payload == b"[DONE]":
            continue
        yield name, orjson.loads(payload)


def test_anthropic_events_and_body_validate() -> None:
    anthropic = pytest.importorskip("anthropic")
    adapter: TypeAdapter[Any] = TypeAdapter(anthropic.types.RawMessageStreamEvent)
    blocks = [
        *t_anthropic.SERVER,
        *t_anthropic.CITED,
        t_anthropic.B("thinking", ["θ"]),
        t_anthropic.B("tool_use", ['{"q": 1}'], id="t", name="f"),
    ]
    for name, obj in _payloads(anthropic_stream(blocks)):
        assert name == obj["type"]  # the SDK skips events without their event: line
        if obj["type"] != "ping":
            adapter.validate_python(obj)
    msg = anthropic.types.Message.model_validate(orjson.loads(anthropic_body(blocks)))
    cited = [b for b in msg.content if b.type == "text" and b.citations]
    assert cited[0].citations[0].url == t_anthropic.WIKI


def test_responses_events_and_body_validate() -> None:
    responses = pytest.importorskip("openai.types.responses")
    union = responses.ResponseStreamEvent
    if typing.get_origin(union) is typing.Annotated:
        union = typing.get_args(union)[0]
    by_type = {
        typing.get_args(m.model_fields["type"].annotation)[0]: m for m in typing.get_args(union)
    }
    items = [
        t_responses.R("reasoning", ["θ"]),
        *t_responses.CITED,
        t_responses.R("function_call", ["{}"], call_id="c", name="f"),
        t_responses.R("refusal", ["no"]),
        t_responses.R("web_search", id="ws_9"),
    ]
    for name, obj in _payloads(responses_stream(items)):
        assert name == obj["type"]
        by_type[obj["type"]].model_validate(obj)
        if obj["type"] == "response.output_text.annotation.added":
            ann = obj["annotation"]
            assert t_responses.JOINED[ann["start_index"] : ann["end_index"]]
    resp = responses.Response.model_validate(orjson.loads(responses_body(items)))
    assert resp.output_text == t_responses.JOINED


def test_gemini_chunks_and_body_validate_and_offsets_are_bytes() -> None:
    types = pytest.importorskip("google.genai.types")
    texts = []
    last = None
    for _, obj in _payloads(t_gemini._grounded(split=True)):
        r = types.GenerateContentResponse.model_validate(obj)
        texts.append(r.text or "")
        last = r
    assert "".join(texts) == "".join(t_gemini.TEXTS)
    assert last is not None
    meta = last.candidates[0].grounding_metadata
    whole = "".join(t_gemini.TEXTS).encode()
    for sup in meta.grounding_supports:
        seg = sup.segment
        assert whole[(seg.start_index or 0) : seg.end_index].decode() == seg.text
    body = types.GenerateContentResponse.model_validate(
        orjson.loads(gemini_body(t_gemini.TEXTS, web=t_gemini.WEB, supports=t_gemini.SUPPORTS))
    )
    assert body.text == "".join(t_gemini.TEXTS)
    unused = gemini_stream(["x"])
    assert unused


def test_cohere_events_and_body_validate() -> None:
    cohere = pytest.importorskip("cohere")
    adapter: TypeAdapter[Any] = TypeAdapter(cohere.StreamedChatResponseV2)
    data = cohere_stream(
        t_cohere.TEXTS, citations=t_cohere.CITS, thinking=["θ"], tools=[("t", "f", ["{}"])]
    )
    text = "".join(t_cohere.TEXTS)
    for name, obj in _payloads(data):
        assert name == obj["type"]
        ev = adapter.validate_python(obj)
        assert ev.type == obj["type"]  # not silently skipped as another type
        if obj["type"] == "citation-start":
            c = obj["delta"]["message"]["citations"]
            assert text[c["start"] : c["end"]] == c["text"]
    body = cohere.V2ChatResponse.model_validate(
        orjson.loads(cohere_body(t_cohere.TEXTS, citations=t_cohere.CITS))
    )
    assert body.message.citations is not None and len(body.message.citations) == len(t_cohere.CITS)
