"""A bounded store with expiry: completion id → what the Wikit endpoints need to answer.

Wikit serves the quoted sources of a query for some time after it ran; the local
backend keeps each answer for ``ttl`` seconds, and at most ``max_size`` answers and
``max_bytes`` measured bytes (:func:`answer_nbytes`; the oldest go first), so neither a
long benchmark nor big questions can grow it without bound.
"""

from __future__ import annotations

import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from streamcite.local.answerer import Answer

__all__ = ["AnswerStore", "StoredAnswer", "answer_nbytes"]

_ENTRY_BYTES = 300
"""A store entry besides its answer: the ``StoredAnswer``, its tuple and dict slot."""


def _field_values(obj: Any) -> list[Any]:
    return [getattr(obj, f.name) for f in fields(obj)]


def answer_nbytes(answer: Answer) -> int:
    """What an answer holds, measured: every string at its in-memory size, plus the
    objects around them (a cold path: it runs once per new question). The corpus chunks
    and documents it cites are shared, not counted."""
    strings = [answer.question, answer.text]
    for s in answer.sentences:
        strings += [x for x in _field_values(s) if isinstance(x, str)]
    for p in answer.passages:
        strings += [x for x in _field_values(p) if isinstance(x, str)]
    objects = 1 + len(answer.sentences) + len(answer.passages)
    return sum(map(sys.getsizeof, strings)) + 200 * objects


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
    """Least-recently-stored first out, entries expire ``ttl`` seconds after being stored;
    at most ``max_size`` entries and ``max_bytes`` measured bytes (an answer bigger than
    a quarter of ``max_bytes`` is not kept: its sources endpoints answer 404).

    Not thread-safe: it lives on the backend's event loop.
    """

    __slots__ = ("_clock", "_items", "max_bytes", "max_size", "nbytes", "ttl")

    def __init__(
        self,
        max_size: int = 1000,
        ttl: float = 600.0,
        *,
        max_bytes: int = 16 * 1024 * 1024,
        clock: Callable[[], float] = time.monotonic,
    ):
        if max_size < 1:
            raise ValueError("max_size must be at least 1")
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        if max_bytes < 1:
            raise ValueError("max_bytes must be at least 1")
        self.max_size = max_size
        self.max_bytes = max_bytes
        self.ttl = ttl
        self._clock = clock
        self.nbytes = 0
        """Measured bytes of the entries held now."""
        self._items: OrderedDict[str, tuple[float, StoredAnswer, int]] = OrderedDict()

    def put(self, item: StoredAnswer) -> None:
        """Store ``item`` under its id (replacing an older entry with the same id)."""
        self._expire()
        self._forget(item.id)
        size = answer_nbytes(item.answer) + _ENTRY_BYTES
        if size > self.max_bytes // 4:
            return  # one huge answer must not flush every other one
        self._items[item.id] = (self._clock() + self.ttl, item, size)
        self.nbytes += size
        while len(self._items) > self.max_size or self.nbytes > self.max_bytes:
            self._pop_oldest()

    def get(self, item_id: str) -> StoredAnswer | None:
        """The stored answer, or None when unknown or expired."""
        entry = self._items.get(item_id)
        if entry is None:
            return None
        if entry[0] <= self._clock():
            self._forget(item_id)
            return None
        return entry[1]

    def _forget(self, item_id: str) -> None:
        entry = self._items.pop(item_id, None)
        if entry is not None:
            self.nbytes -= entry[2]

    def _pop_oldest(self) -> None:
        _, entry = self._items.popitem(last=False)
        self.nbytes -= entry[2]

    def _expire(self) -> None:
        now = self._clock()
        # Entries are in storing order, so expiry times are increasing.
        while self._items:
            if next(iter(self._items.values()))[0] > now:
                break
            self._pop_oldest()

    def __len__(self) -> int:
        self._expire()
        return len(self._items)

    def __contains__(self, item_id: object) -> bool:
        return isinstance(item_id, str) and self.get(item_id) is not None
