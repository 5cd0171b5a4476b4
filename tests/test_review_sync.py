"""Review of ``stream_chat_sync``: a stream left without ``close()`` and a ``close()``
from another thread as the reader starts.

- ``for ev in stream_chat_sync(...): break`` (the "plain iterator" the docs promise) or
  an iterator dropped mid-stream: the async ``stream_chat`` is closed by the loop's
  async-generator finaliser when it is dropped; the sync twin kept its pump task, the
  upstream connection and the enrichers for as long as the process lived (the pump
  waited for a reader that was gone).
- ``close()`` from another thread (a watchdog, a Stop handler) just as the reader asks
  for its first event: the pump was started after the close and sent the request anyway.
"""

from __future__ import annotations

import gc
import inspect
import sys
import threading
from types import FrameType
from typing import Any

from streamcite import stream_chat_sync
from streamcite.pipeline.sync import SyncChatStream
from tests._wait import wait_until_sync as _wait
from tests.test_sync_api import REQUEST, upstream

_WORD = b'data: {"choices":[{"index":0,"delta":{"content":"w "}}]}\n\n'


def test_a_dropped_iterator_closes_the_upstream_request() -> None:
    with upstream() as up:
        up.pieces = [_WORD] * 600 + [b"data: [DONE]\n\n"]
        up.delay = 0.02  # 12 s of stream: far longer than the wait below
        it = iter(stream_chat_sync(REQUEST, base_url=up.url + "/v1"))
        assert next(it).type == "token"
        del it  # no close(), no ``with``: the caller just stops reading
        gc.collect()
        closed = _wait(lambda: up.closed_by_client == 1, timeout=5.0)
        assert closed, "the upstream request stayed open after the stream was dropped"
        assert up.finished == 0


def test_a_loop_that_breaks_early_closes_the_upstream_request() -> None:
    with upstream() as up:
        up.pieces = [_WORD] * 600 + [b"data: [DONE]\n\n"]
        up.delay = 0.02
        for ev in stream_chat_sync(REQUEST, base_url=up.url + "/v1"):
            if ev.type == "token":
                break
        gc.collect()
        assert _wait(lambda: up.closed_by_client == 1, timeout=5.0)


def _start_line() -> int:
    """The line of ``SyncChatStream.__next__`` that starts the pump."""
    lines, first = inspect.getsourcelines(SyncChatStream.__next__)
    hits = [first + i for i, line in enumerate(lines) if "start_pump" in line]
    assert hits, "SyncChatStream.__next__ no longer starts the pump"
    return hits[-1]


def test_close_from_another_thread_as_the_reader_starts_sends_no_request() -> None:
    line = _start_line()
    code = SyncChatStream.__next__.__code__
    with upstream() as up:
        up.pieces = [_WORD, b"data: [DONE]\n\n"]
        stream = stream_chat_sync(REQUEST, base_url=up.url + "/v1")
        closer = threading.Thread(target=stream.close, daemon=True)

        def trace(frame: FrameType, event: str, arg: Any) -> Any:
            if frame.f_code is not code:
                return None
            if event == "line" and frame.f_lineno == line and not closer.is_alive():
                closer.start()  # another thread closes the stream right now
                closer.join(10)
            return trace

        got: list[Any] = []
        failed: list[BaseException] = []

        def read() -> None:
            sys.settrace(trace)
            try:
                got.extend(stream)
            except BaseException as exc:  # handed to the test
                failed.append(exc)
            finally:
                sys.settrace(None)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(10)
        assert not reader.is_alive(), "the reader never ended after close()"
        assert not failed
        assert [e.type for e in got if e.type == "token"] == [], "a request was sent after close()"
        assert stream.answer.text == ""
