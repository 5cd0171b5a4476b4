"""The local checker's lexicon loads before the first live claim is checked: its first
load in a process (0.2-3 s) must not make that claim time out (2 s). The session's
``prepare()`` runs in the claim worker thread as the stream starts; the checks wait for
it before their own timeout starts; tokens never wait."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

import streamcite.pipeline.claims as claims_mod
from streamcite.core.events import ClaimEvent, ErrorEvent
from streamcite.grounding import lexicon
from streamcite.grounding.checker import LocalGrounding
from streamcite.pipeline import stream_chat
from tests.test_live_claims import FACTS, REQUEST, SENTENCE_1, gated

__all__ = ["gated"]  # the loopback upstream fixture, shared


def types_so_far(seen: list[Any]) -> int:
    return sum(1 for e in seen if e.type == "token")


class _Clock:
    """``time`` for the claim stage: the real monotonic clock plus a jump the test makes
    (a slow load simulated without sleeping)."""

    offset = 0.0

    @classmethod
    def monotonic(cls) -> float:
        return time.monotonic() + cls.offset


async def test_first_claim_with_a_fresh_lexicon_is_checked_not_timed_out(
    gated: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    up, base = gated
    loading, release = threading.Event(), threading.Event()
    loads: list[str] = []

    class SlowIndex:
        """A lexicon whose load lasts until the test releases it."""

        def __init__(self, lang: str, db: object) -> None:
            loads.append(threading.current_thread().name)
            loading.set()
            release.wait(10)
            self.memo_rel: dict[str, Any] = {}

        def synonyms(self, key: str) -> frozenset[str]:
            return frozenset()

        def antonyms(self, key: str) -> frozenset[str]:
            return frozenset()

    monkeypatch.setattr(lexicon, "_INDEXES", {})  # a fresh process: nothing loaded
    monkeypatch.setattr(lexicon, "_Index", SlowIndex)
    monkeypatch.setattr(lexicon, "available", lambda: True)
    monkeypatch.setattr(_Clock, "offset", 0.0)
    monkeypatch.setattr(claims_mod, "time", _Clock)

    async def load_takes_long() -> None:
        # Once the lexicon is loading, 20 s pass (10x the claim timeout), then the
        # upstream sends the rest of the answer.
        await asyncio.to_thread(loading.wait, 10)
        _Clock.offset += 20.0
        up.gate.set()

    seen: list[Any] = []
    # 2 s: room for a check on a loaded machine once the load is over
    grounding = LocalGrounding(facts=FACTS, claim_timeout=2.0)
    try:
        async with asyncio.timeout(20):
            task = asyncio.create_task(load_takes_long())
            async with stream_chat(REQUEST, base_url=base, after=[grounding]) as s:
                async for ev in s:
                    seen.append(ev)
                    if ev.type == "token" and types_so_far(seen) == len(SENTENCE_1) + 5:
                        release.set()  # the load ends after the last token
            await task
    finally:
        release.set()
    types = [e.type for e in seen]
    assert types.count("token") == len(SENTENCE_1) + 5  # every token, none held back
    timeouts = [e for e in seen if isinstance(e, ErrorEvent) and e.code == "claim_timeout"]
    assert timeouts == []
    # Both checks waited for the load (queued while it ran), not on the clock.
    assert types.index("claim") > types.index("token") + len(SENTENCE_1) + 4
    claims = [e for e in seen if isinstance(e, ClaimEvent)]
    assert [(c.text, c.supported) for c in claims] == [
        ("Titanic was directed by James Cameron.", True),
        ("It stars Brad Pitt.", False),
    ]
    assert loads and all(n.startswith("streamcite-claims") for n in loads)  # off the loop


def test_a_session_made_outside_a_loop_needs_no_preparation() -> None:
    stage = claims_mod.ClaimStage([], builder=None, elapsed_ms=lambda: 0.0)  # type: ignore[arg-type]
    assert stage._preparing is None
