"""``--api`` on ``ask``, ``bench`` and ``relay``: each API over the embedded backend's
matching endpoint, enrichers after any of them, the relay's frames and UI stream spans."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from click.testing import CliRunner

from streamcite.apps import bench
from streamcite.apps._usage import base_url_hint
from streamcite.apps.options import API_CHOICES
from streamcite.cli import main
from streamcite.local.server import LocalBackend
from streamcite.pipeline.apis import APIS, api_root
from tests._relay_fixtures import relay, text_of, ws_client
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
    # Responses' url_citation annotations quote nothing: the check's facts are then
    # the Wikit sources of the same answer (the local backend serves them by response id)
    facts = ["--grounding-facts", "both"] if api == "responses" else []
    events = _ask("--api", api, "--json", *facts, QUESTION)
    kinds = [e["type"] for e in events]
    answer = events[-1]["answer"]
    assert answer["complete"] and answer["errors"] == [], answer["errors"]
    # the same answerer behind every endpoint: the same text, then the enrichers ran
    assert answer["text"] == chat["text"]
    assert "citations" in kinds and "sources" in kinds and "grounding" in kinds
    assert answer["citation_spans"] and answer["sources"]
    assert answer["grounding"]["support_score"] > 0.5


def test_base_url_hint_names_each_apis_root() -> None:
    assert base_url_hint("http://h", 404) == (
        "hint: OpenAI-compatible APIs live under /v1; try --base-url http://h/v1"
    )
    hint = base_url_hint("http://h/", 404, "cohere")
    assert hint is not None and hint.endswith("try --base-url http://h/v2")
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
