"""The enricher interface: work that runs after the finish chunk, concurrently.

An enricher is any object with a ``kind`` (``"sources"``, ``"grounding"`` or your
own), a ``timeout`` in seconds, the ``needs`` it waits for (kinds of other
enrichers whose event it uses, e.g. a grounding check built on Wikit sources needs
``"sources"``) and an async ``enrich(ctx)`` that returns one event (or ``None``).

The pipeline starts every enricher as soon as the finish chunk of choice 0 arrives,
runs them concurrently, each under its own timeout, and turns an exception into an
``error`` event with ``stage = kind`` — the answer and the other results are kept.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from streamcite.core.events import Event
from streamcite.core.models import CitedAnswer

__all__ = ["EnrichContext", "Enricher"]


@dataclass(slots=True)
class EnrichContext:
    """What an enricher may read: the answer at the finish chunk and the request."""

    answer: CitedAnswer
    """Snapshot of the answer when the finish chunk arrived (text, citations, refs, id)."""
    request: Mapping[str, Any] = field(default_factory=dict)
    """The chat request that was sent."""
    response_headers: Mapping[str, str] = field(default_factory=dict)
    """Headers of the upstream streaming response (case-insensitive lookups not guaranteed)."""
    chunk_fields: Mapping[str, Any] = field(default_factory=dict)
    """Top-level fields of the stream's first and finish chunks (``choices`` excepted)."""
    wait_for: Callable[[str], Awaitable[Event | None]] | None = None
    """``await ctx.wait_for("sources")``: the event of another enricher (None if it failed)."""

    async def result_of(self, kind: str) -> Event | None:
        """The event produced by the enricher of ``kind`` (waits for it)."""
        if self.wait_for is None:
            return None
        return await self.wait_for(kind)

    def header(self, name: str) -> str | None:
        low = name.lower()
        for k, val in self.response_headers.items():
            if k.lower() == low:
                return val
        return None


@runtime_checkable
class Enricher(Protocol):
    kind: str
    timeout: float
    needs: tuple[str, ...]

    async def enrich(self, ctx: EnrichContext) -> Event | None: ...
