"""The async pipeline: HTTP → sans-I/O core → events → enrichers → ``done``.

``stream_chat(...)`` is an async context manager and an async iterator of events.
It owns every wait (connect, first token, idle, total, each enricher) and every
resource (response, client, enricher tasks): leaving the ``async with`` early or
cancelling the task closes them all.

Modules, one stage each: ``timeouts`` (the bounds and the run's budget), ``opening``
(request, status, retries), ``reading`` (bytes → events), ``enrichment`` (the
after-stream enrichers), ``recorder`` (timings, logs, scrubbed errors) and
``stream`` (:class:`ChatStream`, which composes them).
"""

from streamcite.pipeline.stream import ChatStream, stream_chat
from streamcite.pipeline.timeouts import Timeouts

__all__ = ["ChatStream", "Timeouts", "stream_chat"]
