"""Which call of a choice a tool-call delta continues (:class:`ToolPlacer`). Sans-I/O.

Its own module so that the chat interpreter's state (``core.chat_state``) can name it
without importing ``core.deltas`` (no import circle among the core modules)."""

from __future__ import annotations

from streamcite.core.bounds import MAX_TOOL_CALLS

__all__ = ["ToolPlacer"]


class ToolPlacer:
    """Which call of one choice a tool-call delta belongs to (its ``tool_index``).

    With ``index``, as sent. Without it (Gemini's OpenAI-compatible stream; Moonshot's
    schema allows it): an ``id`` seen before continues that call, a new ``id`` starts a
    call at the next free index. With neither, in a delta of several entries, the
    entry's position in the array is its call (Moonshot sends the fragments of parallel
    calls side by side, in the order the calls were started); a lone entry continues the
    most recent call (argument fragments), unless it brings a ``name`` while that call
    has one already (a second call, not a fragment).
    """

    __slots__ = ("by_id", "last", "limit", "named", "next")

    def __init__(self, limit: int = MAX_TOOL_CALLS) -> None:
        self.limit = limit
        """Calls of the choice (``bounds.max_tool_calls``)."""
        self.by_id: dict[str, int] = {}
        self.named: set[int] = set()
        self.last = -1
        self.next = 0

    def place(self, tidx: int | None, cid: str | None, name: str | None, pos: int = -1) -> int:
        """The call of one entry; ``pos``: its position in a delta of several (else -1).
        -1 for a call beyond :attr:`limit` (not placed, nothing remembered)."""
        if tidx is None:
            if cid:
                tidx = self.by_id.get(cid, self.next)
            elif pos >= 0:
                tidx = pos
            elif self.last < 0 or (name and self.last in self.named):
                tidx = self.next
            else:
                tidx = self.last
        if tidx >= self.limit:
            return -1
        if cid and cid not in self.by_id:
            self.by_id[cid] = tidx
        if name:
            self.named.add(tidx)
        self.last = tidx
        self.next = max(self.next, tidx + 1)
        return tidx
