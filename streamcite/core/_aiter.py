"""The async generator behind :func:`streamcite.core.api.aiter_events`. Sans-I/O.

A module of its own, never compiled: mypyc (the optional compiled build of the hot
core, which includes :mod:`streamcite.core.api`) does not compile async generators."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import Protocol

from streamcite.core.events import DoneEvent, Event

__all__ = ["aiter_parsed"]


class _Parser(Protocol):
    def feed(self, data: bytes) -> list[Event]: ...
    def close(self) -> list[Event]: ...
    def done_event(self) -> DoneEvent: ...


async def aiter_parsed(
    make_parser: Callable[[], _Parser], chunks: AsyncIterable[bytes]
) -> AsyncIterator[Event]:
    """The events of ``chunks`` through a parser made at the first iteration (as a
    generator's body runs then), ``done`` last."""
    parser = make_parser()
    for_events = parser.feed
    async for chunk in chunks:
        for ev in for_events(chunk):
            yield ev
    for ev in parser.close():
        yield ev
    yield parser.done_event()
