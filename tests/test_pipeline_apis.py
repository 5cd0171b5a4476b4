"""``stream_chat(api=...)``: each API's path, auth and version headers, body, HTTP errors
and retries, over real loopback HTTP (both transports), and secrets kept out of events."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
from aiohttp import web

from streamcite import stream_chat
from streamcite.core.events import ErrorEvent
from streamcite.pipeline.apis import ANTHROPIC_VERSION, APIS, api_root, prepare_request
from streamcite.pipeline.opening import http_error
from streamcite.pipeline.timeouts import Timeouts
from tests._api_streams import REQUESTS, STREAMS

TRANSPORTS = ("aiohttp", "httpx")
KEY = "sk-test-6b1f0e2d9c8a7f35"
TEXT = "Paris is the capital of France."
FAST = Timeouts(connect=2.0, first_token=5.0, idle=5.0, total=20.0)

PATHS = {
    "chat": "/v1/chat/completions",
    "responses": "/v1/responses",
    "anthropic": "/v1/messages",
    "gemini": "/v1beta/models/m:streamGenerateContent?alt=sse",
    "cohere": "/v2/chat",
}


@dataclass
class Recorder:
    """Records every request; answers the scripted errors first, then ``api``'s stream."""

    api: str
    text: str = TEXT
    errors: list[tuple[int, Any, dict[str, str]]] = field(default_factory=list)
    seen: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/{tail:.*}", self.handle)
        return app

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.seen.append((request.path_qs, dict(request.headers), body))
        if len(self.seen) <= len(self.errors):
            status, err, headers = self.errors[len(self.seen) - 1]
            raw = err if isinstance(err, bytes) else orjson.dumps(err)
            return web.Response(
                status=status, body=raw, headers=headers, content_type="application/json"
            )
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for part in STREAMS[self.api](self.text):
            await resp.write(part)
        return resp


async def _run(url: str, api: str, **kw: Any) -> tuple[list[Any], Any]:
    kw.setdefault("timeouts", FAST)
    async with stream_chat(REQUESTS[api], base_url=api_root(url, api), api=api, **kw) as s:
        events = [e async for e in s]
    return events, events[-1].answer


# -- what is sent ---------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("api", APIS)
async def test_each_api_gets_its_path_headers_and_body(
    serve: Any, api: str, transport: str
) -> None:
    up = Recorder(api)
    url = await serve(up.app())
    _, answer = await _run(url, api, api_key=KEY, transport=transport)
    assert answer.text == TEXT and answer.complete and not answer.errors, answer.errors
    ((path, headers, body),) = up.seen
    assert path == PATHS[api]
    low = {k.lower(): v for k, v in headers.items()}
    if api == "anthropic":
        assert low["x-api-key"] == KEY and low["anthropic-version"] == ANTHROPIC_VERSION
        assert "authorization" not in low
    elif api == "gemini":
        assert low["x-goog-api-key"] == KEY and "authorization" not in low
    else:
        assert low["authorization"] == f"Bearer {KEY}" and "x-api-key" not in low
    sent = orjson.loads(body)
    if api == "gemini":  # the model is in the path, not in the body; no stream field
        assert sent == {k: v for k, v in REQUESTS[api].items() if k != "model"}
    else:
        assert sent == REQUESTS[api]


def test_gemini_model_prefix_quoting_and_non_streaming_method() -> None:
    base = "https://generativelanguage.googleapis.com/v1beta"
    r = prepare_request("gemini", {"model": "models/gemini-2.5-flash"}, base_url=base)
    assert r.url == f"{base}/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    r = prepare_request("gemini", {"model": "a/../b?x=1#y", "stream": False}, base_url=base)
    assert r.url == f"{base}/models/a%2F..%2Fb%3Fx%3D1%23y:generateContent"
    assert r.body == b"{}"  # neither model nor stream is sent
    for bad in ({}, {"model": ""}, {"model": 3}):
        with pytest.raises(ValueError, match="model"):
            prepare_request("gemini", bad, base_url=base)
    with pytest.raises(ValueError, match="unknown api"):
        stream_chat({}, base_url=base, api="bard")  # type: ignore[arg-type]


