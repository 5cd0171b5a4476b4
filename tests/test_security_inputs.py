"""Hostile input stays a client error: sequence numbers, terminal escapes, console markup.

Each case failed on the code before its fix (an HTTP 500, a raw escape sequence on the
terminal, a rich ``MarkupError`` traceback).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from click.testing import CliRunner
from structlog.testing import capture_logs

from streamcite import stream_chat
from streamcite.apps._terminal import terminal_safe
from streamcite.cli import main
from streamcite.web.eventsse import parse_last_event_id
from tests._relay_fixtures import fake_upstream, relay
from tests._upstream import Upstream, threaded_upstream
from tests.conftest import ServeFn

# Digits Python's str.isdigit() accepts but that are no ASCII sequence number.
NOT_SEQUENCE_NUMBERS = ["²", "①", "١٢", "1²", "+1", "1_0", "-1", "1" * 19, "0x10", "1 2"]


@pytest.mark.parametrize("value", NOT_SEQUENCE_NUMBERS)
def test_last_event_id_is_ascii_digits_only(value: str) -> None:
    with pytest.raises(ValueError):
        parse_last_event_id(value)


def test_last_event_id_accepts_what_eventsource_sends() -> None:
    assert parse_last_event_id(" 42 ") == 42
    assert parse_last_event_id("") == parse_last_event_id(None) == 0


async def test_relay_answers_400_for_a_non_ascii_sequence_number() -> None:
    async with (
        fake_upstream() as up,
        relay(up.url + "/v1") as server,
        aiohttp.ClientSession() as session,
    ):
        for value in NOT_SEQUENCE_NUMBERS:
            r = await session.get(
                server.url + "/sse", params={"stream_id": "s1", "after_seq": value}
            )
            assert r.status == 400, value
            assert (await r.json())["code"] == "bad_message"
            r = await session.get(
                server.url + "/sse",
                params={"stream_id": "s1"},
                headers={"Last-Event-ID": value.encode().decode("latin-1")},
            )
            assert r.status == 400, value


# -- terminal escapes and console markup from upstream ----------------------------------

CLEAR, TITLE, CLIPBOARD = "\x1b[2J\x1b[H", "\x1b]0;pwned\x07", "\x1b]52;c;ZXZpbA==\x07"
C1_CSI = "\x9b31m"


def _delta_frame(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    body = {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [choice]}
    return b"data: " + orjson.dumps({**body, **extra}) + b"\n\n"


HOSTILE_STREAM = b"".join(
    [
        _delta_frame({"role": "assistant", "reasoning_content": f"think{CLIPBOARD}ing"}),
        _delta_frame({"content": f"Hello{CLEAR} world{TITLE} [/bold] [1]"}),
        _delta_frame({"content": f" more{C1_CSI}\r text."}),
        _delta_frame(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": f"call{TITLE}",
                        "function": {"name": f"get[/bold]{CLEAR}", "arguments": f"{{{CLIPBOARD}}}"},
                    }
                ]
            }
        ),
        f"data: {{not json {TITLE} [/bold]\n\n".encode(),
        _delta_frame(
            {},
            "stop",
            citations=[
                {
                    "cited_text": f"quote{CLEAR}",
                    "document_title": f"Title{TITLE}[/red]",
                    "document_index": 0,
                    "source_url": f"https://example.org/{CLIPBOARD}",
                }
            ],
        ),
        b"data: [DONE]\n\n",
    ]
)


@contextlib.contextmanager
def _hostile_upstream() -> Iterator[str]:
    """An OpenAI-style endpoint streaming HOSTILE_STREAM, in its own thread and loop."""
    with threaded_upstream(HOSTILE_STREAM) as url:
        yield url


def _assert_inert(output: str) -> None:
    assert "\x1b" not in output and "\x07" not in output and "\x9b" not in output
    assert "\r" not in output
    assert not any("\x80" <= c <= "\x9f" for c in output)


def test_ask_renders_no_escape_sequence_from_upstream() -> None:
    with _hostile_upstream() as base_url:
        result = CliRunner().invoke(
            main, ["ask", "hi", "--base-url", base_url, "--model", "m"], catch_exceptions=False
        )
    assert result.exit_code in (0, 1), result.output
    _assert_inert(result.output)
    # What is not an escape is still shown, markup-looking text included.
    for visible in ("Hello", "world", "[/bold]", "thinking", "more", "Title[/red]"):
        assert visible in result.output, visible


def test_parse_pretty_prints_markup_in_errors_as_text(tmp_path: Path) -> None:
    path = tmp_path / "hostile.sse"
    path.write_bytes(HOSTILE_STREAM)
    result = CliRunner().invoke(main, ["parse", str(path), "--pretty"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "[/bold]" in result.output  # shown as text, not read as markup (MarkupError)
    _assert_inert(result.output)


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("a\x1b[31mred\x1b[0m", "ared"),
        ("t\x1b]0;title\x07x", "tx"),
        ("c\x1b]52;c;ZXZpbA==\x1b\\d", "cd"),
        ("\x1bcreset", "reset"),
        ("tab\tnew\nline", "tab\tnew\nline"),
        ("bell\x07 bs\x08 del\x7f", "bell bs del"),
        ("\x9b2Jx\x9d8;;http://e\x9cy", "xy"),
        ("unterminated \x1b]52;c;AAAA", "unterminated "),
    ],
)
def test_terminal_safe(raw: str, shown: str) -> None:
    assert terminal_safe(raw) == shown


# -- a Retry-After the deadline cannot honour -------------------------------------------


@pytest.mark.parametrize("retry_after", ["30", "Wed, 21 Oct 2099 07:28:00 GMT"])
async def test_retry_after_beyond_the_deadline_is_rate_limited_at_once(
    serve: Any, retry_after: str
) -> None:
    from streamcite import Timeouts, stream_chat
    from streamcite.core.events import DoneEvent, ErrorEvent

    hits = 0

    async def limited(request: web.Request) -> web.Response:
        nonlocal hits
        hits += 1
        return web.json_response(
            {"error": {"message": "slow down"}}, status=429, headers={"Retry-After": retry_after}
        )

    app = web.Application()
    app.router.add_post("/v1/chat/completions", limited)
    base = await serve(app)
    loop = asyncio.get_running_loop()
    started = loop.time()
    request = {
        "model": "streamcite-local",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
    }
    async with stream_chat(
        request, base_url=base + "/v1", retries=3, timeouts=Timeouts(total=5.0)
    ) as s:
        events = [e async for e in s]
    took = loop.time() - started
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert [e.code for e in errors] == ["rate_limited"], errors
    assert errors[0].retry_after is not None and errors[0].retry_after > 5.0
    assert isinstance(events[-1], DoneEvent)
    assert hits == 1 and took < 2.0  # no sleep into the 5 s deadline, no futile retry


@pytest.mark.parametrize(
    "value", ["inf", "nan", "-5", "1_0", "²", "1e3", "", "Wed, 21 Oct 2015 07:28:00"]
)
def test_retry_after_parser_refuses_what_is_no_delay(value: str) -> None:
    from streamcite.core.retry_after import parse_retry_after

    assert parse_retry_after(value) is None


# -- no redirect is followed with credentials -------------------------------------------


class _Recorder:
    """A second origin that records every request (it must get none)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, str]] = []

    def app(self) -> web.Application:
        async def any_path(request: web.Request) -> web.Response:
            self.requests.append(dict(request.headers))
            return web.json_response({})

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", any_path)
        return app


