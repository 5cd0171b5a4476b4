"""What a stream's log says: the partial answer its logged events make.

Used when the relay must end a stream itself from what the log holds (its owner died,
the log failed): the answer is deterministic in the log's content, so readers on
different instances agree.
"""

from __future__ import annotations

from collections.abc import Sequence

from streamcite.core.answer import AnswerBuilder
from streamcite.core.errors import StreamciteError
from streamcite.core.events import DoneEvent, ErrorEvent, event_from_json
from streamcite.core.models import CitedAnswer
from streamcite.logs import get_logger
from streamcite.streamlog import LogEntry

__all__ = ["rebuild_answer"]

_logger = get_logger("streamcite.relay")


def rebuild_answer(entries: Sequence[LogEntry], error: ErrorEvent | None) -> CitedAnswer:
    """The partial answer a stream's logged events make, ending with ``error`` (if any).

    Its ``text`` is the concatenation of the logged token texts. An entry that cannot be
    rebuilt is skipped (it cannot be, short of a bug: the relay wrote it)."""
    builder = AnswerBuilder()
    for entry in entries:
        if entry.payload.startswith(b'{"type":"superseded"'):
            continue  # a citations set a later entry replaced (see relay.producer)
        try:
            event = event_from_json(entry.payload)
        except StreamciteError:
            _logger.warning("relay.rebuild.skipped", seq=entry.seq)
            continue
        if not isinstance(event, DoneEvent):  # done is never logged before the end
            builder.add(event)
    if error is not None:
        builder.add(error)
    return builder.snapshot()
