"""The embedded backend bounds what a client can make it hold or chew on.

A 7 MiB question froze the loop for 2.3 s and the answer cache held 256 answers of up
to 8 MiB each; both are bounded now (HTTP 413, and a cache measured in bytes).
"""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import aiohttp
import orjson
import pytest

from streamcite.local.corpus import CorpusError, load_corpus
from streamcite.local.server import _STATE, BackendConfig, LocalBackend, create_app

Q = "How many days of remote work per week?"


def _chat(question: str) -> bytes:
    return orjson.dumps(
        {"model": "m", "messages": [{"role": "user", "content": question}], "stream": True}
    )


async def test_a_body_over_the_cap_is_413_in_each_apis_shape() -> None:
    async with (
        LocalBackend(
            BackendConfig(max_body_bytes=64 * 1024, max_check_body_bytes=64 * 1024)
        ) as backend,
        aiohttp.ClientSession() as session,
    ):
        big = _chat("x " * 100_000)
        r = await session.post(backend.base_url + "/chat/completions", data=big)
        assert r.status == 413
        assert (await r.json())["error"]["code"] is not None
        check = backend.root_url + (
            "/v1/projects/p/locations/global/groundingConfigs/default_grounding_config:check"
        )
        r = await session.post(check, data=b'{"answerCandidate": "' + b"x" * 100_000 + b'"}')
        assert r.status == 413
        assert (await r.json())["error"]["code"] == 413  # Google's error shape
        r = await session.post(backend.base_url + "/chat/completions", data=_chat(Q))
        assert r.status == 200  # and the server goes on serving


async def test_a_question_over_the_cap_is_413() -> None:
    async with (
        LocalBackend(BackendConfig(max_question_chars=1000)) as backend,
        aiohttp.ClientSession() as session,
    ):
        r = await session.post(backend.base_url + "/chat/completions", data=_chat("y" * 1001))
        assert r.status == 413
        assert "1000 characters" in (await r.json())["error"]["message"]


def test_the_answer_cache_is_bounded_by_measured_bytes() -> None:
    limit = 256 * 1024
    state = create_app(BackendConfig(answer_cache_bytes=limit))[_STATE]
    question = "remote work days per week " * 400  # about 10 KB a question, 300 of them
    state.answer(question)  # warm the answerer's own caches first
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for i in range(300):
            state.answer(f"{i} {question}")
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    held = sum(s.size_diff for s in after.compare_to(before, "filename"))
    assert state.cached_answer_bytes <= limit
    # Without the bound the cache held about 300 × 10 KB = 3 MB here.
    assert held < 2 * limit, f"the cache holds {held} bytes for a {limit}-byte bound"


async def test_citation_urls_never_come_from_the_host_header() -> None:
    # The default Host allow-list refuses evil.example (403); allowed here on purpose,
    # to show that even an allowed Host never roots the URLs.
    config = BackendConfig(allowed_hosts=("evil.example", "127.0.0.1"))
    async with (
        LocalBackend(config) as backend,
        aiohttp.ClientSession() as session,
    ):
        r = await session.post(
            backend.base_url + "/chat/completions",
            data=_chat(Q),
            headers={"Host": "evil.example"},
        )
        body = (await r.read()).decode()
    assert r.status == 200 and "source_url" in body
    assert "evil.example" not in body
    assert backend.root_url + "/documents/" in body


async def test_a_configured_public_url_roots_the_citations() -> None:
    public = "https://docs.example.org/base"
    async with (
        LocalBackend(BackendConfig(public_url=public)) as backend,
        aiohttp.ClientSession() as session,
    ):
        r = await session.post(backend.base_url + "/chat/completions", data=_chat(Q))
        body = (await r.read()).decode()
    assert public + "/documents/" in body and backend.root_url not in body


def test_the_corpus_follows_no_link_out_of_its_folder(tmp_path: Path) -> None:
    outside = tmp_path / "private"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nThe vault code is 4242.\n")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "policy.md").write_text("# Policy\n\nRemote work is allowed two days a week.\n")
    (corpus / "linked.md").symlink_to(outside / "secret.md")
    (corpus / "dir").symlink_to(outside, target_is_directory=True)
    (corpus / "inside.md").symlink_to(corpus / "policy.md")  # a link within is fine
    loaded = load_corpus(corpus)
    texts = " ".join(c.text for c in loaded.chunks)
    assert "4242" not in texts and "Remote work" in texts
    assert any("linked.md" in s and "symbolic link" in s for s in loaded.skipped)
    with pytest.raises(CorpusError, match="symbolic link"):
        load_corpus(corpus, strict=True)


async def test_client_faults_only_when_allowed() -> None:
    """A served backend takes no fault injection from requests unless told to."""
    async with (
        LocalBackend(BackendConfig(allow_client_faults=False)) as backend,
        aiohttp.ClientSession() as session,
    ):
        url = backend.base_url + "/chat/completions"
        r = await session.post(url, data=_chat(Q), headers={"X-Streamcite-Fault": "status=500"})
        assert r.status == 403
        assert "--allow-client-faults" in (await r.json())["error"]["message"]
        r = await session.post(url + "?fault=status%3D500", data=_chat(Q))
        assert r.status == 403
        r = await session.post(url, data=_chat(Q))
        assert r.status == 200


def test_serve_local_refuses_client_faults_by_default() -> None:
    from click.testing import CliRunner

    from streamcite.apps import serve_local

    seen: list[BackendConfig] = []

    async def fake_serve(config: BackendConfig, host: str, port: int) -> None:
        seen.append(config)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(serve_local, "_serve", fake_serve)
        assert CliRunner().invoke(serve_local.command, []).exit_code == 0
        assert CliRunner().invoke(serve_local.command, ["--allow-client-faults"]).exit_code == 0
    assert [c.allow_client_faults for c in seen] == [False, True]
