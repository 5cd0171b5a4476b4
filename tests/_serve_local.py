"""``streamcite serve-local`` as a user starts it (a subprocess on an ephemeral port)."""

from __future__ import annotations

import contextlib
import re
import socket
import subprocess
import sys
from collections.abc import Iterator

__all__ = ["free_port", "serve_local"]


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serve_local(*args: str) -> Iterator[str]:
    """``streamcite serve-local --port 0 ARGS``; yields its root URL, stops it after."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamcite.cli", "serve-local", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the first line names the address (EOF if it exited)
        match = re.search(r"(http://127\.0\.0\.1:\d+)", line)
        assert match, line
        yield match.group(1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
