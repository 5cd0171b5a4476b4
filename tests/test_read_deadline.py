"""The read deadline of a stream: one timer for many reads, a timeout told apart from a
cancel that came from elsewhere (on asyncio's loop and on uvloop)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from streamcite.pipeline.deadline import ReadDeadline
from streamcite.relay.eventloop import LoopChoice, resolve, run

LOOPS: list[LoopChoice] = ["asyncio", "uvloop"] if resolve("auto") == "uvloop" else ["asyncio"]


async def _reads_within_their_deadline_share_one_timer() -> None:
    loop = asyncio.get_running_loop()
    timers: list[float] = []
    call_at = loop.call_at
    deadline = ReadDeadline()

    def counting(when: float, callback: Any, *args: Any, **kw: Any) -> Any:
        if getattr(callback, "__self__", None) is deadline:
            timers.append(when)
        return call_at(when, callback, *args, **kw)

    loop.call_at = counting  # type: ignore[method-assign,assignment]
    try:
        for _ in range(60):  # 60 reads of ~2 ms, each allowed 0.2 s
            deadline.arm(0.2)
            await asyncio.sleep(0.002)
            deadline.disarm()
    finally:
        deadline.close()
        del loop.call_at
    # asyncio.timeout per read: 60 timers; here one per 0.2 s at most (+ the first)
    assert 1 <= len(timers) <= 6, len(timers)


async def _a_read_past_its_deadline_is_a_timeout() -> None:
    deadline = ReadDeadline()
    deadline.arm(0.05)
    with pytest.raises(asyncio.CancelledError):
        await asyncio.sleep(5)
    assert deadline.expired()
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    deadline.close()


async def _a_cancel_from_elsewhere_is_not_a_timeout() -> None:
    async def reader(deadline: ReadDeadline) -> str:
        deadline.arm(5.0)
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            if deadline.expired():
                return "timeout"
            raise
        finally:
            deadline.disarm()
        return "data"

    deadline = ReadDeadline()
    task = asyncio.create_task(reader(deadline))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    deadline.close()


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize(
    "case",
    [
        _reads_within_their_deadline_share_one_timer,
        _a_read_past_its_deadline_is_a_timeout,
        _a_cancel_from_elsewhere_is_not_a_timeout,
    ],
)
def test_read_deadline(loop: LoopChoice, case: Any) -> None:
    run(case(), loop)
