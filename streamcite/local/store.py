"""A bounded store with expiry: completion id → what the Wikit endpoints need to answer.

Wikit serves the quoted sources of a query for some time after it ran; the local
backend keeps each answer for ``ttl`` seconds, and at most ``max_size`` answers (the
oldest go first), so a long benchmark cannot grow it without bound.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from streamcite.local.answerer import Answer

__all__ = ["AnswerStore", "StoredAnswer"]


@dataclass(slots=True)
class StoredAnswer:
    """An answer the backend gave, kept for its sources endpoints."""

    id: str
    """The completion id (``chatcmpl-...``), which is also the Wikit query id."""
    created: int
    """Unix time of the completion."""
    answer: Answer
    sources_404_until: int | None = None
    """From the completion request's faults: 404 for the first N sources calls."""
    sources_calls: int = 0
    """How many times the sources endpoints were called for this id."""


class AnswerStore:
    """Least-recently-stored first out, entries expire ``ttl`` seconds after being stored.

    Not thread-safe: it lives on the backend's event loop.
    """

    __slots__ = ("_clock", "_items", "max_size", "ttl")

    def __init__(
        self,
        max_size: int = 1000,
        ttl: float = 600.0,
        *,
        clock: Callable[[], float] = time.monotonic,
    ):
        if max_size < 1:
            raise ValueError("max_size must be at least 1")
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        self.max_size = max_size
        self.ttl = ttl
        self._clock = clock
        self._items: OrderedDict[str, tuple[float, StoredAnswer]] = OrderedDict()

    def put(self, item: StoredAnswer) -> None:
        """Store ``item`` under its id (replacing an older entry with the same id)."""
        self._expire()
        self._items.pop(item.id, None)
        self._items[item.id] = (self._clock() + self.ttl, item)
        while len(self._items) > self.max_size:
            self._items.popitem(last=False)

    def get(self, item_id: str) -> StoredAnswer | None:
        """The stored answer, or None when unknown or expired."""
        entry = self._items.get(item_id)
        if entry is None:
            return None
        if entry[0] <= self._clock():
            del self._items[item_id]
            return None
        return entry[1]

    def _expire(self) -> None:
        now = self._clock()
        # Entries are in storing order, so expiry times are increasing.
        while self._items:
            expires, _ = next(iter(self._items.values()))
            if expires > now:
                break
            self._items.popitem(last=False)

    def __len__(self) -> int:
        self._expire()
        return len(self._items)

    def __contains__(self, item_id: object) -> bool:
        return isinstance(item_id, str) and self.get(item_id) is not None
