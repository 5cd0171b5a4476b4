"""``--header-timeout`` / ``--body-timeout`` on ``streamcite relay`` and ``serve-local``.

The read deadlines (``streamcite.web.deadlines``) were config fields only: the commands
always ran with 10 s / 30 s. Here each command runs in a subprocess with a 1 s deadline
and a socket that sends half a request head (or a head whose body never comes) is
closed by the server within a few seconds — far below the 10 s / 30 s defaults.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from click.testing import CliRunner

from streamcite.cli import main

DEADLINE = 1.0


@asynccontextmanager
async def _served(*args: str) -> AsyncIterator[int]:
    """``streamcite ARGS --port 0`` in a subprocess; the port it listens on."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "streamcite.cli", *args, "--port", "0",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "STREAMCITE_RELAY_TOKEN": ""},
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
        assert " on http://127.0.0.1:" in line, line
        yield int(line.rsplit(":", 1)[1].strip().rstrip("/"))
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 15)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def _closed_after(port: int, head: bytes) -> float:
    """Send ``head`` and nothing more; seconds until the server closes the socket."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()
    try:
        writer.write(head)
        await writer.drain()
        async with asyncio.timeout(20):  # the defaults would hold it 10 s / 30 s
            while await reader.read(4096):
                pass  # a 408 or nothing: either way the server ends the connection
        return time.monotonic() - started
    finally:
        writer.close()


PARTIAL_HEAD = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
NO_BODY = (
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
)


@pytest.mark.parametrize(
    "command",
    [
        ["serve-local"],
        ["relay", "--grounding", "none", "--no-sources", "--token-delay", "0"],
    ],
    ids=["serve-local", "relay"],
)
async def test_the_flags_reach_the_server(command: list[str]) -> None:
    flags = ["--header-timeout", str(DEADLINE), "--body-timeout", str(DEADLINE)]
    async with _served(*command, *flags) as port:
        header, body = await asyncio.gather(
            _closed_after(port, PARTIAL_HEAD), _closed_after(port, NO_BODY)
        )
    # Before: the flags did not exist (exit 2); the defaults hold a socket 10 s / 30 s.
    assert DEADLINE * 0.9 <= header < DEADLINE + 4.0, header
    assert DEADLINE * 0.9 <= body < DEADLINE + 4.0, body


@pytest.mark.parametrize("name", ["relay", "serve-local"])
def test_bad_values_are_usage_errors(name: str) -> None:
    for flag in ("--header-timeout", "--body-timeout"):
        result = CliRunner().invoke(main, [name, flag, "0"])
        assert result.exit_code == 2, result.output
        assert flag in result.output
