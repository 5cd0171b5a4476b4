"""What goes wrong in a chat stream's chunk: faults, provider errors, a chunk of another
API, an event too large, an answer cut for its size. Part of
:class:`~streamcite.core.chunks.ChunkInterpreter` (a base class of it, cold paths only). Sans-I/O.
"""

from __future__ import annotations

from typing import Any

import orjson

from streamcite.core.chunk_state import ChunkState
from streamcite.core.errors_payload import error_from_payload
from streamcite.core.events import ErrorEvent, Event, FinishEvent
from streamcite.core.quote import quote

__all__ = ["ChunkFaults"]

_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError


class ChunkFaults(ChunkState):
    """The chat interpreter's error reporting (see :class:`ChunkInterpreter`'s attributes)."""

    __slots__ = ()

    @property
    def finished(self) -> bool:
        """Choice 0 has its ``finish_reason``."""
        return 0 in self._finished

    def _overflow(self, out: list[Event]) -> None:
        """The decoder dropped an event for its size (its :data:`OVERFLOW` marker)."""
        if not self.done:
            msg = "an SSE event exceeded max_event_size and was dropped"
            self._fault(out, "event_too_large", msg, "sse")
            self.cut = True  # something of the answer may be lost: complete: false

    def _provider_error(
        self, err: Any, finishes: list[FinishEvent] | None, out: list[Event]
    ) -> None:
        """An error object in a chunk cut the answer, whatever follows it ([DONE], a
        finish): enrichers skip it unless ``enrich_incomplete=True``. Not after choice
        0's finish in an earlier chunk: then nothing of the answer was lost."""
        ev = error_from_payload(err, "chunk")
        self._builder.error(ev)
        out.append(ev)
        if not self.finished or any(f.index == 0 for f in finishes or ()):
            self.cut = True
            self._builder.complete = False

    def cut_for_size(self, ev: ErrorEvent, out: list[Event]) -> None:
        """The builder's ``answer_too_large`` (already recorded): the answer ends here,
        incomplete; nothing more of the stream is interpreted (as after ``[DONE]``)."""
        out.append(ev)
        self.cut = True
        self.done = True
        self._builder.complete = False
        self._usage_pending = None

    def _sse_error(self, payload: bytes, out: list[Event]) -> None:
        try:
            obj = _loads(payload)
        except _JSONDecodeError:
            obj = payload.decode("utf-8", "replace")
        if isinstance(obj, dict) and "error" in obj:
            obj = obj["error"]
        ev = error_from_payload(obj, "sse")
        self._builder.error(ev)
        out.append(ev)

    def _foreign(self, obj: dict[str, Any], out: list[Event]) -> None:
        """A chunk in another API's shape (an Anthropic, Responses or Cohere event, a
        Gemini response) read as chat: nothing of it is the answer, and an empty answer
        must not pass for a whole one. Reported once, the answer marked cut."""
        self.cut = True
        if self.foreign_seen:
            return
        self.foreign_seen = True
        kind = obj.get("type")
        what = f"an event of type {quote(kind, 60)}" if type(kind) is str else "a Gemini response"
        msg = (
            f"{what} has no choices: this is not a Chat Completions stream; read it with "
            "its API (stream_chat(api=...)) or dialect='auto'"
        )
        self._fault(out, "wrong_dialect", msg)

    def _fault(
        self, out: list[Event], code: str, message: str, stage: str = "chunk"
    ) -> list[Event]:
        ev = ErrorEvent(code=code, message=message, retryable=False, stage=stage)
        self._builder.error(ev)
        out.append(ev)
        return out
