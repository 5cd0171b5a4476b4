"""One way for a test to wait for a condition: poll it, with a deadline.

A fixed ``sleep`` is not a synchronisation (too short on a loaded machine, wasted
time on a quiet one). ``wait_until`` returns as soon as the condition holds and fails
with a clear message when it does not hold within ``timeout`` seconds.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable

__all__ = ["wait_until", "wait_until_sync"]


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


def wait_until_sync(
    predicate: Callable[[], bool], timeout: float = 10.0, interval: float = 0.01
) -> bool:
    """:func:`wait_until` for code with no event loop: True once ``predicate()`` holds,
    False after ``timeout`` seconds (the caller asserts, with its own message).

    >>> wait_until_sync(lambda: True)
    True
    """
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
    return True
