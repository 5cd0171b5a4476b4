"""Hardening round 3, the edges (issue 25): the UI message encoder, the Wikit client, error
messages, and what the commands print. The relay's own items (slow readers, slowloris,
changed citation lists, the ``done`` frame) are in ``test_hardening_relay_edge.py``.

Each test fails on the code before this round (the figures are in docs/security.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from streamcite.apps._terminal import json_line_escaped, one_line, terminal_safe
from streamcite.cli import main
from streamcite.core.errors import MalformedResponse, UpstreamError
from streamcite.core.events import CitationsEvent, DoneEvent, ErrorEvent
from streamcite.core.models import Citation
from streamcite.enrich._http import MAX_ERROR_MESSAGE, path_segment, url_with_segments
from streamcite.enrich.wikit import WikitSources
from streamcite.pipeline import stream_chat
from streamcite.web.uimessage import MAX_SOURCE_PARTS, UIMessageEncoder
from tests._cpu import loop_held
from tests._upstream import chunk, full_stream, threaded_upstream

ServeFn = Callable[[web.Application], Awaitable[str]]

APP, ORG = "app1", "org1"
SOURCES_PATH = "/semantics/apps/{app}/query-execution-sources/{qid}/get-quoted-sources"


def _frames(out: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(line[6:]) for line in out.split(b"\n\n") if line.startswith(b"data: {")]


# -- 1. the UI message encoder is linear, and caps its source parts ---------------------------


def _citations(n: int, *, same_document: bool) -> CitationsEvent:
    return CitationsEvent(
        citations=[
            Citation(
                document_index=0 if same_document else i,
                source_url=f"https://example.org/{i}",
                document_title="T",
                cited_text="c",
            )
            for i in range(n)
        ]
    )


@pytest.mark.parametrize(("n", "same"), [(10_000, True), (40_000, False)])
def test_ui_encoder_is_linear_in_citations(n: int, same: bool) -> None:
    # Before: 28.6 s for 10,000 citations of one document (a `while sid in ids` rescan
    # per citation), 57 s for 40,000 distinct (`bytes +=`). After: ~1 ms capped, ~50 ms
    # uncapped. The bound sits far from both: 5 s (a loaded CI machine took 0.6 s
    # uncapped) against 28-57 s before.
    for cap in (MAX_SOURCE_PARTS, n):
        enc = UIMessageEncoder("m", max_sources=cap)
        started = time.process_time()  # CPU time: what a loaded machine does not stretch
        out = enc.feed(_citations(n, same_document=same))
        elapsed = time.process_time() - started
        assert elapsed < 5.0, elapsed
        frames = _frames(out)
        sources = [f for f in frames if f["type"] == "source-url"]
        assert len(sources) == min(cap, n)
        ids = [f["sourceId"] for f in sources]
        assert len(set(ids)) == len(ids)
        if same:
            assert ids[:3] == ["cite-1", "cite-1-2", "cite-1-3"]


def test_ui_encoder_source_cap_is_counted_not_silent() -> None:
    enc = UIMessageEncoder("m", max_sources=3)
    frames = _frames(enc.feed(_citations(5, same_document=False)))
    frames += _frames(enc.feed(_citations(2, same_document=True)))
    assert [f["type"] for f in frames].count("source-url") == 3
    notes = [f for f in frames if f["type"] == "data-sources-truncated"]
    # One part, replaced in place by the AI SDK (same id), counting every dropped citation.
    assert {n["id"] for n in notes} == {"sources-truncated"}
    assert notes[-1]["data"] == {"limit": 3, "dropped": 4}


def test_ui_encoder_refusal_bytes_are_linear() -> None:
    # Each data-refusal carries the whole text so far; one per fragment was quadratic
    # (200k fragments: ~40 GB). Now one when the text doubled, and the rest at the end.
    enc = UIMessageEncoder("m")
    n = 20_000
    out = [enc.feed({"type": "refusal", "index": 0, "text": "no"}) for _ in range(n)]
    out.append(enc.feed({"type": "finish", "index": 0, "reason": "stop"}))
    total = sum(len(b) for b in out)
    assert total < 10 * 2 * n, total
    refusals = [f for b in out for f in _frames(b) if f["type"] == "data-refusal"]
    assert refusals[0]["data"]["text"] == "no"
    assert refusals[-1]["data"]["text"] == "no" * n


# -- 10. a Wikit reply of 30 MB of minimal sources -------------------------------------------


def _minimal_sources(n: int) -> bytes:
    one = b'{"quoted_as":"1","document":{"id":"d","name":"n"},"chunk":{"id":"c","data":""}}'
    return b"[" + b",".join([one] * n) + b"]"


def _wikit_app(
    body: bytes, seen: list[tuple[str, dict[str, str]]] | None = None
) -> web.Application:
    async def sources(request: web.Request) -> web.Response:
        if seen is not None:
            seen.append((request.raw_path, dict(request.headers)))
        return web.Response(body=body, content_type="application/json")

    app = web.Application(client_max_size=1024)
    app.router.add_route("*", "/{tail:.*}", sources)
    return app


async def test_wikit_reply_of_500k_minimal_sources_is_refused_quickly(serve: ServeFn) -> None:
    body = _minimal_sources(380_000)  # 30 MB, under the 32 MiB body cap
    assert 29_000_000 < len(body) < 32 * 1024 * 1024
    url = await serve(_wikit_app(body))
    tracemalloc.start()
    started = time.process_time()  # CPU time, and the loop's own: not the machine's load
    try:
        # A deadline far above the work (a safety net): the refusal is what is tested.
        async with loop_held() as held, WikitSources(APP, ORG, base_url=url, deadline=30.0) as w:
            with pytest.raises(UpstreamError) as info:
                await w.fetch("q1")
        elapsed = time.process_time() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Before: 9.65 s of parsing on the event loop, peak RSS 683 MB.
    assert info.value.code == "wikit_too_many_sources"
    assert elapsed < 3.0, elapsed
    assert held.worst < 2.0, held.worst  # fixed ~0.06 s; 9.9 s before
    assert peak < 4 * len(body), peak  # the body and its copies, never 500k objects


async def test_wikit_source_cap_also_counts_escaped_keys(serve: ServeFn) -> None:
    one = b'{"quoted\\u005fas":"1","document":{"id":"d","name":"n"},"chunk":{"id":"c","data":""}}'
    url = await serve(_wikit_app(b"[" + b",".join([one] * 5) + b"]"))
    async with WikitSources(APP, ORG, base_url=url, max_sources=4) as wikit:
        with pytest.raises(UpstreamError) as info:
            await wikit.fetch("q1")
    assert info.value.code == "wikit_too_many_sources"
    async with WikitSources(APP, ORG, base_url=url, max_sources=5) as wikit:
        assert len(await wikit.fetch("q1")) == 5


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
async def test_wikit_v1_citations_are_capped_too(serve: ServeFn) -> None:
    url = await serve(_wikit_app(orjson.dumps([{}] * 5)))
    async with WikitSources(APP, ORG, "key", base_url=url, max_sources=4) as wikit:
        with pytest.raises(UpstreamError) as info:
            await wikit.fetch_v1("q1")
    assert info.value.code == "wikit_too_many_sources"


# -- 11. error messages quoting upstream data are bounded -------------------------------------


def _huge_quoted_as() -> bytes:
    item = {"quoted_as": ["x" * 10] * 400_000, "document": {"id": "d", "name": "n"}, "chunk": {}}
    return orjson.dumps([item])


async def test_wikit_error_quoting_a_5mb_item_is_bounded(serve: ServeFn) -> None:
    body = _huge_quoted_as()
    assert len(body) > 5_000_000
    url = await serve(_wikit_app(body))
    async with WikitSources(APP, ORG, base_url=url) as wikit:
        with pytest.raises(MalformedResponse) as info:
            await wikit.fetch("q1")
    # Before: a 5,020,039-character message.
    assert len(info.value.message) <= MAX_ERROR_MESSAGE + 40
    assert info.value.message.startswith("$[0].quoted_as: expected a string")
    assert str(info.value) == info.value.message


async def test_stream_chat_error_event_from_a_hostile_enricher_reply_is_bounded(
    serve: ServeFn,
) -> None:
    body = _huge_quoted_as()

    async def chat(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for part in full_stream():
            await resp.write(part)
        return resp

    async def sources(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get(SOURCES_PATH.format(app=APP, qid="{qid}"), sources)
    url = await serve(app)
    wikit = WikitSources(APP, ORG, base_url=url)
    errors: list[ErrorEvent] = []
    async with stream_chat(
        {"model": "m", "messages": [{"role": "user", "content": "q"}], "stream": True},
        base_url=url + "/v1",
        after=[wikit],
        retries=0,
    ) as events:
        async for event in events:
            if isinstance(event, ErrorEvent):
                errors.append(event)
            if isinstance(event, DoneEvent):
                errors += [e for e in event.answer.errors if isinstance(e, ErrorEvent)]
    assert errors and all(len(e.message) <= MAX_ERROR_MESSAGE + 40 for e in errors), [
        len(e.message) for e in errors
    ]


# -- 14. an upstream id never changes the request's path ---------------------------------------


@pytest.mark.parametrize("query_id", ["..", ".", "../..", "a/../b", "%2e%2e", "?x=1#f", "v1.2"])
async def test_wikit_ids_are_path_segments_the_path_cannot_leave(
    serve: ServeFn, query_id: str
) -> None:
    seen: list[tuple[str, dict[str, str]]] = []
    url = await serve(_wikit_app(b"[]", seen))
    async with WikitSources(APP, ORG, "secret-key", base_url=url, deadline=1.0) as wikit:
        assert await wikit.fetch(query_id) == []
    assert len(seen) == 1
    path, headers = seen[0]
    prefix, suffix = f"/semantics/apps/{APP}/query-execution-sources/", "/get-quoted-sources"
    # Before: ".." sent the key to /semantics/apps/app1/get-quoted-sources.
    assert path.startswith(prefix) and path.endswith(suffix), path
    segment = path[len(prefix) : -len(suffix)]
    assert "/" not in segment and segment.strip(".") != ""
    assert headers["Wikit-Semantics-API-Key"] == "secret-key"


async def test_completion_id_dot_dot_reaches_the_sources_path(serve: ServeFn) -> None:
    seen: list[tuple[str, dict[str, str]]] = []

    async def chat(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for part in full_stream():
            await resp.write(part.replace(b'"chatcmpl-t1"', b'".."'))
        return resp

    async def anything(request: web.Request) -> web.Response:
        seen.append((request.raw_path, dict(request.headers)))
        return web.Response(body=b"[]", content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_route("GET", "/{tail:.*}", anything)
    url = await serve(app)
    wikit = WikitSources(APP, ORG, "secret-key", base_url=url, deadline=1.0)
    async with stream_chat(
        {"model": "m", "messages": [{"role": "user", "content": "q"}], "stream": True},
        base_url=url + "/v1",
        after=[wikit],
        retries=0,
    ) as events:
        async for _ in events:
            pass
    assert [p for p, _ in seen] == [
        f"/semantics/apps/{APP}/query-execution-sources/%2E%2E/get-quoted-sources"
    ]


@given(st.text(min_size=1, max_size=20))
def test_path_segment_never_changes_the_path(value: str) -> None:
    url = url_with_segments("http://h/base", "/a/{}/b", value)
    assert url.raw_path.startswith("/base/a/") and url.raw_path.endswith("/b")
    segment = url.raw_path[len("/base/a/") : -len("/b")]
    assert segment == path_segment(value)
    assert "/" not in segment and segment not in (".", "..")


# -- 12. terminal escapes in warnings ------------------------------------------------------


def test_serve_local_skipped_warning_has_no_terminal_escape(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "good.md").write_text("# Good\n\nA document.\n")
    hostile = "a\x1b]0;PWNED\x07\x1b[2J\nb.md"
    (corpus / hostile).write_bytes(b"\xff\xfe not utf-8")
    code = "from streamcite.cli import main; main()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "serve-local", "--port", "0", "--corpus", str(corpus)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # printed after the warnings
        assert b"local backend on" in first, first
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    text = err.decode()
    warnings = [line for line in text.splitlines() if "warning" in line]
    # Before: the name printed raw (title set to PWNED, screen cleared).
    assert len(warnings) == 1 and "skipped" in warnings[0], text
    assert "\x1b" not in text and "\x07" not in text
    assert "PWNED" not in text and "corpus/a\\nb.md: not UTF-8" in warnings[0]


def test_bench_summary_shows_provider_error_codes_inert() -> None:
    from streamcite.bench.tables import _lines

    summary = {"ok": 0, "requests": 1, "error_rate": 1.0, "throughput_rps": 1.0}
    text = _lines({**summary, "errors_by_code": {"a\x1b]0;T\x07\x1b[2J\nb": 1}}).plain
    assert "\x1b" not in text and "\x07" not in text and "errors:\xa0a\\nb×1" in text


def test_one_line_keeps_a_warning_on_one_line() -> None:
    assert one_line("a\x1b[2J\r\nb\tc\u202e") == "a\\r\\nb\\tc"


# -- 13. C1 controls in --json, bidi overrides in pretty output ---------------------------------

RLO = "\u202e"
C1_TEXT = "csi\x9b2J osc\x9d0;x\x07 end"
BIDI_TITLE = f"Report {RLO}fdp.exe"
BIDI_URL = f"https://example.org/{RLO}moc.evil"


def _c1_stream() -> bytes:
    return b"".join(
        [
            chunk(C1_TEXT),
            chunk(" [1]"),
            chunk(
                None,
                "stop",
                citations=[
                    {
                        "cited_text": "q",
                        "document_title": BIDI_TITLE,
                        "document_index": 0,
                        "source_url": BIDI_URL,
                    }
                ],
            ),
            b"data: [DONE]\n\n",
        ]
    )


def _raw_controls(text: str) -> list[str]:
    return [c for c in text if "\x80" <= c <= "\x9f" or c in "\u202a\u202b\u202c\u202d\u202e"]


def test_ask_json_escapes_c1_controls_and_bidi_overrides() -> None:
    with threaded_upstream(_c1_stream()) as base_url:
        result = CliRunner().invoke(
            main,
            ["ask", "hi", "--base-url", base_url, "--model", "m", "--json"],
            catch_exceptions=False,
        )
    assert result.exit_code == 0, result.output
    # Before: U+009B, U+009D and U+202E written raw (orjson escapes only C0).
    assert _raw_controls(result.stdout) == []
    assert "\\u009b" in result.stdout and "\\u202e" in result.stdout
    events = [orjson.loads(line) for line in result.stdout.splitlines() if line.strip()]
    answer = events[-1]["answer"]
    assert answer["text"].startswith(C1_TEXT)  # the same values once decoded
    assert answer["citations"][0]["document_title"] == BIDI_TITLE


def test_ask_pretty_output_neutralises_bidi_overrides() -> None:
    with threaded_upstream(_c1_stream()) as base_url:
        result = CliRunner().invoke(
            main, ["ask", "hi", "--base-url", base_url, "--model", "m"], catch_exceptions=False
        )
    assert result.exit_code == 0, result.output
    assert _raw_controls(result.output) == []
    assert "fdp.exe" in result.output and "moc.evil" in result.output


@given(st.text())
def test_json_line_escaped_decodes_to_the_same_value(text: str) -> None:
    raw = orjson.dumps({"t": text})
    out = json_line_escaped(raw)
    assert orjson.loads(out) == {"t": text}
    assert _raw_controls(out.decode()) == []


def test_terminal_safe_drops_bidi_controls() -> None:
    assert terminal_safe(f"a{RLO}b\u2066c\u2069d\u202ae") == "abcde"
