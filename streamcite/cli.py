"""The ``streamcite`` command line.

Sub-commands live in ``streamcite/apps/<name>.py`` (each exports a click command
named ``command``) and are imported only when invoked, so ``streamcite sse`` does
not pay for the relay or the plotting stack.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

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

    def format_commands(self, ctx: click.Context, formatter: Any) -> None:
        rows = [(name, help_) for name, (_, help_) in sorted(_COMMANDS.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=_LazyGroup)
@click.version_option(package_name="streamcite")
def main() -> None:
    """streamcite: citation-aware streaming of LLM answers."""


if __name__ == "__main__":  # pragma: no cover
    main()
