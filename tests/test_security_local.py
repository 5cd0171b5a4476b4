"""The embedded backend bounds what a client can make it hold or chew on.

A 7 MiB question froze the loop for 2.3 s and the answer cache held 256 answers of up
to 8 MiB each; both are bounded now (HTTP 413, and a cache measured in bytes).
"""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import aiohttp
import aiohttp.web
import orjson
import pytest

from streamcite.local.corpus import CorpusError, load_corpus
from streamcite.local.server import _STATE, BackendConfig, LocalBackend, create_app

Q = "How many days of remote work per week?"


def _chat(question: str) -> bytes:
    return orjson.dumps(
        {
            "model": "streamcite-local",
            "messages": [{"role": "user", "content": question}],
            "stream": True,
        }
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


# --------------------------------------------------------------------------- Host / Origin

CHECK = "/v1alpha/projects/p/locations/global/groundingConfigs/default_grounding_config:check"
WIKIT_V2 = "/semantics/apps/a/query-execution-sources/q/get-quoted-sources"


async def test_dns_rebinding_host_is_refused_in_each_apis_shape() -> None:
    """A page on evil.example re-pointed at 127.0.0.1 says ``Host: evil.example``."""
    async with (
        LocalBackend(BackendConfig()) as backend,
        aiohttp.ClientSession() as session,
    ):
        evil = {"Host": "evil.example", "Origin": "http://evil.example"}
        r = await session.post(backend.base_url + "/chat/completions", data=_chat(Q), headers=evil)
        assert r.status == 403
        error = (await r.json())["error"]
        assert error["code"] == "host_not_allowed" and "--allowed-host" in error["message"]
        assert error["type"] == "invalid_request_error"
        r = await session.post(backend.root_url + CHECK, data=b"{}", headers=evil)
        assert r.status == 403 and (await r.json())["error"]["status"] == "PERMISSION_DENIED"
        r = await session.get(backend.root_url + WIKIT_V2, headers=evil)
        assert r.status == 403 and set(await r.json()) == {"detail"}
        azure = "/contentsafety/text:detectGroundedness?api-version=2024-09-15-preview"
        r = await session.post(backend.root_url + azure, data=b"{}", headers=evil)
        assert r.status == 403 and set((await r.json())["error"]) == {"code", "message"}
        doc = backend.corpus.documents[0].id
        r = await session.get(f"{backend.root_url}/documents/{doc}", headers=evil)
        assert r.status == 403 and "Remote" not in await r.text()
        r = await session.get(backend.base_url + "/models", headers=evil)
        assert r.status == 403
        # A liveness probe carries no data: served whatever the Host.
        assert (await session.get(backend.root_url + "/healthz", headers=evil)).status == 200


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("127.0.0.1:{port}", 200),
        ("localhost:{port}", 200),
        ("LocalHost.:{port}", 200),
        ("[::1]:{port}", 200),
        ("[0:0:0:0:0:0:0:1]:{port}", 200),
        ("localhost", 403),  # no port means 80: not where the backend listens
        ("localhost:1", 403),
        ("localhost.evil.example:{port}", 403),
        ("127.0.0.1.nip.io:{port}", 403),
        ("user@localhost:{port}", 403),
        ("localhost:{port}/x", 403),
        ("lоcalhost:{port}", 403),  # Cyrillic о
    ],
)
async def test_allowed_hosts_by_default(host: str, status: int) -> None:
    async with (
        LocalBackend(BackendConfig()) as backend,
        aiohttp.ClientSession() as session,
    ):
        headers = {"Host": host.format(port=backend.port)}
        r = await session.get(backend.base_url + "/models", headers=headers)
        assert r.status == status, host


async def test_foreign_origin_is_refused() -> None:
    async with (
        LocalBackend(BackendConfig()) as backend,
        aiohttp.ClientSession() as session,
    ):
        url = backend.base_url + "/chat/completions"
        for origin in (
            "http://evil.example",
            "null",
            "file://",
            f"http://localhost:{backend.port}/p",
        ):
            r = await session.post(url, data=_chat(Q), headers={"Origin": origin})
            assert r.status == 403, origin
            assert (await r.json())["error"]["code"] == "origin_not_allowed"
        for origin in (backend.root_url, f"http://localhost:{backend.port}"):
            r = await session.post(url, data=_chat(Q), headers={"Origin": origin})
            assert r.status == 200, origin


async def test_configured_allow_lists_replace_the_defaults() -> None:
    config = BackendConfig(
        allowed_hosts=(".kb.internal",), allowed_origins=("https://app.internal",)
    )
    async with (
        LocalBackend(config) as backend,
        aiohttp.ClientSession() as session,
    ):
        url = backend.base_url + "/chat/completions"
        ok = {"Host": "docs.kb.internal", "Origin": "https://app.internal"}
        assert (await session.post(url, data=_chat(Q), headers=ok)).status == 200
        assert (await session.post(url, data=_chat(Q))).status == 403  # 127.0.0.1 is not listed
        bad_origin = {"Host": "kb.internal", "Origin": "http://kb.internal"}
        assert (await session.post(url, data=_chat(Q), headers=bad_origin)).status == 403
    with pytest.raises(ValueError):
        create_app(BackendConfig(allowed_hosts=("bad host",)))
    with pytest.raises(ValueError):
        create_app(BackendConfig(allowed_origins=("javascript:alert(1)",)))


