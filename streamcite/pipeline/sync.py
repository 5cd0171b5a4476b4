"""``stream_chat_sync``: the synchronous twin of :func:`~streamcite.stream_chat`.

Same arguments, same events, same :class:`~streamcite.CitedAnswer`, for code that has no
event loop: Streamlit, Flask and Django views, scripts::

    with stream_chat_sync(request, base_url="http://127.0.0.1:8765/v1") as stream:
        for event in stream:
            ...
    answer = stream.answer

The async pipeline runs on one private event-loop thread per process (started on first
use, a daemon; a forked child starts its own). Each stream's events are handed over
through a bounded queue: the loop reads ahead at most ``_AHEAD`` events, then waits
for the reader, so a slow reader slows the upstream (TCP backpressure) rather than
growing memory. Every wait of the reader is bounded: the pipeline's own
:class:`~streamcite.Timeouts` end the stream with an ``error`` and ``done``; a loop
thread that died is reported, never waited on forever. Leaving the ``with`` early,
``close()``, an exception or Ctrl-C in the reader cancel the run: the upstream
response is closed and the enrichers are cancelled, as ``aclose()`` does.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import queue
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from types import TracebackType
from typing import Any, TypeVar

from streamcite.core.events import DoneEvent, Event, TokenEvent
from streamcite.core.models import CitedAnswer
from streamcite.pipeline.stream import ChatStream

__all__ = ["SyncChatStream", "stream_chat_sync"]

_AHEAD = 256
"""Most events the loop reads ahead of a slow reader."""
_SLICE = 0.5
"""Seconds a blocked reader waits before it checks that the loop thread is alive."""
_CLOSE_TIMEOUT = 10.0
"""Seconds ``close()`` waits for the upstream to be closed and the enrichers cancelled."""
_START_TIMEOUT = 10.0

T = TypeVar("T")


class _LoopThread:
    """One event loop on one daemon thread, shared by every sync stream of a process."""

    _lock = threading.Lock()
    _current: _LoopThread | None = None

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        started = threading.Event()
        self.thread = threading.Thread(
            target=self._run, args=(started,), name="streamcite-sync", daemon=True
        )
        self.thread.start()
        if not started.wait(_START_TIMEOUT):  # pragma: no cover - a machine in trouble
            raise RuntimeError("streamcite's sync loop thread did not start")

    def _run(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(started.set)
        self.loop.run_forever()

    @classmethod
    def get(cls) -> _LoopThread:
        current = cls._current
        if current is not None and current.pid == os.getpid() and current.thread.is_alive():
            return current
        with cls._lock:
            current = cls._current
            if current is None or current.pid != os.getpid() or not current.thread.is_alive():
                current = cls._current = _LoopThread()
            return current

    def call(self, fn: Callable[[], T], timeout: float) -> T:
        """``fn()`` run on the loop thread; its result (bounded wait)."""
        done: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                done.set_result(fn())
            except BaseException as exc:  # handed to the caller
                done.set_exception(exc)

        self.loop.call_soon_threadsafe(run)
        return done.result(timeout)


class _End:
    """The pump's last item: the run ended (``error`` holds what it raised, if anything)."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException | None) -> None:
        self.error = error


class _Channel:
    """One stream's run and its hand-over queue. The loop side (the pump) holds this,
    never the :class:`SyncChatStream`: a stream its reader drops is collected, and its
    finaliser closes the run."""

    __slots__ = (
        "closed",
        "ended",
        "pump",
        "pump_waiting",
        "put_count",
        "queue",
        "room",
        "runner",
        "stream",
        "taken",
    )

    def __init__(self, runner: _LoopThread, stream: ChatStream) -> None:
        self.runner = runner
        self.stream = stream
        self.queue: queue.SimpleQueue[Event | _End] = queue.SimpleQueue()
        # Items in the queue = put - taken; each count is written by one thread only.
        self.put_count = 0  # the loop thread's
        self.taken = 0  # the reader's
        self.room = asyncio.Event()  # touched on the loop thread only
        self.pump_waiting = False
        self.pump: asyncio.Task[None] | None = None  # set on the loop thread
        self.closed = False
        self.ended = False  # the _End was put (loop thread)

    # -- the loop side ------------------------------------------------------------------

    def start_pump(self) -> None:
        if self.closed:  # closed (from another thread) before the pump could start
            self.end(None)
            return
        self.pump = self.runner.loop.create_task(
            self.run_pump(), name=f"sync-{self.stream.stream_id}"
        )

    async def run_pump(self) -> None:
        error: BaseException | None = None
        try:
            async for ev in self.stream:
                self.put(ev)
                if self.put_count - self.taken >= _AHEAD:
                    self.room.clear()
                    self.pump_waiting = True
                    if self.put_count - self.taken >= _AHEAD:  # the reader may have taken some
                        await self.room.wait()
                    self.pump_waiting = False
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a caller's bug (bad arguments, a custom transport)
            error = exc
        finally:
            self.end(error)

    def put(self, item: Event | _End) -> None:
        self.put_count += 1
        self.queue.put(item)

    def end(self, error: BaseException | None) -> None:
        if not self.ended:
            self.ended = True
            self.put(_End(error))

    async def aclose(self) -> None:
        pump = self.pump
        if pump is not None and not pump.done():
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump
        try:
            await self.stream.aclose()
        finally:
            self.end(None)  # a pump cancelled before its first step put nothing

    def abandon(self) -> None:
        """The reader dropped its stream without closing it: close the run, not waiting."""
        if self.closed:
            return
        self.closed = True
        if self.runner.thread.is_alive() and self.runner.pid == os.getpid():
            with contextlib.suppress(RuntimeError):  # the loop is closing with the process
                asyncio.run_coroutine_threadsafe(self.aclose(), self.runner.loop)

    # -- the reader side ----------------------------------------------------------------

    def get(self) -> Event | _End:
        while True:
            try:
                item = self.queue.get(timeout=_SLICE)
            except queue.Empty:
                if not self.runner.thread.is_alive():  # pragma: no cover - the loop died
                    raise RuntimeError("streamcite's sync loop thread stopped") from None
                continue
            self.taken += 1
            if self.pump_waiting and self.put_count - self.taken < _AHEAD // 2:
                self.pump_waiting = False
                self.runner.loop.call_soon_threadsafe(self.room.set)
            return item


