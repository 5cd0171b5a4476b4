"""Defects found by this round's hostile review, each pinned by a test that failed on
the code before its fix (see docs/security.md for the security ones)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st

from streamcite.core.events import ClaimEvent, ErrorEvent
from streamcite.core.grounding import GroundingFact
from streamcite.grounding.checker import MAX_CHECK_CHARS, LocalGrounding
from streamcite.grounding.live_claims import MAX_LIVE_CHARS, LocalClaimSession
from streamcite.pipeline import stream_chat
from tests._upstream import chunk

FACTS = ["Paris is the capital of France and its largest city."]
REQUEST = {"model": "m", "messages": [{"role": "user", "content": "Where is Paris?"}]}

# ------------------------------------------------------------ live claims: bounded work


def test_live_claims_split_and_check_only_the_checked_part_of_the_answer() -> None:
    """A 2 MB answer of short sentences made 100,000 live checks (the whole-answer check
    looks at its first 64,000 characters only), each one queued for the one worker
    thread every stream shares, and 3 s of splitting on the event loop."""
    s = LocalClaimSession([GroundingFact(f) for f in FACTS])
    piece = "Paris is in France. " * 50  # 1,000 characters
    jobs = []
    for _ in range(2000):
        jobs += s.on_token(piece)
    jobs += s.on_finish()
    assert MAX_LIVE_CHARS == MAX_CHECK_CHARS
    assert all(j.end <= MAX_LIVE_CHARS for j in jobs)
    assert len(jobs) == MAX_LIVE_CHARS // 20  # every sentence of the checked part
    assert s.unchecked_chars == 2_000_000 - MAX_LIVE_CHARS


def test_a_token_across_the_limit_is_split_up_to_it() -> None:
    s = LocalClaimSession([GroundingFact(f) for f in FACTS], max_chars=30)
    jobs = s.on_token("Paris is in France. Rome is in Italy. ")
    jobs += s.on_finish()
    assert [j.text for j in jobs] == ["Paris is in France.", "Rome is in"]
    assert s.unchecked_chars == 38 - 30


class _Upstream:
    def __init__(self, parts: list[bytes]) -> None:
        self.parts = parts

    async def handle(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for part in self.parts:
            await resp.write(part)
        return resp


@pytest.fixture
async def serve() -> AsyncIterator[Any]:
    runners: list[web.AppRunner] = []

    async def start(parts: list[bytes]) -> str:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", _Upstream(parts).handle)
        runner = web.AppRunner(app)
        await runner.setup()
        runners.append(runner)
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        return f"http://127.0.0.1:{runner.addresses[0][1]}/v1"

    try:
        yield start
    finally:
        for r in runners:
            await r.cleanup()


async def test_a_long_answer_reports_the_part_not_checked_live(serve: Any) -> None:
    body = b"".join(chunk("Paris is in France. " * 50) for _ in range(200))  # 200,000 chars
    base = await serve([body, chunk(None, "stop"), b"data: [DONE]\n\n"])
    async with asyncio.timeout(60):
        async with stream_chat(REQUEST, base_url=base, after=[LocalGrounding(facts=FACTS)]) as s:
            events = [e async for e in s]
    claims = [e for e in events if isinstance(e, ClaimEvent)]
    cut = [e for e in events if isinstance(e, ErrorEvent) and e.code == "claims_cut"]
    assert len(claims) == MAX_LIVE_CHARS // 20
    assert len(cut) == 1 and "136,000" in cut[0].message and cut[0].stage == "grounding"
    assert s.answer.claims == claims


def test_an_answer_within_the_limit_is_checked_whole() -> None:
    s = LocalClaimSession([GroundingFact(f) for f in FACTS])
    jobs = s.on_token("Paris is in France. " * 100) + s.on_finish()
    assert len(jobs) == 100 and s.unchecked_chars == 0


def test_splitting_past_the_limit_costs_nothing_on_the_loop() -> None:
    s = LocalClaimSession([GroundingFact(f) for f in FACTS])
    s.on_token("x" * MAX_LIVE_CHARS)
    piece = "Paris is in France. " * 50
    t0 = time.process_time()  # CPU time: what a loaded machine does not stretch
    for _ in range(8000):  # 8 MB past the limit
        assert s.on_token(piece) == []
    # ~5 ms with the cap (a length check per token); some 12 s before it.
    assert time.process_time() - t0 < 2.0


# ------------------------------------------------------------ Azure: a hostile response


def _azure_request() -> Any:
    from streamcite.enrich.azure.request import build_detect_request

    text = "Rome is the capital of Italy 🇮🇹 and of Lazio. " * 150
    return build_detect_request(
        text, ["fact"], domain="Generic", task="QnA", query="q", reasoning=False
    )


def test_azure_response_with_20000_segments_is_parsed_quickly_and_bounded() -> None:
    """2.2 MB of segments pointing near the end of a non-ASCII text: each one walked the
    text in Python (UTF-16) on the event loop: 16.5 s blocked, 20,000 claims and 20,000
    warnings kept."""
    from streamcite.enrich.azure.request import MAX_SEGMENTS, parse_detect_response

    req = _azure_request()
    near_end = len(req.sent) - 10
    seg = {"offset": {"utf16": near_end + 5, "utf8": 10**12, "codePoint": 10**12}}
    seg |= {"text": "zz", "length": {"utf16": 1, "utf8": 1, "codePoint": 1}}
    data = {"ungroundedPercentage": 0.5, "ungroundedDetails": [seg] * 20_000}
    t0 = time.process_time()  # CPU time: what a loaded machine does not stretch
    result = parse_detect_response(data, req)
    assert time.process_time() - t0 < 3.0  # ~0.02 s fixed
    assert len(result.claims) == MAX_SEGMENTS
    assert len(result.warnings) <= MAX_SEGMENTS + 2
    assert any("19,000 ungrounded segment(s) beyond" in w for w in result.warnings)


def test_azure_hostile_segment_text_and_reason_are_clipped() -> None:
    from streamcite.enrich.azure.request import MAX_REASON_CHARS, parse_detect_response

    req = _azure_request()
    data = {
        "ungroundedPercentage": 0.5,
        "ungroundedDetails": [
            {"text": "x" * 5_000_000, "reason": "r" * 5_000_000},
            {"text": req.sent[:4], "reason": "y" * 5_000_000},
        ],
    }
    result = parse_detect_response(data, req)
    unmatched, matched = result.claims
    assert len(unmatched.claim_text) < 7_600 and unmatched.start is None
    assert unmatched.reason is not None and len(unmatched.reason) < MAX_REASON_CHARS + 40
    assert matched.start == 0 and matched.reason is not None
    assert len(matched.reason) < MAX_REASON_CHARS + 40


def _old_utf16_to_char(text: str, unit: int) -> int | None:
    u = 0
    for i, ch in enumerate(text):
        if u == unit:
            return i
        u += 2 if ord(ch) > 0xFFFF else 1
        if u > unit:
            return None
    return len(text) if u == unit else None


def _old_utf8_to_char(text: str, byte: int) -> int | None:
    raw = text.encode("utf-8")
    if byte > len(raw):
        return None
    try:
        return len(raw[:byte].decode("utf-8"))
    except UnicodeDecodeError:
        return None


@given(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=40))
def test_azure_offset_tables_agree_with_the_per_segment_walk(text: str) -> None:
    from streamcite.enrich.azure.request import _Units

    units = _Units(text)
    for unit in range(len(text) * 2 + 2):
        assert units.of_utf16(unit) == _old_utf16_to_char(text, unit)
    for byte in range(len(text) * 4 + 2):
        assert units.of_utf8(byte) == _old_utf8_to_char(text, byte)


# ------------------------------------------------------------ logs: inert on a terminal


async def test_a_refused_requests_path_reaches_the_log_inert() -> None:
    """``serve-local`` logs refused requests at WARNING (on by default) with their path,
    which aiohttp has percent-decoded: ``%1B]0;…%07`` retitled the operator's terminal,
    ``%1B[2J`` cleared it."""
    import io

    import aiohttp
    import structlog

    from streamcite.local.server import BackendConfig, LocalBackend
    from streamcite.logs import configure_logging

    out = io.StringIO()
    configure_logging("WARNING", stream=out)
    try:
        async with (
            LocalBackend(BackendConfig()) as backend,
            aiohttp.ClientSession() as session,
        ):
            url = backend.root_url + "/v1/%1B]0;PWNED%07%1B[2J%E2%80%AE%C2%9B"
            async with session.get(url, headers={"Host": "evil.example"}) as r:
                assert r.status == 403
    finally:
        structlog.reset_defaults()
    line = out.getvalue()
    assert "request_refused" in line and "PWNED" in line
    assert "\x1b" not in line and "\x07" not in line and "\u202e" not in line
    assert "\x9b" not in line
    assert "\\x1b]0;PWNED\\x07" in line  # shown, not obeyed


# ------------------------------------------------------------ the local checker off the loop


async def test_an_azure_check_at_azures_limits_runs_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """7,500 characters of text and 55,000 of sources (Azure's limits, 62,500 in all) were
    checked inline, under the 64,000-character threshold: 100-240 ms with the backend's
    event loop held."""
    import aiohttp

    import streamcite.grounding.checker as checker_module
    from streamcite.local.server import BackendConfig, LocalBackend

    threaded: list[str] = []
    real = asyncio.to_thread

    async def spy(fn: Any, *args: Any, **kw: Any) -> Any:
        threaded.append(getattr(fn, "__name__", "?"))
        return await real(fn, *args, **kw)

    monkeypatch.setattr(checker_module.asyncio, "to_thread", spy)
    words = [f"Word{i}" for i in range(3000)]
    text = " ".join(f"{words[i % 3000]} {words[(i * 7) % 3000]} is here." for i in range(400))
    sources = [" ".join(words[i * 10 : i * 10 + 40]) * 7 for i in range(200)]
    body = {"text": text[:7_500], "groundingSources": [s[:275] for s in sources]}
    body |= {"domain": "Generic", "task": "Summarization"}
    path = "/contentsafety/text:detectGroundedness?api-version=2024-09-15-preview"
    async with (
        LocalBackend(BackendConfig()) as backend,
        aiohttp.ClientSession() as session,
        session.post(
            backend.root_url + path, json=body, headers={"Ocp-Apim-Subscription-Key": "k"}
        ) as r,
    ):
        assert r.status == 200, await r.text()
        assert "ungroundedPercentage" in await r.json()
    assert threaded == ["_run"]


# ------------------------------------------------------------ a check that never returns


class _HangingChecker:
    """A custom checker whose first check never returns (until the test releases it)."""

    name = "hangs"

    def __init__(self, release: Any) -> None:
        self.release = release

    def index(self, facts: Any, *, lang: str | None, sample: str) -> list[str]:
        return list(facts)

    def check(self, index: Any, text: str, *, heading: bool = False) -> Any:
        from streamcite.enrich.claims import ClaimScore

        self.release.wait(60)
        return ClaimScore(True, 1.0, [(0, 1.0)])


class _Live:
    kind = "live"
    timeout = 5.0
    needs: tuple[str, ...] = ()

    def __init__(self, checker: Any, claim_timeout: float) -> None:
        self.checker = checker
        self.claim_timeout = claim_timeout

    def claim_session(self, request: Any) -> LocalClaimSession:
        return LocalClaimSession(
            [GroundingFact(f) for f in FACTS], checker=self.checker, timeout=self.claim_timeout
        )

    async def enrich(self, ctx: Any) -> None:
        return None


async def test_a_thread_left_to_a_stuck_check_is_given_back_when_the_check_returns(
    serve: Any,
) -> None:
    """A worker thread abandoned to a stuck check counts against ``MAX_ABANDONED`` only
    while that check runs: once it returns, the slot is free again. The count never went
    down, so four stuck checks in a process's life (released since or not) ended fresh
    threads for good, and every later stuck check stalled every stream's live claims (the
    order the tests ran in decided whether the test above passed)."""
    import threading

    from streamcite.pipeline import claims as claim_stage
    from tests._wait import wait_until

    before = claim_stage._abandoned
    release = threading.Event()
    text = chunk("Paris is in France. ") + chunk("It is large. ")
    base = await serve([text, chunk(None, "stop"), b"data: [DONE]\n\n"])
    try:
        stuck = _Live(_HangingChecker(release), claim_timeout=0.3)
        async with asyncio.timeout(30):
            async with stream_chat(REQUEST, base_url=base, after=[stuck]) as s:
                events = [e async for e in s]
        assert [e for e in events if isinstance(e, ErrorEvent) and e.code == "claim_timeout"]
        if before < claim_stage.MAX_ABANDONED:
            assert claim_stage._abandoned == before + 1  # its thread was left to it
    finally:
        release.set()
    await wait_until(lambda: claim_stage._abandoned <= before, timeout=10)


async def test_a_check_that_never_returns_does_not_stop_other_streams_live_claims(
    serve: Any,
) -> None:
    """Every live check runs in one worker thread shared by all streams: a custom checker
    stuck in one check made every later check of every stream time out, for as long as
    the process lived."""
    import threading

    release = threading.Event()
    text = chunk("Paris is in France. ") + chunk("It is large. ")
    base = await serve([text, chunk(None, "stop"), b"data: [DONE]\n\n"])
    try:
        stuck = _Live(_HangingChecker(release), claim_timeout=0.3)
        async with asyncio.timeout(30):
            async with stream_chat(REQUEST, base_url=base, after=[stuck]) as s:
                events = [e async for e in s]
        timeouts = [e for e in events if isinstance(e, ErrorEvent) and e.code == "claim_timeout"]
        assert len(timeouts) == 2  # this stream's claims go out unchecked
        # Another stream, with a checker that answers: its claims are checked.
        # (a generous timeout: a stuck worker would hold these checks for ever)
        fine = LocalGrounding(facts=FACTS, claim_timeout=30.0)
        async with asyncio.timeout(30):
            async with stream_chat(REQUEST, base_url=base, after=[fine]) as s:
                events = [e async for e in s]
        claims = [e for e in events if isinstance(e, ClaimEvent)]
        assert [c.supported for c in claims] == [True, False]
        assert not [e for e in events if isinstance(e, ErrorEvent) and e.code == "claim_timeout"]
    finally:
        release.set()
