"""The ``streamcite`` command line.

Sub-commands live in ``streamcite/apps/<name>.py`` (each exports a click command
named ``command``) and are imported only when invoked, so ``streamcite sse`` does
not pay for the relay or the plotting stack.
"""

from __future__ import annotations

import errno
import importlib
import os
import select
import signal
import sys
from typing import Any, NoReturn

import click

from streamcite.core.build import core_build

_COMMANDS: dict[str, tuple[str, str]] = {
    "ask": ("streamcite.apps.ask", "Ask a question; render the cited answer live."),
    "parse": ("streamcite.apps.parse", "Recorded chat SSE stream → events as JSON Lines."),
    "sse": ("streamcite.apps.sse", "Raw WHATWG SSE decoding → one JSON line per event."),
    "serve-local": ("streamcite.apps.serve_local", "Run the embedded local backend."),
    "relay": ("streamcite.apps.relay", "Run the WebSocket/SSE relay and its web page."),
    "bench": ("streamcite.apps.bench", "Latency benchmark of a citation-aware endpoint."),
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = _COMMANDS.get(cmd_name)
        if target is None:
            return None
        module = importlib.import_module(target[0])
        cmd: click.Command = module.command
        return cmd

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OSError as exc:
            if exc.errno != errno.EPIPE or not _stdout_gone():
                raise  # a socket's EPIPE that escaped a command is an error, not an exit
            _closed_pipe()

    def format_commands(self, ctx: click.Context, formatter: Any) -> None:
        rows = [(name, help_) for name, (_, help_) in sorted(_COMMANDS.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _stdout_gone() -> bool:
    """Nobody reads stdout any more (the pipe's reader exited): poll says so."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        events = poller.poll(0)
    except (AttributeError, OSError, ValueError):  # no poll, no descriptor: assume so
        return True
    return any(mask & (select.POLLERR | select.POLLHUP) for _, mask in events)


def _closed_pipe() -> NoReturn:
    """The reader went away (``streamcite ask … | head -3``): end as Unix tools do, by
    SIGPIPE, with no traceback and no message (the shell's status is 141).

    Python ignores SIGPIPE so that sockets report EPIPE instead (the embedded backend
    and the relay need that); it is restored only here, once the output is gone."""
    try:  # nothing more may reach the closed pipe, not even at interpreter exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # pragma: no cover - stdout without a descriptor
        pass
    sigpipe = getattr(signal, "SIGPIPE", None)
    if sigpipe is not None:
        sys.stdout.flush = lambda: None  # type: ignore[method-assign]
        signal.signal(sigpipe, signal.SIG_DFL)
        os.kill(os.getpid(), sigpipe)
    os._exit(128 + 13)  # pragma: no cover - no SIGPIPE (Windows)


# The version line says which build of the core runs (compiled or pure Python).
_VERSION = f"%(prog)s %(version)s (core: {core_build()})"


@click.group(cls=_LazyGroup)
@click.version_option(package_name="streamcite", message=_VERSION)
def main() -> None:
    """streamcite: citation-aware streaming of LLM answers."""


if __name__ == "__main__":  # pragma: no cover
    main()
