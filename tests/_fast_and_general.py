"""The two ways a dialect's interpreter reads the same SSE events, for the tests of its
fast paths (hot loops, byte templates): the general way, one event at a time, parsed and
dispatched, is the reference the fast way must match event for event; and a spy on the
dialect module's ``loads`` that counts what is still parsed (a fast path silently off
fails its count)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import orjson
import pytest

from streamcite.core.answer import AnswerBuilder
from streamcite.core.dialects import make_interpreter
from streamcite.core.dialects.base import StreamState
from streamcite.core.events import Event
from streamcite.core.sse import RawEvent


def read_general(dialect: Any, raw: list[RawEvent]) -> tuple[list[Event], Any]:
    """Every event the general way (``StreamState.feed_raw``, no hot loop), one at a time:
    the events and the answer."""
    it = make_interpreter(dialect, AnswerBuilder(), "keep")
    assert isinstance(it, StreamState)
    out: list[Event] = []
    for item in raw:
        StreamState.feed_raw(it, [item], out)
    out += it.close()
    return out, it.builder.snapshot()


def read_fast(dialect: Any, raw: list[RawEvent], reads: int = 3) -> tuple[list[Event], Any]:
    """The events in about ``reads`` reads through the dialect's own ``feed_raw`` (its
    fast paths on): the events and the answer."""
    it = make_interpreter(dialect, AnswerBuilder(), "keep")
    out: list[Event] = []
    step = max(1, len(raw) // reads)
    for i in range(0, len(raw), step):
        it.feed_raw(raw[i : i + step], out)
    out += it.close()
    return out, it.builder.snapshot()


def count_loads(monkeypatch: pytest.MonkeyPatch, *modules: ModuleType) -> list[bytes]:
    """What the ``modules`` parse with ``loads`` from now on (the list grows as they do)."""
    calls: list[bytes] = []

    def counting(data: bytes) -> Any:
        calls.append(data)
        return orjson.loads(data)

    for module in modules:
        monkeypatch.setattr(module, "loads", counting)
    return calls
