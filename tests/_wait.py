"""One way for a test to wait for a condition: poll it, with a deadline.

A fixed ``sleep`` is not a synchronisation (too short on a loaded machine, wasted
time on a quiet one). ``wait_until`` returns as soon as the condition holds and fails
with a clear message when it does not hold within ``timeout`` seconds.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable

__all__ = ["wait_until"]


async def wait_until(
    predicate: Callable[[], bool | Awaitable[bool]],
    timeout: float = 10.0,  # noqa: ASYNC109 -- the deadline is what this helper is for
    interval: float = 0.01,
    what: str = "condition",
) -> None:
    """Return once ``predicate()`` (sync or async) is true; ``AssertionError`` after ``timeout``.

    >>> asyncio.run(wait_until(lambda: True))
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        result = predicate()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return
        if loop.time() >= deadline:
            raise AssertionError(f"{what} not met within {timeout} s")
        await asyncio.sleep(interval)
