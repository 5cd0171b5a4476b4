"""The read deadline of a stream: one timer per stream, not one per read.

``asyncio.timeout`` around every read schedules and cancels a timer per read — a few
microseconds per token, the largest fixed cost of reading a fast stream. Here a read arms
the deadline (a float), and one timer, armed for the earliest deadline, wakes up: if a
later deadline was armed since (reads came in), it sleeps again until that one; if the read
in progress is past its deadline, the reading task is cancelled and the read raises
``CancelledError``, which :meth:`ReadDeadline.expired` tells apart from a cancel that came
from elsewhere (as ``asyncio.timeout`` does).
"""

from __future__ import annotations

import asyncio

__all__ = ["ReadDeadline"]

_EARLY = 0.001
"""A timer that fires this close to the deadline counts it as reached (loops fire timers
up to their clock resolution early)."""


class ReadDeadline:
    """``arm(seconds)`` before each read, ``disarm()`` after it; ``close()`` at the end."""

    __slots__ = ("_at", "_base", "_fired", "_handle", "_loop", "_task", "_when")

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task: asyncio.Task[object] | None = None
        self._at: float | None = None
        """The deadline of the read in progress (loop time); None: no read in progress."""
        self._handle: asyncio.TimerHandle | None = None
        self._when = 0.0
        """When the timer fires."""
        self._fired = False
        self._base = 0

    def arm(self, seconds: float | None) -> None:
        """A read starts; it may last ``seconds`` (None: no bound)."""
        if seconds is not None:
            # With the loop given, no get_running_loop (which asks the kernel for the pid).
            self._task = asyncio.current_task(self._loop)
        self.extend(seconds)

    def extend(self, seconds: float | None) -> None:
        """The read in progress (armed by the task reading) may now last ``seconds`` from
        now: called from a connection's callback, where there is no task to note."""
        if seconds is None:
            self._at = None
            return
        loop = self._loop
        at = loop.time() + seconds
        self._at = at
        handle = self._handle
        if handle is None or self._when > at + _EARLY:  # (a millisecond late is in time)
            if handle is not None:
                handle.cancel()
            self._when = at
            self._handle = loop.call_at(at, self._check)

    def disarm(self) -> None:
        """The read ended (the timer stays, for the next read's deadline)."""
        self._at = None

    def expired(self) -> bool:
        """After a read raised ``CancelledError``: True when the deadline did it (the
        cancel is then withdrawn: the caller reports a timeout instead)."""
        if not self._fired:
            return False
        self._fired = False
        task = self._task
        return task is not None and task.uncancel() <= self._base

    def close(self) -> None:
        self._at = None
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _check(self) -> None:
        self._handle = None
        at = self._at
        if at is None:
            return  # no read in progress: the next one arms a timer again
        loop = self._loop
        if loop.time() < at - _EARLY:
            self._when = at
            self._handle = loop.call_at(at, self._check)
            return
        task = self._task
        if task is not None and not task.done():
            self._fired = True
            self._base = task.cancelling()  # cancels from elsewhere, already pending
            task.cancel()
