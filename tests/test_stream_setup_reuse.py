"""What every stream used to make anew and is now made once and shared: each shared
thing is immutable, and streams that differ get their own (no state leaks between them)."""

from __future__ import annotations

from typing import Any

import orjson
from prometheus_client.parser import text_string_to_metric_families

from streamcite.core.api import ChatStreamParser, parser_for
from streamcite.core.bounds import StreamBounds
from streamcite.pipeline import stream_chat
from streamcite.pipeline.apis import prepare_request
from streamcite.relay.metrics import RelayMetrics
from streamcite.transports.aiohttp import _client_timeout

KEY_A = "alpha-key-0123456789abcdef"
KEY_B = "bravo-key-0123456789abcdef"
REQ = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}


def _scrub(stream: Any, text: str) -> str:
    return str(stream._rec.scrub(text))


def test_streams_with_the_same_secrets_share_one_redactor() -> None:
    a = stream_chat(REQ, base_url="http://127.0.0.1:9/v1", api_key=KEY_A)
    b = stream_chat(REQ, base_url="http://127.0.0.1:9/v1", api_key=KEY_A)
    assert a._rec._redact is b._rec._redact  # made once (fails if the reuse is lost)
    assert _scrub(b, f"echo {KEY_A}") == "echo ***"


def test_streams_with_other_secrets_get_their_own_redactor() -> None:
    a = stream_chat(REQ, base_url="http://127.0.0.1:9/v1", api_key=KEY_A)
    b = stream_chat(REQ, base_url="http://127.0.0.1:9/v1", api_key=KEY_B)
    c = stream_chat(
        REQ, base_url="http://127.0.0.1:9/v1", api_key=KEY_A, headers={"X-Api-Key": KEY_B}
    )
    assert a._rec._redact is not b._rec._redact
    assert _scrub(a, f"{KEY_A} {KEY_B}") == f"*** {KEY_B}"
    assert _scrub(b, f"{KEY_A} {KEY_B}") == f"{KEY_A} ***"
    assert _scrub(c, f"{KEY_A} {KEY_B}") == "*** ***"


def test_the_url_password_is_a_secret_and_never_the_logged_host() -> None:
    s = stream_chat(REQ, base_url="http://user:hunter2-secret@127.0.0.1:9/v1")
    t = stream_chat(REQ, base_url="http://127.0.0.1:9/v1")
    assert s._host == "127.0.0.1:9" and t._host == "127.0.0.1:9"
    assert _scrub(s, "pw hunter2-secret") == "pw ***"
    assert _scrub(t, "pw hunter2-secret") == "pw hunter2-secret"


def test_the_request_url_follows_each_base_url_and_api() -> None:
    for base, api, want in [
        ("http://h:1", "anthropic", "http://h:1/v1/messages"),
        ("http://h:1/v1", "chat", "http://h:1/v1/chat/completions"),
        ("http://h:1", "chat", "http://h:1/chat/completions"),
        ("http://h:1", "cohere", "http://h:1/v2/chat"),
        ("http://h:1", "anthropic", "http://h:1/v1/messages"),
    ]:
        assert prepare_request(api, REQ, base_url=base).url == want


def test_client_timeouts_are_shared_per_connect_limit() -> None:
    t10 = _client_timeout(10.0)
    assert _client_timeout(10.0) is t10 and t10.connect == 10.0
    assert t10.total is None and t10.sock_read is None
    t2 = _client_timeout(2.5)
    assert t2 is not t10 and t2.connect == 2.5 and _client_timeout(None).connect is None
    for i in range(40):  # bounded: old entries go, every answer stays right
        assert _client_timeout(float(i)).connect == float(i)
    assert _client_timeout(10.0).connect == 10.0


def test_counts_keep_their_labelled_child_and_count_each_label_alone() -> None:
    m = RelayMetrics()
    asked: list[str] = []
    labels = m.streams_finished._metric.labels

    def counting(key: str) -> Any:
        asked.append(key)
        return labels(key)

    m.streams_finished._metric.labels = counting
    for _ in range(3):
        m.streams_finished["ok"] += 1
    m.streams_finished["error"] += 1
    assert asked == ["ok", "error"]  # one labels() per label value, not per count
    text = m.render(active_streams=0, log_stats=None).decode()
    got = {
        s.labels["outcome"]: s.value
        for f in text_string_to_metric_families(text)
        if f.name == "streamcite_relay_streams_finished"
        for s in f.samples
        if s.name.endswith("_total")
    }
    assert got == {"ok": 3.0, "error": 1.0}


def test_parser_for_is_the_parser_of_its_arguments() -> None:
    body = (
        b'data: {"choices":[{"index":0,"delta":{"content":"Hi [1]"}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    )
    bounds = StreamBounds(max_answer_chars=1000)
    for mode in ("keep", "strip"):
        p = parser_for("chat", mode, bounds)  # type: ignore[arg-type]
        q = ChatStreamParser(mode, bounds=bounds, dialect="chat")  # type: ignore[arg-type]
        assert p.dialect == "chat" and p.builder.bounds is bounds
        got = [orjson.dumps(e) for e in [*p.feed(body), *p.close(), p.done_event()]]
        want = [orjson.dumps(e) for e in [*q.feed(body), *q.close(), q.done_event()]]
        assert got == want
