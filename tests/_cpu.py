"""Work measured as CPU time, which a loaded machine does not stretch.

A wall-clock bound in a test ("the loop was never blocked for more than X s", "this
took under Y s") measures the machine's load as much as the code: on a busy 2-core CI
runner every figure grows several-fold. CPU time counts only the work done: ``time.
process_time()`` for the process (every thread), and :func:`loop_held` for the event
loop thread's own work between two of its turns (time the OS gave to other processes
is not in it). Bounds on either can sit far from both the fixed and the broken value.
Only for work that computes: a loop blocked *waiting* (``time.sleep``, blocking I/O)
spends no CPU and does not show in :func:`loop_held`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

__all__ = ["LoopHeld", "loop_held"]


@dataclass
class LoopHeld:
    """The most CPU time the loop's thread spent between two turns of the sampler."""

    worst: float = 0.0


@asynccontextmanager
async def loop_held(interval: float = 0.005) -> AsyncIterator[LoopHeld]:
    """Sample the event loop while the block runs: ``worst`` is the longest stretch of
    the loop thread's own CPU time (``time.thread_time``) between two turns of a task
    sleeping ``interval`` seconds; a callback that computes on the loop shows there,
    the machine's load does not.

    >>> async def main() -> float:
    ...     async with loop_held() as held:
    ...         await asyncio.sleep(0.02)
    ...     return held.worst
    >>> asyncio.run(main()) < 0.5
    True
    """
    held = LoopHeld()
    stop = asyncio.Event()

    async def sample() -> None:
        while not stop.is_set():
            t = time.thread_time()  # the loop's thread: the sampler runs on it
            await asyncio.sleep(interval)  # sampling, not synchronisation
            held.worst = max(held.worst, time.thread_time() - t)

    task = asyncio.create_task(sample())
    try:
        yield held
    finally:
        stop.set()
        await task
