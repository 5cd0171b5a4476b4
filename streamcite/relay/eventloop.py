"""Choosing an event loop: asyncio's, or uvloop (``pip install 'streamcite[uvloop]'``).

``streamcite relay --loop auto|asyncio|uvloop`` (auto: uvloop when it can be imported)
and ``benchmarks/bench_relay.py --streams … --loops asyncio,uvloop`` run through here.
"""

from __future__ import annotations

import asyncio
import gc
import importlib.util
from collections.abc import Callable, Coroutine
from typing import Any, Literal, TypeVar

__all__ = ["GC_THRESHOLDS", "LOOPS", "LoopChoice", "loop_factory", "resolve", "run", "tune_gc"]

LoopChoice = Literal["auto", "asyncio", "uvloop"]
LOOPS: tuple[LoopChoice, ...] = ("auto", "asyncio", "uvloop")
T = TypeVar("T")


def resolve(choice: LoopChoice) -> Literal["asyncio", "uvloop"]:
    """``auto`` → ``uvloop`` if it can be imported, else ``asyncio``; ``uvloop`` when it is
    not installed raises :class:`RuntimeError` with the command that installs it."""
    have = importlib.util.find_spec("uvloop") is not None
    if choice == "auto":
        return "uvloop" if have else "asyncio"
    if choice == "uvloop" and not have:
        raise RuntimeError("uvloop is not installed: pip install 'streamcite[uvloop]'")
    return choice


def loop_factory(choice: LoopChoice = "auto") -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The loop factory for :class:`asyncio.Runner` (None: asyncio's own loop)."""
    if resolve(choice) == "asyncio":
        return None
    import uvloop

    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def run(coro: Coroutine[Any, Any, T], choice: LoopChoice = "auto") -> T:
    """``asyncio.run(coro)`` on the chosen loop."""
    with asyncio.Runner(loop_factory=loop_factory(choice)) as runner:
        return runner.run(coro)


GC_THRESHOLDS = (50_000, 20, 10)
"""The cyclic collector's thresholds in a relay process (Python's: 700, 10, 10)."""


def tune_gc() -> None:
    """The collector settings of a long-running relay process, once it has started:

    - every object alive now (modules, the app, its sessions) is frozen — never scanned
      again, so a full collection walks only what streams made since;
    - a young collection every 50,000 allocations instead of 700: an event's objects are
      mostly gone by then instead of being promoted, so the full collections that stop the
      loop (and every token waiting in it) come far less often.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
