"""``--api`` on ``ask``, ``bench`` and ``relay``: each API over the embedded backend's
matching endpoint, enrichers after any of them, the relay's frames and UI stream spans."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from click.testing import CliRunner

from streamcite.apps import bench
from streamcite.apps._usage import base_url_hint
from streamcite.apps.options import API_CHOICES
from streamcite.cli import main
from streamcite.local.server import LocalBackend
from streamcite.pipeline.apis import APIS, api_root
from tests._relay_fixtures import relay, text_of, ws_client
from tests.test_pipeline_apis import TEXT, Recorder
from tests.test_web import chunks

QUESTION = "How many days a week can I work from home?"


def _ask(*args: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(main, ["ask", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return [orjson.loads(line) for line in result.stdout.splitlines() if line.strip()]


def test_api_option_is_the_same_in_every_command() -> None:
    assert API_CHOICES == APIS
    for name in ("ask", "bench", "relay"):
        result = CliRunner().invoke(main, [name, "--help"], terminal_width=200)
        assert result.exit_code == 0, result.output
        choices = re.search(r"--api \[([a-z|]+)\]", result.output)
        assert choices is not None, name
        assert tuple(choices[1].split("|")) == APIS
        assert "default: chat" in result.output


@pytest.mark.parametrize("api", [a for a in APIS if a != "chat"])
def test_ask_each_api_with_sources_and_grounding(api: str) -> None:
    chat = _ask("--json", QUESTION)[-1]["answer"]
    events = _ask("--api", api, "--json", QUESTION)
    kinds = [e["type"] for e in events]
    answer = events[-1]["answer"]
    assert answer["complete"] and answer["errors"] == [], answer["errors"]
    # the same answerer behind every endpoint: the same text, then the enrichers ran
    assert answer["text"] == chat["text"]
    assert "citations" in kinds and "sources" in kinds and "grounding" in kinds
    assert answer["citation_spans"] and answer["sources"]
    assert answer["grounding"]["support_score"] > 0.5


def test_responses_answers_are_grounded_on_the_sources_unless_told_otherwise() -> None:
    """Responses' url_citation annotations quote nothing: by default the check's facts
    are then the Wikit sources too (the local backend serves them by response id); an
    explicit --grounding-facts citations is kept, and has nothing to check against."""
    (grounding,) = [
        e for e in _ask("--api", "responses", "--json", QUESTION) if e["type"] == "grounding"
    ]
    assert grounding["support_score"] > 0.5
    told = _ask("--api", "responses", "--json", "--grounding-facts", "citations", QUESTION)
    g = told[-1]["answer"]["grounding"]
    # nothing to check against: no verdict (it was 0.0, every true sentence "unsupported")
    assert g["support_score"] is None and g["unsupported_claims"] == 0
    assert g["reason"].startswith("no quoted text to check against")
    # without sources there is nothing to add: citations it is, no usage error
    quiet = _ask("--api", "responses", "--json", "--no-sources", QUESTION)
    assert quiet[-1]["answer"]["complete"]


def test_base_url_hint_names_each_apis_root() -> None:
    assert base_url_hint("http://h", 404) == (
        "hint: OpenAI-compatible APIs live under /v1; try --base-url http://h/v1"
    )
    hint = base_url_hint("http://h/v1", 404, "cohere")
    assert hint is not None and "try --base-url http://h/v2 " in hint
    assert base_url_hint("http://h/v1", 404, "gemini") is None  # v1 or v1beta
    assert base_url_hint("http://h/v1beta", 404, "gemini") is None


async def test_relay_over_each_api_carries_spans_in_citations_frames() -> None:
    async with LocalBackend() as be:
        for api in ("anthropic", "gemini"):
            async with (
                relay(api_root(be.root_url, api), api=api) as server,
                ws_client(server) as client,
            ):
                sid = await client.ask(QUESTION)
                done = await client.until_done(sid)
                events = client.events(sid)
            answer = done["answer"]
            assert text_of(events) == answer["text"] and answer["complete"], api
            cites = [e for e in events if e["type"] == "citations"]
            assert cites and cites[-1]["spans"] == answer["citation_spans"]
            assert all(isinstance(s["end_utf16"], int) for s in cites[-1]["spans"])


async def test_relay_api_chat_stream_has_citation_spans() -> None:
    async with (
        LocalBackend() as be,
        relay(api_root(be.root_url, "responses"), api="responses") as server,
    ):
        body = {
            "id": "c1",
            "messages": [
                {"id": "u1", "role": "user", "parts": [{"type": "text", "text": QUESTION}]}
            ],
        }
        headers = {"Origin": server.url.rstrip("/")}
        async with (
            aiohttp.ClientSession() as session,
            session.post(server.url.rstrip("/") + "/api/chat", json=body, headers=headers) as resp,
        ):
            assert resp.status == 200
            got = chunks(await resp.read())
    kinds = [c["type"] for c in got]
    assert "data-citation-spans" in kinds
    first_span = kinds.index("data-citation-spans")
    assert any(k.startswith("source-") for k in kinds[:first_span])  # after the sources
    sources = {c["sourceId"] for c in got if c["type"].startswith("source-")}
    text = "".join(c["delta"] for c in got if c["type"] == "text-delta")
    js = text.encode("utf-16-le")
    spans = [c for c in got if c["type"] == "data-citation-spans"][-1]["data"]["spans"]
    for span in spans:
        assert span["sourceId"] in sources
        assert 0 <= span["start"] < span["end"] <= len(js) // 2


def test_bench_with_an_api_over_the_embedded_backend(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        bench.command,
        [
            "--api", "anthropic", "--upstream", "local", "--local-in-process",
            "--question", QUESTION, "--requests", "2", "--warmup", "0",
            "--grounding", "none", "--out", str(out),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = orjson.loads((out / "results.json").read_bytes())
    assert doc["config"]["api"] == "anthropic"
    (run,) = doc["runs"]
    assert run["summary"]["ok"] == 2, run["summary"]["errors_by_code"]


@contextlib.contextmanager
def recorder_in_thread(api: str) -> Iterator[tuple[str, Recorder]]:
    """A :class:`Recorder` served on 127.0.0.1 from its own thread and event loop (the CLI
    runs ``asyncio.run`` itself)."""
    up = Recorder(api)
    loop = asyncio.new_event_loop()
    started: concurrent.futures.Future[tuple[str, web.AppRunner]] = concurrent.futures.Future()

    async def start() -> None:
        runner = web.AppRunner(up.app(), shutdown_timeout=0.1)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        started.set_result((f"http://127.0.0.1:{runner.addresses[0][1]}", runner))

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(start(), loop)
    url, runner = started.result(timeout=10)
    try:
        yield url, up
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


@pytest.mark.parametrize(
    ("api", "env", "header"),
    [
        ("anthropic", "ANTHROPIC_API_KEY", "x-api-key"),
        ("gemini", "GEMINI_API_KEY", "x-goog-api-key"),
        ("cohere", "CO_API_KEY", "authorization"),
    ],
)
def test_ask_a_provider_by_api_with_its_key_variable(
    api: str, env: str, header: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(env, "sk-cli-9f8e7d6c5b4a")
    with recorder_in_thread(api) as (url, up):
        events = _ask(
            "--api", api, "--base-url", api_root(url, api), "--model", "m1",
            "--json", "--grounding", "none", "--system-prompt", "Be brief.", QUESTION,
        )  # fmt: skip
    assert events[-1]["answer"]["text"] == TEXT
    ((path, headers, body),) = up.seen
    low = {k.lower(): v for k, v in headers.items()}
    assert low[header].endswith("sk-cli-9f8e7d6c5b4a")
    sent = orjson.loads(body)
    if api == "gemini":
        assert path == "/v1beta/models/m1:streamGenerateContent?alt=sse"
        assert sent["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
        assert sent["contents"] == [{"role": "user", "parts": [{"text": QUESTION}]}]
    elif api == "anthropic":
        assert path == "/v1/messages"
        assert (sent["system"], sent["max_tokens"], sent["model"]) == ("Be brief.", 1024, "m1")
    else:
        assert path == "/v2/chat" and sent["messages"][0]["role"] == "system"


def test_default_facts_of_the_relay_and_ask() -> None:
    from streamcite.apps._enrichers import default_facts

    assert [default_facts(api, True) for api in APIS] == [
        "citations", "both", "citations", "citations", "citations",
    ]  # fmt: skip
    assert default_facts("responses", False) == "citations"
