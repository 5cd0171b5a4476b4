"""A whole-answer check never reads the lexicon's data on the event loop: until every
language is loaded (0.2-3 s each on a first read), even a small check runs in a worker
thread; once it is, small checks stay inline (no thread hop)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from streamcite.grounding import checker
from streamcite.grounding.checker import LocalGrounding


@pytest.mark.parametrize(("ready", "off_loop"), [(False, True), (True, False)])
async def test_a_small_check_leaves_the_loop_until_the_lexicon_is_read(
    monkeypatch: pytest.MonkeyPatch, ready: bool, off_loop: bool
) -> None:
    threads: list[int] = []
    run = LocalGrounding._run

    def spy(self: LocalGrounding, *args: Any) -> Any:
        threads.append(threading.get_ident())
        return run(self, *args)

    monkeypatch.setattr(LocalGrounding, "_run", spy)
    monkeypatch.setattr(checker.lexicon, "ready", lambda: ready)
    result = await LocalGrounding().check(
        "Paris is the capital of France.", ["Paris is the capital of France."]
    )
    assert result.support_score is not None
    assert (threads[0] != threading.get_ident()) is off_loop
