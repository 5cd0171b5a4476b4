"""The embedded local backend for a benchmark, in a child process (or inline).

The bench starts the backend itself, so it allows client fault injection on it
(``X-Streamcite-Fault``): a benchmark's faults are the point.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import multiprocessing
import multiprocessing.connection
import signal
from collections.abc import Mapping
from typing import Any, Literal

__all__ = ["LocalUpstream", "backend_config"]


def backend_config(config: Mapping[str, Any]) -> Any:
    """``BackendConfig(**config)``, allowing client faults unless told otherwise (on
    backends that know that setting)."""
    from streamcite.local.server import BackendConfig

    kwargs = dict(config)
    names = {f.name for f in dataclasses.fields(BackendConfig)}
    if "allow_client_faults" in names:
        kwargs.setdefault("allow_client_faults", True)
    return BackendConfig(**kwargs)


def _local_backend_main(
    conn: multiprocessing.connection.Connection,
    config: dict[str, Any],
    host: str,
) -> None:  # pragma: no cover - runs in the child process
    # structlog's default prints every debug line to stdout: in the server that would
    # be blocking work per request, and noise in the benchmark's own output.
    from streamcite.logs import configure_logging

    # Ctrl-C reaches the whole process group: the parent decides when the backend stops
    # (after its in-flight requests are cancelled), so the child ignores it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    configure_logging("WARNING")
    asyncio.run(_local_backend_serve(conn, config, host))


async def _local_backend_serve(
    conn: multiprocessing.connection.Connection, config: dict[str, Any], host: str
) -> None:  # pragma: no cover - runs in the child process
    try:
        from streamcite.local.server import LocalBackend

        backend_cm = LocalBackend(backend_config(config), host=host, port=0)
        async with backend_cm as backend:
            conn.send(("ready", backend.base_url))
            # Wait for the parent's "stop" (or its death: EOF) without blocking the loop.
            with contextlib.suppress(EOFError, OSError):
                await asyncio.to_thread(conn.recv)
    except Exception as exc:
        with contextlib.suppress(Exception):
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


class LocalUpstream:
    """The embedded local backend for a benchmark.

    ``mode="process"`` (default) runs it in a child process, so the server's work
    does not share the event loop (nor the GIL) with the client being measured.
    ``mode="inline"`` runs it on the caller's loop: quicker to start, fine for tests,
    but client and server then slow each other down.
    ``config``: keyword arguments of ``streamcite.local.server.BackendConfig``.
    """

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        mode: Literal["process", "inline"] = "process",
        host: str = "127.0.0.1",
        start_timeout: float = 60.0,
    ) -> None:
        self.config = dict(config or {})
        self.mode = mode
        self.host = host
        self.start_timeout = start_timeout
        self.base_url = ""
        self._proc: Any = None
        self._conn: multiprocessing.connection.Connection | None = None
        self._inline: Any = None

    @property
    def root_url(self) -> str:
        """Server root (for the Wikit and grounding endpoints): ``base_url`` minus ``/v1``."""
        url = self.base_url.rstrip("/")
        return url[: -len("/v1")] if url.endswith("/v1") else url

    async def __aenter__(self) -> LocalUpstream:
        if self.mode == "inline":
            from streamcite.local.server import LocalBackend

            self._inline = LocalBackend(backend_config(self.config), host=self.host, port=0)
            backend = await self._inline.__aenter__()
            self.base_url = backend.base_url
            return self
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        self._conn = parent
        self._proc = ctx.Process(
            target=_local_backend_main,
            args=(child, self.config, self.host),
            name="streamcite-bench-backend",
            daemon=True,
        )
        self._proc.start()
        child.close()
        try:
            ready = await asyncio.to_thread(parent.poll, self.start_timeout)
            if not ready:
                raise RuntimeError(f"the local backend did not start in {self.start_timeout} s")
            kind, value = parent.recv()
        except EOFError:
            await self._stop()
            raise RuntimeError("the local backend process exited before it was ready") from None
        except BaseException:
            await self._stop()
            raise
        if kind != "ready":
            await self._stop()
            raise RuntimeError(f"the local backend failed to start: {value}")
        self.base_url = str(value)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._inline is not None:
            inline, self._inline = self._inline, None
            await inline.__aexit__(None, None, None)
            return
        await self._stop()

    async def _stop(self) -> None:
        conn, self._conn = self._conn, None
        proc, self._proc = self._proc, None
        if conn is not None:
            with contextlib.suppress(OSError, ValueError):
                conn.send("stop")
            conn.close()
        if proc is not None:
            await asyncio.to_thread(proc.join, 10.0)
            if proc.is_alive():
                proc.terminate()
                await asyncio.to_thread(proc.join, 5.0)
