"""Faults and refusals of the backend's Responses, Messages, Gemini and Cohere endpoints.

Each API answers an injected HTTP status, a mid-stream error, a malformed chunk, a
dropped connection and a refused request in its own error shape — read here on the
wire (httpx over loopback, decoded by streamcite's SSE decoder) and through the
vendor's SDK where the SDK turns it into its own exception.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import cohere
import httpx
import openai
import orjson
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types
from hypothesis import given
from hypothesis import strategies as st

from streamcite.core.sse import ServerSentEvent, SSEDecoder
from streamcite.local.apis.plan import split_at
from streamcite.local.config import BackendConfig
from streamcite.local.server import LocalBackend

MODEL = "streamcite-local"
Q = "How many days a week can I work from home?"
USER = [{"role": "user", "content": Q}]
REQUESTS: dict[str, tuple[str, str, dict[str, Any]]] = {
    # api: (streaming path, whole path, body without "stream")
    "responses": ("/v1/responses", "/v1/responses", {"model": MODEL, "input": Q}),
    "anthropic": (
        "/v1/messages",
        "/v1/messages",
        {"model": MODEL, "max_tokens": 1024, "messages": USER},
    ),
    "gemini": (
        f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse",
        f"/v1/models/{MODEL}:generateContent",
        {"contents": [{"role": "user", "parts": [{"text": Q}]}]},
    ),
    "cohere": ("/v2/chat", "/v2/chat", {"model": MODEL, "messages": USER}),
}
APIS = list(REQUESTS)
FAULT = "X-Streamcite-Fault"


@pytest.fixture
async def backend() -> AsyncIterator[LocalBackend]:
    async with LocalBackend() as b:
        yield b


def _body(api: str, stream: bool) -> dict[str, Any]:
    body = dict(REQUESTS[api][2])
    if api != "gemini":
        body["stream"] = stream
    return body


async def _post(
    backend: LocalBackend, api: str, *, stream: bool, fault: str | None = None, **kw: Any
) -> httpx.Response:
    path = REQUESTS[api][0 if stream else 1]
    headers = {FAULT: fault} if fault else {}
    headers.update(kw.pop("headers", {}))
    async with httpx.AsyncClient(base_url=backend.root_url, timeout=10) as client:
        content = kw.pop("content", None)
        if content is None:
            content = orjson.dumps(_body(api, stream))
        return await client.post(path, content=content, headers=headers, **kw)


async def _stream(
    backend: LocalBackend, api: str, fault: str | None = None
) -> tuple[list[ServerSentEvent], bool]:
    """The SSE events of a streamed answer, and whether the body ended cleanly."""
    decoder = SSEDecoder()
    events: list[ServerSentEvent] = []
    clean = True
    headers = {FAULT: fault} if fault else {}
    async with (
        httpx.AsyncClient(base_url=backend.root_url, timeout=10) as client,
        client.stream(
            "POST", REQUESTS[api][0], content=orjson.dumps(_body(api, True)), headers=headers
        ) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        try:
            async for data in response.aiter_raw():
                events += decoder.feed(data)
        except httpx.RemoteProtocolError:
            clean = False
    events += decoder.close()
    return events, clean


def _json(event: ServerSentEvent) -> Any:
    try:
        return orjson.loads(event.data)
    except orjson.JSONDecodeError:
        return None


def _is_delta(api: str, event: ServerSentEvent) -> bool:
    """A text delta of ``api`` (a malformed one is known by its event name or prefix)."""
    if api == "responses":
        return event.event == "response.output_text.delta"
    if api == "anthropic":
        return event.event == "content_block_delta" and (
            '"text_delta"' in event.data or _json(event) is None
        )
    if api == "cohere":
        return event.event == "content-delta"
    return '"parts":' in event.data or event.data.startswith('{"candidates":[{"content"')


def _finished(api: str, events: list[ServerSentEvent]) -> bool:
    """The stream carried its API's normal end."""
    names = [e.event for e in events]
    if api == "responses":
        return names[-1] == "response.completed"
    if api == "anthropic":
        return names[-1] == "message_stop"
    if api == "cohere":
        ends = [_json(e) for e in events if e.event == "message-end"]
        return events[-1].data == "[DONE]" and ends[-1]["delta"]["finish_reason"] == "COMPLETE"
    last = _json(events[-1]) or {}
    return last.get("candidates", [{}])[0].get("finishReason") == "STOP"


# --- HTTP status faults: each API's own error body ---------------------------------