def test_serve_local_allow_list_options() -> None:
    from click.testing import CliRunner

    from streamcite.apps import serve_local

    seen: list[BackendConfig] = []

    async def fake_serve(config: BackendConfig, host: str, port: int) -> None:
        seen.append(config)

    args = ["--allowed-host", "kb.example", "--allowed-host", "[::1]:8765"]
    args += ["--allowed-origin", "https://app.example", "--public-url", "https://kb.example/"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(serve_local, "_serve", fake_serve)
        assert CliRunner().invoke(serve_local.command, args).exit_code == 0
        for bad in (["--allowed-host", "a b"], ["--allowed-origin", "null"], ["--public-url", "x"]):
            result = CliRunner().invoke(serve_local.command, bad)
            assert result.exit_code == 2, (bad, result.output)
    (config,) = seen
    assert config.allowed_hosts == ("kb.example", "[::1]:8765")
    assert config.allowed_origins == ("https://app.example",)
    assert config.public_url == "https://kb.example"


def test_a_wildcard_bind_hands_out_no_0000_urls() -> None:
    from streamcite.local.server import own_public_url

    assert own_public_url("0.0.0.0", 8765) is None  # each request's socket address instead
    assert own_public_url("::", 8765) is None
    assert own_public_url("127.0.0.1", 8765) == "http://127.0.0.1:8765"
    assert own_public_url("::1", 8765) == "http://[::1]:8765"


# --------------------------------------------------------------------------- limits


async def test_a_check_within_googles_limits_is_not_refused() -> None:
    """200 facts of 10,000 characters (what streamcite's own fact builder may send) is
    about 2 MB of JSON: the 1 MiB chat limit must not refuse it."""
    facts = [{"factText": f"Fact {i}. " + "remote work is allowed " * 430} for i in range(200)]
    body = orjson.dumps({"answerCandidate": "Remote work is allowed.", "facts": facts})
    assert len(body) > 1_900_000 and all(len(f["factText"]) <= 10_000 for f in facts)
    async with (
        LocalBackend(BackendConfig()) as backend,
        aiohttp.ClientSession() as session,
    ):
        r = await session.post(backend.root_url + CHECK, data=body)
        assert r.status == 200, await r.text()
        r = await session.post(backend.root_url + CHECK, data=body + b" " * (8 * 1024 * 1024))
        assert r.status == 413 and (await r.json())["error"]["code"] == 413


def test_the_wikit_store_is_bounded_by_measured_bytes() -> None:
    from streamcite.local.answerer import Answer
    from streamcite.local.store import AnswerStore, StoredAnswer

    limit = 512 * 1024
    store = AnswerStore(max_size=1000, ttl=60, max_bytes=limit)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(1000):  # 1000 × 64 KB questions: 64 MB if only the count bounded it
            question = f"{i:04d}" + "q" * 64_000
            store.put(StoredAnswer(f"id{i}", 0, Answer(question, f"answer {i}")))
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert store.nbytes <= limit and 0 < len(store) < 10
    assert held < 2 * limit, f"{held:,} bytes held for a {limit:,}-byte bound"
    assert "id999" in store and "id0" not in store


# --------------------------------------------------------------------------- in a real browser


@pytest.mark.browser
async def test_dns_rebinding_from_chromium_is_refused() -> None:
    """Chromium resolves evil.example to 127.0.0.1 (as after a rebinding) and opens the
    backend's document there: 403, no corpus text. A page of another origin POSTing a
    question (a "simple" request, no preflight) is refused before it is answered."""
    from playwright.async_api import async_playwright

    from tests._relay_fixtures import CHROMIUM_ARGS, require_chromium

    executable = require_chromium()
    attacker = aiohttp.web.Application()

    async def page(request: aiohttp.web.Request) -> aiohttp.web.Response:
        return aiohttp.web.Response(
            text="<!doctype html><title>attacker</title>", content_type="text/html"
        )

    attacker.router.add_get("/", page)
    runner = aiohttp.web.AppRunner(attacker, shutdown_timeout=0.1)
    await runner.setup()
    site = aiohttp.web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    attacker_port = runner.addresses[0][1]
    rules = "--host-resolver-rules=MAP evil.example 127.0.0.1"
    try:
        async with LocalBackend(BackendConfig()) as backend, async_playwright() as pw:
            browser = await pw.chromium.launch(
                executable_path=executable, args=[*CHROMIUM_ARGS, rules]
            )
            try:
                tab = await browser.new_page()
                doc = backend.corpus.documents[0]
                # The backend's own name: served.
                ok = await tab.goto(f"{backend.root_url}/documents/{doc.id}")
                assert ok is not None and ok.status == 200
                # The same socket under the attacker's name: refused.
                evil = await tab.goto(f"http://evil.example:{backend.port}/documents/{doc.id}")
                assert evil is not None and evil.status == 403
                assert doc.title not in await tab.content()
                # A page of another origin posts a question to the backend's real address.
                await tab.goto(f"http://evil.example:{attacker_port}/")
                status = await tab.evaluate(
                    """async (url) => {
                        try {
                            const r = await fetch(url, {method: "POST", mode: "no-cors",
                                body: '{"model": "streamcite-local","messages":[{"role":"user","content":"q"}]}'});
                            return r.type;
                        } catch (e) { return "error"; }
                    }""",
                    backend.base_url + "/chat/completions",
                )
                assert status in ("opaque", "error")
                assert len(backend.app[_STATE].store) == 0  # never answered
            finally:
                await browser.close()
    finally:
        await runner.cleanup()
