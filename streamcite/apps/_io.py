"""Shared plumbing of the file-or-stdin commands."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import BinaryIO

READ_SIZE = 64 * 1024


def read_chunks(path: str | None) -> Iterator[bytes]:
    """The bytes of ``path`` (or stdin when None or ``-``) in reads as they come."""
    if path is None or path == "-":
        yield from _reads(sys.stdin.buffer)
        return
    with open(path, "rb") as f:
        yield from _reads(f)


def _reads(f: BinaryIO) -> Iterator[bytes]:
    read = getattr(f, "read1", f.read)
    while True:
        data = read(READ_SIZE)
        if not data:
            return
        yield data
