"""The CLI's console: upstream text made inert for a terminal and for rich markup.

The text functions (:func:`terminal_safe`, :func:`one_line`…) are
:mod:`streamcite.core.terminal`'s, importable from here too; everything the CLI
renders from upstream goes through them first.
"""

from __future__ import annotations

import errno
import functools
import os
from typing import TYPE_CHECKING, Any

from streamcite.core.terminal import (
    json_for_terminal,
    json_line_escaped,
    one_line,
    terminal_safe,
)

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "console_text",
    "json_for_terminal",
    "json_line_escaped",
    "one_line",
    "pipe_console",
    "terminal_safe",
]


def console_text(text: str) -> str:
    r"""Upstream text for a rich markup string: inert for the terminal and for rich.

    >>> console_text("[bold]hi[/bold]\x1b]0;title\x07 done")
    '\\[bold]hi\\[/bold] done'
    """
    from rich.markup import escape

    return escape(terminal_safe(text))


@functools.cache
def _pipe_console_class() -> type[Console]:
    from rich.console import Console

    class _PipeConsole(Console):
        def on_broken_pipe(self) -> None:
            # rich's own ends the process with exit 1; the CLI ends by SIGPIPE instead,
            # like other Unix tools (streamcite.cli), after the command's cleanup ran.
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    return _PipeConsole


def pipe_console(**options: Any) -> Console:
    """A rich ``Console`` whose write to a closed pipe (``… | head -3``) raises
    ``BrokenPipeError`` for the command line to handle, instead of exiting with 1."""
    return _pipe_console_class()(**options)