@pytest.mark.parametrize(
    ("api", "status", "check"),
    [
        ("responses", 429, lambda b: b["error"]["type"] == "requests"),
        (
            "anthropic",
            529,
            lambda b: b["type"] == "error" and b["error"]["type"] == "overloaded_error",
        ),
        (
            "gemini",
            429,
            lambda b: b["error"]["code"] == 429 and b["error"]["status"] == "RESOURCE_EXHAUSTED",
        ),
        ("cohere", 429, lambda b: isinstance(b["message"], str) and b["id"]),
    ],
)
@pytest.mark.parametrize("stream", [True, False])
async def test_injected_status_is_the_api_error_body(
    backend: LocalBackend, api: str, status: int, check: Any, stream: bool
) -> None:
    response = await _post(backend, api, stream=stream, fault=f"status={status};retry_after=2")
    assert response.status_code == status
    assert check(response.json())
    assert response.headers["Retry-After"] == "2"


async def test_sdks_raise_their_own_status_errors(backend: LocalBackend) -> None:
    headers = {FAULT: "status=529"}
    claude = anthropic.AsyncAnthropic(
        base_url=backend.root_url, api_key="k", max_retries=0, default_headers=headers
    )
    with pytest.raises(anthropic.APIStatusError) as caught:
        await claude.messages.create(model=MODEL, max_tokens=10, messages=USER)
    assert caught.value.status_code == 529
    assert caught.value.body["error"]["type"] == "overloaded_error"

    gemini = genai.Client(
        api_key="k",
        http_options=genai_types.HttpOptions(
            base_url=backend.root_url, headers={FAULT: "status=429"}
        ),
    )
    with pytest.raises(genai_errors.ClientError) as gcaught:
        await gemini.aio.models.generate_content(model=MODEL, contents=Q)
    assert (gcaught.value.code, gcaught.value.status) == (429, "RESOURCE_EXHAUSTED")

    oai = openai.AsyncOpenAI(
        base_url=backend.base_url,
        api_key="k",
        max_retries=0,
        default_headers={FAULT: "status=429"},
    )
    with pytest.raises(openai.RateLimitError):
        await oai.responses.create(model=MODEL, input=Q)

    co = cohere.AsyncClientV2(base_url=backend.root_url, api_key="k")
    with pytest.raises(cohere.errors.TooManyRequestsError):
        await co.chat(
            model=MODEL,
            messages=USER,
            request_options={"additional_headers": {FAULT: "status=429"}, "max_retries": 0},
        )


# --- mid-stream errors ------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
async def test_error_at_ends_the_stream_with_the_api_error_event(
    backend: LocalBackend, api: str
) -> None:
    events, clean = await _stream(backend, api, "error_at=3")
    assert clean
    assert sum(_is_delta(api, e) for e in events) == 2
    assert not _finished(api, events)
    if api == "responses":
        assert [e.event for e in events[-2:]] == ["error", "response.failed"]
        assert _json(events[-1])["response"]["status"] == "failed"
        seq = [_json(e)["sequence_number"] for e in events]
        assert seq == list(range(len(events)))
    elif api == "anthropic":
        assert events[-1].event == "error"
        assert _json(events[-1])["error"]["type"] == "overloaded_error"
    elif api == "gemini":
        assert _json(events[-1])["error"]["status"] == "UNAVAILABLE"
    else:
        end = _json(events[-2])
        assert events[-2].event == "message-end" and end["delta"]["finish_reason"] == "ERROR"
        assert end["delta"]["error"]


async def test_sdks_raise_the_mid_stream_error(backend: LocalBackend) -> None:
    headers = {FAULT: "error_at=3"}
    claude = anthropic.AsyncAnthropic(
        base_url=backend.root_url, api_key="k", max_retries=0, default_headers=headers
    )
    with pytest.raises(anthropic.APIStatusError) as caught:
        async with claude.messages.stream(model=MODEL, max_tokens=99, messages=USER) as s:
            async for _ in s:
                pass
    assert caught.value.body["error"]["type"] == "overloaded_error"

    oai = openai.AsyncOpenAI(
        base_url=backend.base_url, api_key="k", max_retries=0, default_headers=headers
    )
    with pytest.raises(openai.APIError, match="overloaded"):
        async with oai.responses.stream(model=MODEL, input=Q) as rs:
            async for _ in rs:
                pass

    gemini = genai.Client(
        api_key="k",
        http_options=genai_types.HttpOptions(base_url=backend.root_url, headers=headers),
    )
    with pytest.raises(genai_errors.ServerError) as gcaught:
        async for _ in await gemini.aio.models.generate_content_stream(model=MODEL, contents=Q):
            pass
    assert gcaught.value.code == 503

    co = cohere.AsyncClientV2(base_url=backend.root_url, api_key="k")
    finish = None
    async for event in co.chat_stream(
        model=MODEL,
        messages=USER,
        request_options={"additional_headers": headers},
    ):
        if event.type == "message-end":
            finish = event.delta.finish_reason
    assert finish == "ERROR"