def test_caller_headers_kept_version_overridable_and_auth_replaced() -> None:
    r = prepare_request(
        "anthropic",
        {"model": "m"},
        base_url="http://h/v1",
        api_key=KEY,
        headers={"anthropic-version": "2024-01-01", "X-API-KEY": "old", "anthropic-beta": "b"},
    )
    assert r.headers["anthropic-version"] == "2024-01-01"
    assert r.headers["anthropic-beta"] == "b" and r.headers["x-api-key"] == KEY
    assert "X-API-KEY" not in r.headers
    # no key given: the caller's own auth header is sent as it is
    r = prepare_request(
        "gemini", {"model": "m"}, base_url="http://h", headers={"x-goog-api-key": "k"}
    )
    assert r.headers["x-goog-api-key"] == "k"
    assert KEY not in repr(prepare_request("chat", {}, base_url="http://h", api_key=KEY))


# -- HTTP errors, per API ---------------------------------------------------------------

RETRY_INFO = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.05s"}
ERRORS: dict[str, tuple[int, Any, str, str]] = {
    # api: (status, body, our code, the provider's code shown in the message)
    "chat": (
        503,
        {"error": {"message": "busy", "type": "server_error"}},
        "upstream_unavailable",
        "server_error",
    ),
    "responses": (
        429,
        {
            "error": {
                "message": "Rate limit reached",
                "type": "requests",
                "code": "rate_limit_exceeded",
            }
        },
        "rate_limited",
        "rate_limit_exceeded",
    ),
    "anthropic": (
        529,
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        "upstream_unavailable",
        "overloaded_error",
    ),
    "gemini": (
        429,
        {
            "error": {
                "code": 429,
                "message": "Resource has been exhausted (e.g. check quota).",
                "status": "RESOURCE_EXHAUSTED",
                "details": [RETRY_INFO],
            }
        },
        "rate_limited",
        "RESOURCE_EXHAUSTED",
    ),
    "cohere": (429, {"id": "e1", "message": "too many requests"}, "rate_limited", ""),
}


@pytest.mark.parametrize("api", APIS)
async def test_retryable_error_is_retried_then_the_answer_streams(serve: Any, api: str) -> None:
    status, body, _, _ = ERRORS[api]
    up = Recorder(api, errors=[(status, body, {"Retry-After": "0"} if api != "gemini" else {})])
    url = await serve(up.app())
    _, answer = await _run(url, api, retries=2)
    assert len(up.seen) == 2
    assert answer.text == TEXT and answer.complete and not answer.errors


@pytest.mark.parametrize("api", APIS)
async def test_error_body_read_into_a_typed_error_when_retries_run_out(
    serve: Any, api: str
) -> None:
    status, body, code, provider_code = ERRORS[api]
    retry = {} if api == "gemini" else {"Retry-After": "0"}
    up = Recorder(api, errors=[(status, body, retry)] * 2)
    url = await serve(up.app())
    events, answer = await _run(url, api, retries=1)
    assert [e.type for e in events] == ["error", "done"]
    err = events[0]
    assert isinstance(err, ErrorEvent) and len(up.seen) == 2
    assert (err.code, err.status, err.retryable, err.stage) == (code, status, True, "http")
    assert provider_code in err.message
    assert answer.errors == [err] and not answer.complete
    if api == "gemini":
        assert err.retry_after == 0.05  # from google.rpc.RetryInfo


async def test_insufficient_quota_is_not_retried(serve: Any) -> None:
    body = {
        "error": {
            "message": "You exceeded your current quota.",
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        }
    }
    up = Recorder("responses", errors=[(429, body, {})] * 3)
    url = await serve(up.app())
    events, _ = await _run(url, "responses", retries=2)
    assert len(up.seen) == 1
    err = events[0]
    assert isinstance(err, ErrorEvent)
    assert (err.code, err.retryable, err.status) == ("insufficient_quota", False, 429)


