"""An answer's citation refs, stored compactly. Sans-I/O.

An answer with a footnote every few tokens has tens of thousands of refs. Kept as
objects (one ``CitationRefEvent`` in the builder, one ``CitationRef`` in each
snapshot) they cost about 180 bytes each, and, being GC-tracked and long-lived,
they made every garbage collection walk them: on a stream with a marker every 3
tokens, that was most of the parser's time beyond the floor's. Here a ref is one
entry in each of two arrays (its number and its offset): 10 bytes, nothing the
garbage collector sees.

:class:`RefStore` is the builder's append-only store; :class:`CitationRefs` an
immutable view of its first ``n`` refs (a snapshot shares the arrays, it copies
nothing) that reads as a ``Sequence[CitationRef]``, each item made on access.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from struct import pack as _pack
from typing import Any, overload

from streamcite.core._fields import expect_fields
from streamcite.core.models import CitationRef, LazyList

__all__ = ["MAX_PENDING", "CitationRefs", "RefStore"]

_new = object.__new__
_MAX_NUMBER = 0xFFFF  # numbers are stored as unsigned 16-bit ("H"); markers go to 9999
_MIN_OFFSET, _MAX_OFFSET = -(2**63), 2**63 - 1  # offsets as signed 64-bit ("q")
MAX_PENDING = 1024
"""Refs kept in the pending lists (40 bytes each) before they move into the arrays."""
_Wide = tuple[Any, Any, Any, Any]
"""A ref that does not fit the arrays, as ``(index, number, document_index, offset)``."""


expect_fields(CitationRef, ["index", "number", "document_index", "offset"], "refs.py (_ref)")


def _ref(index: Any, number: Any, document_index: Any, offset: Any) -> CitationRef:
    """A CitationRef built field by field (no __init__ call; the fields are checked above)."""
    r = _new(CitationRef)
    r.index, r.number, r.document_index, r.offset = index, number, document_index, offset
    return r


class RefStore:
    """Choice refs in arrival order: ``numbers[k]``/``offsets[k]`` for the usual ref
    (choice 0, ``document_index == number - 1``, numbers 1–65535, 64-bit offset);
    any other (another choice, odd values folded from a decoded event) has number 0
    in the array and its fields in ``wide[k]``.

    New refs go to two plain lists first (a list append costs a fifth of an array's,
    whose every item goes through ``PyArg_Parse``) and are moved into the arrays in
    one ``struct.pack`` by :meth:`flush`: at each compaction of the text, at
    :meth:`view`, and beyond :data:`MAX_PENDING` refs."""

    __slots__ = ("numbers", "offsets", "pending_numbers", "pending_offsets", "wide")

    def __init__(self) -> None:
        self.numbers = array("H")
        """Footnote numbers (0: see ``wide``)."""
        self.offsets = array("q")
        """Character offsets of each marker's ``[`` (one per number)."""
        self.pending_numbers: list[int] = []
        """Refs not in the arrays yet (the hot loop appends here, values in range)."""
        self.pending_offsets: list[int] = []
        self.wide: dict[int, _Wide] = {}

    def __len__(self) -> int:
        return len(self.numbers) + len(self.pending_numbers)

    def add(self, index: Any, number: Any, document_index: Any, offset: Any) -> None:
        """Keep one ref (any values: what does not fit the arrays is kept whole)."""
        if (
            index == 0
            and type(index) is int
            and type(number) is int
            and type(offset) is int
            and 0 < number <= _MAX_NUMBER
            and document_index == number - 1
            and type(document_index) is int
            and _MIN_OFFSET <= offset <= _MAX_OFFSET
        ):
            self.pending_numbers.append(number)
            self.pending_offsets.append(offset)
        else:
            self.wide[len(self)] = (index, number, document_index, offset)
            self.pending_numbers.append(0)
            self.pending_offsets.append(0)
        if len(self.pending_numbers) > MAX_PENDING:
            self.flush()

    def add_event(self, ev: Any) -> None:
        """Keep a ``CitationRefEvent``'s ref (events folded through ``AnswerBuilder.add``)."""
        self.add(ev.index, ev.number, ev.document_index, ev.offset)

    def flush(self) -> None:
        """Move the pending refs into the arrays (the lists are emptied in place: the
        hot loop may hold them)."""
        nums = self.pending_numbers
        if nums:
            n = len(nums)
            self.numbers.frombytes(_pack(f"{n}H", *nums))
            self.offsets.frombytes(_pack(f"{n}q", *self.pending_offsets))
            nums.clear()
            self.pending_offsets.clear()

    def view(self) -> CitationRefs:
        """The refs kept so far, as an immutable sequence sharing these arrays."""
        self.flush()
        return CitationRefs(self, len(self.numbers))


class CitationRefs(Sequence[CitationRef], LazyList):
    """The first ``n`` refs of a :class:`RefStore`, read as ``CitationRef`` objects.

    Equal to a list of the same ``CitationRef`` values (and to another view); its
    items are new objects on every access. The store only ever appends, so a view
    never changes."""

    __slots__ = ("_n", "_store")

    def __init__(self, store: RefStore, n: int) -> None:
        self._store = store
        self._n = n

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> CitationRef: ...

    @overload
    def __getitem__(self, i: slice) -> list[CitationRef]: ...

    def __getitem__(self, i: int | slice) -> CitationRef | list[CitationRef]:
        if isinstance(i, slice):
            return [self._item(k) for k in range(*i.indices(self._n))]
        k = i.__index__()
        if k < 0:
            k += self._n
        if not 0 <= k < self._n:
            raise IndexError("citation ref index out of range")
        return self._item(k)

    def _item(self, k: int) -> CitationRef:
        s = self._store
        n = s.numbers[k]
        return _ref(0, n, n - 1, s.offsets[k]) if n else _ref(*s.wide[k])

    def __iter__(self) -> Iterator[CitationRef]:
        s = self._store
        n = self._n
        if not s.wide:
            new = _new
            cls = CitationRef
            for number, offset in zip(s.numbers[:n], s.offsets[:n], strict=True):
                r = new(cls)
                r.index, r.number, r.document_index, r.offset = 0, number, number - 1, offset
                yield r
            return
        for k in range(n):
            yield self._item(k)

    def tolist(self) -> list[CitationRef]:
        """The refs as a list of new ``CitationRef`` objects."""
        return list(self)

    def first_seen(self, start: int = 0) -> Iterator[tuple[int, int]]:
        """The distinct ``(number, document_index)`` of choice 0's refs from ``start``,
        in first-seen order, without making objects (the snapshot's dangling pass)."""
        s = self._store
        if not s.wide:
            for number in dict.fromkeys(s.numbers[start : self._n]):  # distinct, in C
                yield number, number - 1
            return
        yield from dict.fromkeys(self._pairs0(start))

    def _pairs0(self, start: int) -> Iterator[tuple[int, int]]:
        s = self._store
        for k in range(start, self._n):
            number = s.numbers[k]
            if number:
                yield number, number - 1
            else:
                index, number, document_index, _ = s.wide[k]
                if index == 0:
                    yield number, document_index

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CitationRefs):
            return self._n == other._n and self.tolist() == other.tolist()
        if isinstance(other, list):
            return len(other) == self._n and self.tolist() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # as a list: equal to lists, unhashable

    def __repr__(self) -> str:
        return repr(self.tolist())

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (self.tolist(),))