class SyncChatStream:
    """A :class:`~streamcite.ChatStream` read from a plain thread: a context manager and
    an iterator of the same events (the last is always ``done``).

    ``answer`` is the :class:`~streamcite.CitedAnswer` so far and, after ``done``, the
    final one; ``text_stream`` yields only the displayable text of choice 0;
    ``until_done()`` reads the rest and returns the answer; ``close()`` cancels. A
    stream dropped without ``close()`` (a ``for`` loop left with ``break``) is closed
    when it is collected, as an async generator is.
    """

    def __init__(self, request: Mapping[str, Any], **options: Any) -> None:
        self._runner = _LoopThread.get()
        self._stream = ChatStream(request, **options)  # binds to no loop until it runs
        self._ch = _Channel(self._runner, self._stream)
        self._started = False
        self._final: CitedAnswer | None = None
        self._finished = False
        weakref.finalize(self, self._ch.abandon)

    def __repr__(self) -> str:
        return repr(self._stream).replace("<ChatStream", "<SyncChatStream", 1)

    @property
    def stream_id(self) -> str:
        return self._stream.stream_id

    @property
    def _put_count(self) -> int:
        return self._ch.put_count

    @property
    def _taken(self) -> int:
        return self._ch.taken

    @property
    def answer(self) -> CitedAnswer:
        """The answer so far (final once ``done`` was yielded)."""
        if self._final is not None:
            return self._final
        if not self._runner.thread.is_alive():  # pragma: no cover - the loop died
            return self._stream.answer
        return self._runner.call(lambda: self._stream.answer, _CLOSE_TIMEOUT)

    def __enter__(self) -> SyncChatStream:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        if self._finished:
            raise StopIteration
        if not self._started:
            if self._ch.closed:  # closed before it started: nothing is sent
                self._finished = True
                raise StopIteration
            self._started = True  # no round trip: the first event is what we wait for
            # A close() from another thread from here on is seen by the loop: the
            # pump does not start, or is cancelled, and the reader gets the end.
            self._runner.loop.call_soon_threadsafe(self._ch.start_pump)
        item = self._ch.get()
        if type(item) is _End:
            self._finished = True
            if item.error is not None:
                raise item.error
            raise StopIteration
        assert not isinstance(item, _End)
        if type(item) is DoneEvent:
            self._final = item.answer
        return item

    @property
    def text_stream(self) -> Iterator[str]:
        """Only the displayable text of choice 0, as it arrives."""
        for ev in self:
            if type(ev) is TokenEvent and ev.index == 0 and ev.display:
                yield ev.display

    def until_done(self) -> CitedAnswer:
        """Read the rest of the stream; return the final answer."""
        for _ in self:
            pass
        return self.answer

    def close(self) -> None:
        """Stop: cancel the run, close the upstream response, cancel enrichers. Idempotent;
        waits at most ``_CLOSE_TIMEOUT`` seconds for the closing to finish."""
        if self._ch.closed:
            return
        self._ch.closed = True
        self._finished = True
        if not self._runner.thread.is_alive():  # pragma: no cover - the loop died
            return
        future = asyncio.run_coroutine_threadsafe(self._ch.aclose(), self._runner.loop)
        try:
            future.result(_CLOSE_TIMEOUT)
        except concurrent.futures.TimeoutError:  # pragma: no cover - a stuck close
            future.cancel()
        if self._final is None:
            with contextlib.suppress(Exception):
                self._final = self._stream.answer  # the loop is done with it now


def stream_chat_sync(request: Mapping[str, Any], **options: Any) -> SyncChatStream:
    """``stream_chat`` for code with no event loop: the same keyword arguments
    (``base_url``, ``api``, ``api_key``, ``after``, ``timeouts``...), the same events, the
    same answer; a context manager and a plain iterator.

    >>> with stream_chat_sync(request, base_url="http://127.0.0.1:8765/v1") as stream:
    ...     for text in stream.text_stream:
    ...         print(text, end="")
    >>> stream.answer.citations
    """
    return SyncChatStream(request, **options)
