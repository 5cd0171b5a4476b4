"""What :class:`~streamcite.core.api.ChatStreamParser` drives in every dialect (the chat
``ChunkInterpreter`` and each :class:`~streamcite.core.dialects.base.StreamState` subclass
implement it), and the shape of a dialect's event handler. Sans-I/O."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from streamcite.core.answer import AnswerBuilder
from streamcite.core.events import ErrorEvent, Event
from streamcite.core.sse import RawEvent

__all__ = ["DialectInterpreter", "Handler", "Method"]


class DialectInterpreter(Protocol):
    """What :class:`~streamcite.core.api.ChatStreamParser` drives, in every dialect."""

    @property
    def builder(self) -> AnswerBuilder:
        """The answer the interpreter folds its events into."""
        ...

    @property
    def finished(self) -> bool:
        """Choice 0 has finished (its finish event was emitted)."""
        ...

    @property
    def done(self) -> bool:
        """The stream's own end marker (or a whole body) was seen: nothing after counts."""
        ...

    def feed_raw(self, raw: list[RawEvent], out: list[Event]) -> None:
        """Interpret the SSE decoder's raw events of one read, appending to ``out``."""
        ...

    def feed_completion(self, obj: Any, out: list[Event] | None = None) -> list[Event]:
        """Interpret the API's non-streaming JSON body (already parsed)."""
        ...

    def close(self, *, truncated_block: bool = False) -> list[Event]:
        """End of input: held markers released, a cut stream reported."""
        ...

    def cut_for_size(self, ev: ErrorEvent, out: list[Event]) -> None:
        """The builder's ``answer_too_large`` (recorded already): emit it, read no more."""
        ...


Handler = Callable[[dict[str, Any], list[Event]], None]

Method = Callable[[Any, dict[str, Any], list[Event]], None]
"""A handler as a function of the dialect's class (a table of these is built once per
class, not per stream: the handler is called with the interpreter first)."""
"""A dialect's handler of one event type: the parsed data object and the output list."""
