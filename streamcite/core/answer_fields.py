"""How :class:`~streamcite.core.answer.AnswerBuilder` keeps what a stream may never use,
and the timings copy of its snapshot. Sans-I/O.

A short real answer (a few dozen events) paid about as much for its builder and its
``done`` snapshot as for its text: every list, dict and the citation-ref store made for
every stream, and ``Timings.__init__`` (seven keyword defaults) at each snapshot. The
builder now makes each of those at its first use (:class:`LazyField`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

from streamcite.core._fields import expect_fields
from streamcite.core.models import Timings

__all__ = ["LazyField", "timings_copy"]

_new = object.__new__
T = TypeVar("T")


class LazyField(Generic[T]):
    """A public attribute of a slotted class kept in the slot ``_<name>`` (None until
    used), made by ``factory`` at its first read; assignable. The owner's own methods
    read the slot (None: empty) and make nothing."""

    def __init__(self, factory: Callable[[], T], doc: str) -> None:
        self._factory = factory
        self.__doc__ = doc
        self._slot: Any = None

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = owner.__dict__["_" + name]  # the slot's member descriptor

    @overload
    def __get__(self, obj: None, owner: Any = None) -> LazyField[T]: ...
    @overload
    def __get__(self, obj: object, owner: Any = None) -> T: ...
    def __get__(self, obj: object | None, owner: Any = None) -> T | LazyField[T]:
        if obj is None:
            return self
        value: T | None = self._slot.__get__(obj)
        if value is None:
            value = self._factory()
            self._slot.__set__(obj, value)
        return value

    def __set__(self, obj: object, value: T) -> None:
        self._slot.__set__(obj, value)


def timings_copy(t: Timings | None) -> Timings:
    """A copy of ``t`` (None: new timings), made without ``__init__`` (its seven keyword
    defaults cost as much as a fifth of a snapshot)."""
    c = _new(Timings)
    if t is None:
        c.ttft_ms = c.stream_ms = c.citations_ms = c.sources_ms = None
        c.grounding_ms = c.total_ms = c.first_claim_ms = None
    else:
        c.ttft_ms, c.stream_ms, c.citations_ms = t.ttft_ms, t.stream_ms, t.citations_ms
        c.sources_ms, c.grounding_ms, c.total_ms = t.sources_ms, t.grounding_ms, t.total_ms
        c.first_claim_ms = t.first_claim_ms
    return c


expect_fields(
    Timings,
    [
        "ttft_ms",
        "stream_ms",
        "citations_ms",
        "sources_ms",
        "grounding_ms",
        "total_ms",
        "first_claim_ms",
    ],
    "answer_fields.py (timings_copy)",
)
