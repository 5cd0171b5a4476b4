"""A throwaway redis-server per test session, started and stopped by the tests themselves.

``scripts/redis-server.sh`` installs Debian's ``redis-server`` when it is missing and we are
root, then starts one on a free 127.0.0.1 port in a temporary directory, without persistence.
Where redis-server cannot be had (no root on a user's machine) the tests skip with the reason
— except with ``CI=true``, where they fail: CI must run them.

Use in a test module::

    from _redis_fixtures import redis_server, redis_server_factory  # noqa: F401
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "redis-server.sh"

__all__ = [
    "RedisServer",
    "redis_prefix",
    "redis_server",
    "redis_server_factory",
    "require",
]


def require(reason: str) -> None:
    """Skip with ``reason`` — or fail when ``CI=true`` (a CI run must not skip these tests)."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true and the Redis tests cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class RedisServer:
    """One redis-server on 127.0.0.1:``port`` whose state (pidfile, log) is in ``directory``."""

    port: int
    directory: Path

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        proc = subprocess.run(
            ["bash", str(SCRIPT), "start", str(self.port), str(self.directory)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"redis-server did not start: {proc.stderr.strip()}")

    def stop(self) -> None:
        subprocess.run(
            ["bash", str(SCRIPT), "stop", str(self.directory)],
            capture_output=True,
            timeout=30,
            check=False,
        )

    def restart(self) -> None:
        """Stop and start again on the same port: all data is gone (no persistence)."""
        self.stop()
        self.start()


def _ensure_installed() -> None:
    if shutil.which("redis-server") or Path("/usr/bin/redis-server").exists():
        return
    if not SCRIPT.exists():
        require(f"{SCRIPT} is missing")
    if os.geteuid() != 0:
        require("redis-server is not installed and we are not root to apt-get install it")
    proc = subprocess.run(
        ["bash", str(SCRIPT), "install"], capture_output=True, text=True, timeout=600, check=False
    )
    if proc.returncode != 0:
        require(f"redis-server could not be installed: {proc.stderr.strip()[-500:]}")


@pytest.fixture(scope="session")
def redis_server_factory(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[[], RedisServer]]:
    """``server = factory()`` starts a fresh redis-server; every one is stopped at session end."""
    started: list[RedisServer] = []
    checked = False

    def make() -> RedisServer:
        nonlocal checked
        if not checked:
            try:
                import redis  # noqa: F401
            except ImportError:
                require(
                    "the redis Python package is not installed (pip install 'streamcite[redis]')"
                )
            _ensure_installed()
            checked = True
        last: Exception | None = None
        for _ in range(3):  # a free port can be taken between probing and binding
            server = RedisServer(free_port(), tmp_path_factory.mktemp("redis"))
            started.append(server)
            try:
                server.start()
                return server
            except RuntimeError as exc:
                last = exc
                server.stop()
        require(str(last))
        raise AssertionError("unreachable")

    yield make
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def redis_server(redis_server_factory: Callable[[], RedisServer]) -> RedisServer:
    """One redis-server shared by the session's tests (tests use distinct key prefixes)."""
    return redis_server_factory()


@pytest.fixture
def redis_prefix() -> str:
    """A key prefix of this test's own, so tests sharing a server never see each other's keys."""
    return f"sctest:{uuid.uuid4().hex[:10]}:"