# --- malformed, dropped, stalled, delayed, no end ------------------------------------


@pytest.mark.parametrize("api", APIS)
async def test_malformed_chunk_then_the_stream_goes_on(backend: LocalBackend, api: str) -> None:
    events, clean = await _stream(backend, api, "malformed_at=2")
    assert clean and _finished(api, events)
    bad = [i for i, e in enumerate(events) if e.data != "[DONE]" and _json(e) is None]
    deltas = [i for i, e in enumerate(events) if _is_delta(api, e)]
    assert bad == [deltas[1]]


@pytest.mark.parametrize("api", APIS)
async def test_malformed_past_the_end_is_the_finishing_event(
    backend: LocalBackend, api: str
) -> None:
    events, _ = await _stream(backend, api, "malformed_at=999")
    bad = [e for e in events if e.data != "[DONE]" and _json(e) is None]
    assert len(bad) == 1
    assert not any(_is_delta(api, e) for e in bad)


@pytest.mark.parametrize("api", APIS)
async def test_drop_after_cuts_the_connection(backend: LocalBackend, api: str) -> None:
    events, clean = await _stream(backend, api, "drop_after=2")
    assert not clean
    assert sum(_is_delta(api, e) for e in events) == 2
    assert not _finished(api, events)


@pytest.mark.parametrize("api", APIS)
async def test_stall_after_keeps_the_connection_then_closes(
    backend: LocalBackend, api: str
) -> None:
    started = time.monotonic()
    events, clean = await _stream(backend, api, "stall_after=1;stall_for=0.3")
    assert time.monotonic() - started >= 0.3
    assert not clean and sum(_is_delta(api, e) for e in events) == 1


@pytest.mark.parametrize("api", APIS)
async def test_first_token_delay_and_bom(backend: LocalBackend, api: str) -> None:
    started = time.monotonic()
    events, clean = await _stream(backend, api, "first_token_delay=0.2;bom=1")
    assert time.monotonic() - started >= 0.2
    assert clean and _finished(api, events)  # the decoder drops the BOM, as browsers do


@pytest.mark.parametrize("api", ["responses", "anthropic", "cohere"])
async def test_no_done_leaves_out_the_last_event(backend: LocalBackend, api: str) -> None:
    events, clean = await _stream(backend, api, "no_done=1")
    assert clean and not _finished(api, events)
    names = [e.event for e in events]
    assert {"responses": "response.output_item.done", "anthropic": "message_delta"}.get(
        api, "message-end"
    ) in names


# --- refused requests: each API's error shape ------------------------------------------


def _shape(api: str, body: Any, status: int) -> bool:
    if api == "responses":
        return isinstance(body["error"]["message"], str)
    if api == "anthropic":
        return body["type"] == "error" and isinstance(body["error"]["type"], str)
    if api == "gemini":
        return body["error"]["code"] == status
    return isinstance(body["message"], str)


@pytest.mark.parametrize("api", APIS)
async def test_refused_requests_in_the_api_shape(backend: LocalBackend, api: str) -> None:
    bad_json = await _post(backend, api, stream=False, content=b"{not json")
    assert bad_json.status_code == 400 and _shape(api, bad_json.json(), 400)
    empty = await _post(backend, api, stream=False, content=b"{}")
    assert empty.status_code == 400 and _shape(api, empty.json(), 400)
    chat_only = await _post(backend, api, stream=True, fault="profile=reasoning")
    assert chat_only.status_code == 400 and "chat/completions" in chat_only.text
    malformed_spec = await _post(backend, api, stream=True, fault="nonsense=1")
    assert malformed_spec.status_code == 400 and _shape(api, malformed_spec.json(), 400)