def _redirecting(target: str, status: int) -> web.Application:
    async def any_path(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(status=status, headers={"Location": target + request.path_qs})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", any_path)
    return app


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
@pytest.mark.parametrize("status", [301, 302, 307, 308])
async def test_the_chat_stream_follows_no_redirect(serve: Any, transport: str, status: int) -> None:
    from streamcite import stream_chat
    from streamcite.core.events import ErrorEvent

    other = _Recorder()
    other_url = await serve(other.app())
    base = await serve(_redirecting(other_url + "/steal?key=sk-secret", status))
    request = {
        "model": "streamcite-local",
        "messages": [{"role": "user", "content": "private"}],
        "stream": True,
    }
    async with stream_chat(
        request,
        base_url=base + "/v1",
        api_key="sk-live-abcdef123456",
        headers={"X-Api-Key": "xk-abcdef123456"},
        transport=transport,
        retries=2,
    ) as s:
        events = [e async for e in s]
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert [(e.code, e.status, e.retryable) for e in errors] == [("redirected", status, False)]
    assert other_url.removeprefix("http://") in errors[0].message
    assert "steal" not in errors[0].message and "key=" not in errors[0].message
    assert other.requests == []  # neither the keys nor the conversation left for it


async def test_enrichers_follow_no_redirect(serve: Any) -> None:
    from streamcite import stream_chat
    from streamcite.apps._enrichers import LOCAL_GOOGLE_CONFIG, LOCAL_WIKIT_APP, LOCAL_WIKIT_ORG
    from streamcite.core.events import ErrorEvent
    from streamcite.enrich.google import GoogleGrounding
    from streamcite.enrich.wikit import WikitSources
    from streamcite.local.server import BackendConfig, LocalBackend

    other = _Recorder()
    other_url = await serve(other.app())
    trap = await serve(_redirecting(other_url, 307))
    enrichers = [
        WikitSources(LOCAL_WIKIT_APP, LOCAL_WIKIT_ORG, api_key="wk-abcdef123456", base_url=trap),
        GoogleGrounding(LOCAL_GOOGLE_CONFIG, token="ya29.abcdef123456", endpoint=trap),
    ]
    request = {
        "model": "streamcite-local",
        "messages": [{"role": "user", "content": "How many days of remote work per week?"}],
        "stream": True,
    }
    async with (
        LocalBackend(BackendConfig()) as backend,
        stream_chat(request, base_url=backend.base_url, after=enrichers) as s,
    ):
        events = [e async for e in s]
    errors = {e.stage: e for e in events if isinstance(e, ErrorEvent)}
    assert {stage: e.code for stage, e in errors.items()} == {
        "sources": "redirected",
        "grounding": "redirected",
    }
    assert all(other_url.removeprefix("http://") in e.message for e in errors.values())
    assert other.requests == []


# -- secrets never reach an event or a log line ------------------------------------------

API_KEY = "sk-live-5f1e0c9a7b3d4e2f8a6c"
WIKIT_KEY = "wk-9d8c7b6a5f4e3d2c1b0a"
GOOGLE_TOKEN = "ya29.a0AfH6SMBx7q2w9e8r7t6y"


def _leaks(text: str, secrets: list[str]) -> list[str]:
    """Each secret, or an 8+ character prefix of one, found in ``text``."""
    return [s for s in secrets for k in range(8, len(s) + 1) if s[:k] in text]


def _echoing(status: int) -> web.Application:
    """Answers every request with an error body that echoes the request's headers."""

    async def any_path(request: web.Request) -> web.Response:
        await request.read()
        echo = {"error": {"message": f"bad request; headers were {dict(request.headers)}"}}
        return web.json_response(echo, status=status)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", any_path)
    return app


async def test_echoed_headers_never_reach_events_or_logs(serve: Any, captured_logs: Any) -> None:
    from streamcite import stream_chat
    from streamcite.apps._enrichers import LOCAL_GOOGLE_CONFIG, LOCAL_WIKIT_APP, LOCAL_WIKIT_ORG
    from streamcite.core.events import ErrorEvent
    from streamcite.enrich.google import GoogleGrounding
    from streamcite.enrich.wikit import WikitSources
    from streamcite.local.server import BackendConfig, LocalBackend

    echo = await serve(_echoing(400))
    enrichers = [
        WikitSources(LOCAL_WIKIT_APP, LOCAL_WIKIT_ORG, api_key=WIKIT_KEY, base_url=echo),
        GoogleGrounding(LOCAL_GOOGLE_CONFIG, token=GOOGLE_TOKEN, endpoint=echo),
    ]
    request = {
        "model": "streamcite-local",
        "messages": [{"role": "user", "content": "How many days of remote work per week?"}],
        "stream": True,
    }
    async with (
        LocalBackend(BackendConfig()) as backend,
        stream_chat(request, base_url=backend.base_url, after=enrichers) as s,
    ):
        events = [e async for e in s]
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert {e.stage for e in errors} == {"sources", "grounding"}, errors
    wire = b"".join(e.to_json() for e in events).decode()
    assert _leaks(wire, [WIKIT_KEY, GOOGLE_TOKEN]) == []
    assert _leaks(repr(captured_logs), [WIKIT_KEY, GOOGLE_TOKEN]) == []
    # and the chat stream's own key, echoed by its upstream
    async with stream_chat(request, base_url=echo + "/v1", api_key=API_KEY) as s:
        events = [e async for e in s]
    assert [e.code for e in events if isinstance(e, ErrorEvent)] == ["bad_request"]
    assert _leaks(b"".join(e.to_json() for e in events).decode(), [API_KEY]) == []


@pytest.mark.parametrize("cut", range(100, 125))
async def test_a_key_cut_by_truncation_is_still_masked(serve: Any, cut: int) -> None:
    """A bad chunk quoting the key, placed so the 120-byte quote cuts it anywhere."""
    from streamcite import stream_chat
    from streamcite.core.events import ErrorEvent

    line = ("x" * cut + API_KEY).encode()

    async def chat(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(b"data: " + line + b"\n\ndata: [DONE]\n\n")
        return resp

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    base = await serve(app)
    request = {"model": "streamcite-local", "messages": [], "stream": True}
    async with stream_chat(request, base_url=base + "/v1", api_key=API_KEY) as s:
        events = [e async for e in s]
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert errors and errors[0].code == "invalid_json"
    wire = b"".join(e.to_json() for e in events).decode()
    assert _leaks(wire, [API_KEY]) == []


def test_log_fields_are_masked_by_exact_name() -> None:
    from streamcite.logs import redact_secrets

    out = redact_secrets(
        None,
        "info",
        {
            "Authorization": "x",
            "api-key": "x",
            "token": "x",
            "completion_tokens": 3,
            "max_tokens": 9,
        },
    )
    assert out == {
        "Authorization": "***",
        "api-key": "***",
        "token": "***",
        "completion_tokens": 3,
        "max_tokens": 9,
    }


# -- what a browser reads of an upstream failure -----------------------------------------


async def test_relay_errors_name_no_internal_address_or_errno(serve: Any) -> None:
    import socket

    from tests._relay_fixtures import ws_client

    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    async with relay(f"http://127.0.0.1:{port}/v1") as server, ws_client(server) as client:
        sid = await client.ask("hi")
        done = await client.until_done(sid)
    errors = [f for f in client.frames if f.get("type") == "error" and f.get("seq")]
    assert [e["code"] for e in errors] == ["connect_failed"]
    shown = orjson.dumps([errors, done]).decode()
    assert "Errno" not in shown and "127.0.0.1" not in shown and str(port) not in shown


@pytest.mark.parametrize(
    ("message", "shown"),
    [
        (
            "sources: connect ([Errno 111] Connect call failed ('10.0.3.7', 8001))",
            "sources: connect",
        ),
        ("upstream at 192.168.1.20:8443 said no", "upstream at … said no"),
        ("model 'gpt-x' not found", "model 'gpt-x' not found"),
    ],
)
def test_addresses_and_errno_leave_error_messages(message: str, shown: str) -> None:
    from streamcite.core.events import ErrorEvent
    from streamcite.relay.bounds import public_error as for_browser

    event = ErrorEvent(code="wikit_error", message=message)
    for_browser(event)
    assert "Errno" not in event.message and "10.0.3.7" not in event.message
    assert event.message.startswith(shown)


# -- regressions found in review (each failed before its fix) ---------------------------


async def test_url_userinfo_and_header_credentials_never_appear(serve: ServeFn) -> None:
    token = "sk-HDRKEY-123456"
    up = Upstream(
        status=401, error_body=orjson.dumps({"error": {"message": f"Invalid token {token}"}})
    )
    url = await serve(up.app())
    base = url.replace("http://", "http://alice:s3cretpw@") + "/v1"
    with capture_logs() as logs:
        async with stream_chat(
            {"model": "streamcite-local", "messages": [], "stream": True},
            base_url=base,
            transport="httpx",
            headers={"Authorization": f"Bearer {token}"},
        ) as s:
            events = [e async for e in s]
            rep = repr(s)
    blob = repr(events) + rep + repr(logs) + orjson.dumps([e.to_dict() for e in events]).decode()
    assert "s3cretpw" not in blob and "alice" not in blob
    assert token not in blob and "Invalid token ***" in blob