def test_error_bodies_of_every_shape() -> None:
    # Gemini answers some errors as a one-element JSON array
    wrapped = [
        {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    ]
    err = http_error(503, orjson.dumps(wrapped), {})
    assert (err.code, err.retryable) == ("upstream_unavailable", True)
    assert err.message == "HTTP 503: The model is overloaded. (UNAVAILABLE)"
    # a numeric code that repeats the status adds nothing
    err = http_error(400, b'{"error": {"code": 400, "message": "bad"}}', {})
    assert err.message == "HTTP 400: bad"
    # Retry-After wins over RetryInfo; a malformed retryDelay is no delay
    body = orjson.dumps({"error": {"status": "RESOURCE_EXHAUSTED", "details": [RETRY_INFO]}})
    assert http_error(429, body, {"retry-after": "3"}).retry_after == 3.0
    bad = {"error": {"details": [{**RETRY_INFO, "retryDelay": "1e9s"}, "x", {"@type": 1}]}}
    assert http_error(429, orjson.dumps(bad), {}).retry_after is None
    # Anthropic's 529 and a Cohere plain message
    err = http_error(
        529, b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', {}
    )
    assert (err.code, err.retryable, err.message) == (
        "upstream_unavailable",
        True,
        "HTTP 529: Overloaded (overloaded_error)",
    )
    assert http_error(400, b'{"message":"invalid request: model"}', {}).message == (
        "HTTP 400: invalid request: model"
    )


# -- secrets --------------------------------------------------------------------------


def _echoing(status: int) -> web.Application:
    """Answers every request with an error body that echoes its headers."""

    async def any_path(request: web.Request) -> web.Response:
        await request.read()
        echo = {"error": {"message": f"bad key; headers were {dict(request.headers)}"}}
        return web.json_response(echo, status=status)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", any_path)
    return app


@pytest.mark.parametrize("api", APIS)
async def test_each_auth_header_is_masked_in_errors_and_logs(
    serve: Any, api: str, captured_logs: Any
) -> None:
    url = await serve(_echoing(401))
    events, _ = await _run(url, api, api_key=KEY, retries=0)
    err = events[0]
    assert isinstance(err, ErrorEvent) and err.code == "unauthorized"
    wire = b"".join(e.to_json() for e in events).decode()
    assert "***" in wire  # the echoed header was there, masked
    for text in (wire, repr(captured_logs)):
        assert not [KEY[:k] for k in range(8, len(KEY) + 1) if KEY[:k] in text]


# -- a chat request rewritten for each API (the CLI and the relay build one) ---------------

CHAT = {
    "model": "m",
    "stream": True,
    "stream_options": {"include_usage": True},
    "max_tokens": 50,
    "temperature": 0.2,
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Hi?"}]},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Où ?"},
    ],
}


def test_chat_request_as_each_api() -> None:
    from streamcite.pipeline.bodies import ANTHROPIC_MAX_TOKENS, chat_request_as

    turns = [
        {"role": "user", "content": "Hi?"},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Où ?"},
    ]
    assert chat_request_as("chat", CHAT) == CHAT
    assert chat_request_as("responses", CHAT) == {
        "model": "m",
        "stream": True,
        "instructions": "Be brief.",
        "input": turns,
        "max_output_tokens": 50,
        "temperature": 0.2,
    }
    assert chat_request_as("anthropic", CHAT) == {
        "model": "m",
        "stream": True,
        "max_tokens": 50,
        "system": "Be brief.",
        "messages": turns,
        "temperature": 0.2,
    }
    assert chat_request_as("cohere", CHAT) == {
        "model": "m",
        "stream": True,
        "messages": [{"role": "system", "content": "Be brief."}, *turns],
        "max_tokens": 50,
        "temperature": 0.2,
    }
    assert chat_request_as("gemini", CHAT) == {
        "model": "m",
        "contents": [
            {"role": "user", "parts": [{"text": "Hi?"}]},
            {"role": "model", "parts": [{"text": "Hello."}]},
            {"role": "user", "parts": [{"text": "Où ?"}]},
        ],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "generationConfig": {"maxOutputTokens": 50, "temperature": 0.2},
    }
    bare = {"model": "m", "messages": [{"role": "user", "content": "q"}]}
    assert chat_request_as("anthropic", bare)["max_tokens"] == ANTHROPIC_MAX_TOKENS
    # a non-streaming chat request stays one: Gemini's method, the others' field
    assert chat_request_as("gemini", {**bare, "stream": False})["stream"] is False
    assert chat_request_as("cohere", {**bare, "stream": False})["stream"] is False
    for api in APIS:  # what the rewrite gives is what prepare_request accepts
        prepare_request(api, chat_request_as(api, CHAT), base_url="http://h")