@pytest.mark.parametrize("api", APIS)
async def test_body_cap_and_client_faults_off(api: str) -> None:
    config = BackendConfig(max_body_bytes=2048, allow_client_faults=False)
    async with LocalBackend(config) as small:
        big = await _post(small, api, stream=False, content=b'{"x":"' + b"a" * 4096 + b'"}')
        assert big.status_code == 413 and _shape(api, big.json(), 413)
        refused = await _post(small, api, stream=True, fault="drop_after=1")
        assert refused.status_code == 403 and _shape(api, refused.json(), 403)


@pytest.mark.parametrize("api", APIS)
async def test_a_refused_host_is_answered_in_the_api_shape(backend: LocalBackend, api: str) -> None:
    refused = await _post(backend, api, stream=False, headers={"Host": "attacker.example"})
    assert refused.status_code == 403 and _shape(api, refused.json(), 403)


LIMITS: dict[str, dict[str, Any]] = {
    "gemini": {"generationConfig": {"maxOutputTokens": 4}},
    "cohere": {"max_tokens": 4},
    "anthropic": {"max_tokens": 4},
    "responses": {"max_output_tokens": 4},
}


@pytest.mark.parametrize("api", APIS)
async def test_token_delay_paces_the_deltas(backend: LocalBackend, api: str) -> None:
    """The k-th delta is written k delays after the first one at the earliest, and the
    first after the request was sent: so it arrives at least k delays after the request,
    whatever the load (a loaded machine only delays a read, never advances it). Gaps
    between arrivals are not checked: a client read late takes several deltas at once."""
    delay = 0.05
    body = orjson.dumps({**_body(api, True), **LIMITS[api]})
    arrived: list[float] = []
    decoder = SSEDecoder()
    async with httpx.AsyncClient(base_url=backend.root_url, timeout=30) as client:
        sent = time.monotonic()  # the backend's pacing clock is the same (loop.time())
        async with client.stream(
            "POST", REQUESTS[api][0], content=body, headers={FAULT: f"token_delay={delay}"}
        ) as response:
            async for data in response.aiter_raw():
                now = time.monotonic()
                arrived += [now - sent for e in decoder.feed(data) if _is_delta(api, e)]
    assert len(arrived) >= 4
    early = [(k, t) for k, t in enumerate(arrived) if t < k * delay - 0.001]
    assert not early, early


# --- length, and the answer kept for the Wikit endpoints -------------------------------


@pytest.mark.parametrize(
    ("api", "limit", "finish"),
    [
        ("gemini", {"generationConfig": {"maxOutputTokens": 3}}, "MAX_TOKENS"),
        ("cohere", {"max_tokens": 3}, "MAX_TOKENS"),
        ("anthropic", {"max_tokens": 3}, "max_tokens"),
        ("responses", {"max_output_tokens": 3}, "incomplete"),
    ],
)
async def test_max_tokens_cuts_the_answer(
    backend: LocalBackend, api: str, limit: dict[str, Any], finish: str
) -> None:
    body = {**_body(api, False), **limit}
    whole = (await _post(backend, api, stream=False, content=orjson.dumps(body))).json()
    got = {
        "gemini": lambda b: b["candidates"][0]["finishReason"],
        "cohere": lambda b: b["finish_reason"],
        "anthropic": lambda b: b["stop_reason"],
        "responses": lambda b: b["status"],
    }[api](whole)
    assert got == finish


@pytest.mark.parametrize("api", APIS)
async def test_the_answer_is_kept_for_the_wikit_sources(backend: LocalBackend, api: str) -> None:
    whole = (await _post(backend, api, stream=False)).json()
    answer_id = whole.get("id") or whole["responseId"]
    async with httpx.AsyncClient(base_url=backend.root_url, timeout=10) as client:
        sources = await client.get(
            f"/semantics/apps/demo/query-execution-sources/{answer_id}/get-quoted-sources"
        )
    assert sources.status_code == 200


# --- the pieces regrouped at block boundaries (Anthropic's blocks) -------------------


@given(
    st.lists(st.text(min_size=1, max_size=5), max_size=12),
    st.lists(st.integers(min_value=0, max_value=70), max_size=6),
)
def test_split_at_regroups_exactly(pieces: list[str], cuts: list[int]) -> None:
    text = "".join(pieces)
    runs = split_at(pieces, cuts)
    bounds = sorted(set(cuts))
    assert len(runs) == len(bounds) + 1
    assert "".join("".join(r) for r in runs) == text
    edges = [0, *(min(c, len(text)) for c in bounds), len(text)]
    for k, run in enumerate(runs):
        assert "".join(run) == text[edges[k] : max(edges[k], edges[k + 1])]
        assert all(run)
