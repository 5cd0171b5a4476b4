"""The embedded backend bounds what a client can make it hold or chew on.

A 7 MiB question froze the loop for 2.3 s and the answer cache held 256 answers of up
to 8 MiB each; both are bounded now (HTTP 413, and a cache measured in bytes).
"""

from __future__ import annotations

import gc
import tracemalloc

import aiohttp
import orjson

from streamcite.local.server import _STATE, BackendConfig, LocalBackend, create_app

Q = "How many days of remote work per week?"


def _chat(question: str) -> bytes:
    return orjson.dumps(
        {"model": "m", "messages": [{"role": "user", "content": question}], "stream": True}
    )


async def test_a_body_over_the_cap_is_413_in_each_apis_shape() -> None:
    async with (
        LocalBackend(BackendConfig(max_body_bytes=64 * 1024)) as backend,
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
