"""structlog set-up for the command line and servers: key=value lines on stderr.

The library itself only calls ``structlog.get_logger("streamcite")`` and binds one
context per stream; applications configure structlog as they like. These helpers
give the CLI a sane default (stderr, so stdout stays a clean JSON Lines channel)
and a processor that masks secrets, composable into any structlog chain.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog

__all__ = ["configure_logging", "redact_secrets"]

_SECRET_KEYS = ("authorization", "api_key", "apikey", "token", "secret", "password")


def redact_secrets(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: mask values of keys that look like credentials."""
    for key in list(event_dict):
        if any(w in key.lower() for w in _SECRET_KEYS) and key != "event":
            event_dict[key] = "***"
    return event_dict


def configure_logging(
    level: str | int = "WARNING", *, stream: TextIO | None = None, json: bool = False
) -> None:
    """Route streamcite's structlog output to ``stream`` (stderr) at ``level``."""
    if isinstance(level, str):
        level = logging.getLevelNamesMapping().get(level.upper(), logging.WARNING)
    renderer: Any = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            redact_secrets,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=stream or sys.stderr),
        cache_logger_on_first_use=False,
    )
