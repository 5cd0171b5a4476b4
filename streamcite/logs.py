"""structlog set-up for the command line and servers: key=value lines on stderr.

The library itself only calls ``structlog.get_logger("streamcite")`` and binds one
context per stream; applications configure structlog as they like. These helpers
give the CLI a sane default (stderr, so stdout stays a clean JSON Lines channel)
and a processor that masks secrets, composable into any structlog chain.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog

from streamcite.core.quote import quote

__all__ = [
    "MAX_LOG_EXCEPTION",
    "MAX_LOG_VALUE",
    "bounded_values",
    "configure_logging",
    "get_logger",
    "inert_strings",
    "redact_secrets",
]

MAX_LOG_VALUE = 2000
"""Characters of one logged value (longer ones cut with ``…``): an upstream's message
or a stream's question never makes a log line megabytes long."""
MAX_LOG_EXCEPTION = 8000
"""Characters of a logged traceback (the frames nearest the fault are kept). Tracebacks
are plain: never the local variables of each frame (a pretty-printed upstream value)."""

# Field names that hold a credential, compared exactly (case- and -/_-insensitive):
# matching substrings masked ``completion_tokens`` and ``max_tokens``.
_SECRET_KEYS = frozenset(
    {
        "authorization",
        "proxy_authorization",
        "api_key",
        "apikey",
        "x_api_key",
        "x_goog_api_key",
        "wikit_semantics_api_key",
        "token",
        "access_token",
        "refresh_token",
        "bearer",
        "secret",
        "client_secret",
        "password",
        "cookie",
        "set_cookie",
    }
)


def redact_secrets(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: mask the values of fields named like credentials."""
    for key in list(event_dict):
        if key.lower().replace("-", "_") in _SECRET_KEYS:
            event_dict[key] = "***"
    return event_dict


# C0 and C1 controls (escape sequences start with ESC or CSI) and bidi embeddings,
# overrides and isolates: a request path or an upstream's message can hold any of them.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escaped(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def inert_strings(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    r"""structlog processor: control and bidi characters of string values written as
    ``\xNN`` / ``\uNNNN``, so a key=value line on a terminal is only text (a request
    path or an upstream's message may carry escape sequences).

    >>> inert_strings(None, "warning", {"path": "/a\x1b]0;x\x07"})
    {'path': '/a\\x1b]0;x\\x07'}
    """
    for key, value in event_dict.items():
        if isinstance(value, str) and _UNSAFE.search(value) is not None:
            event_dict[key] = _UNSAFE.sub(_escaped, value)
    return event_dict


def bounded_values(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: every value at most :data:`MAX_LOG_VALUE` characters (a
    traceback :data:`MAX_LOG_EXCEPTION`, its end kept); values that are not plain
    scalars rendered by :func:`~streamcite.core.quote.quote` (bounded, iterative).

    >>> bounded_values(None, "info", {"n": 1, "big": "x" * 3000, "obj": [[[1]]]})["big"][-25:]
    '… (1,000 more characters)'
    """
    for key, value in event_dict.items():
        if type(value) is str:
            limit = MAX_LOG_EXCEPTION if key == "exception" else MAX_LOG_VALUE
            if len(value) > limit:
                if key == "exception":
                    value = f"…({len(value) - limit:,} characters before)\n{value[-limit:]}"
                else:
                    value = f"{value[:limit]}… ({len(value) - limit:,} more characters)"
                event_dict[key] = value
        elif value is not None and type(value) not in (int, float, bool):
            event_dict[key] = quote(value, MAX_LOG_VALUE)
    return event_dict


def _chain(json: bool) -> list[Any]:
    """The processors every streamcite logger runs: plain tracebacks (no locals) turned
    into a bounded ``exception`` string, secrets masked, values bounded and inert."""
    renderer: Any = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    return [
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso"),
        structlog.processors.format_exc_info,  # plain traceback.format_exception: no locals
        redact_secrets,
        bounded_values,
        *(() if json else (inert_strings,)),  # JSON escapes them already
        renderer,
    ]


def configure_logging(
    level: str | int = "WARNING", *, stream: TextIO | None = None, json: bool = False
) -> None:
    """Route streamcite's structlog output to ``stream`` (stderr) at ``level``."""
    if isinstance(level, str):
        level = logging.getLevelNamesMapping().get(level.upper(), logging.WARNING)
    structlog.configure(
        processors=_chain(json),
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=stream or sys.stderr),
        cache_logger_on_first_use=False,
    )


class LibraryLogger:
    """A structlog logger for library code: quiet until the application decides.

    While structlog is unconfigured, only warnings and errors are written (to stderr),
    so importing streamcite never prints info lines into an application's stdout.
    Once the application (or the CLI, through :func:`configure_logging`) configures
    structlog, every call goes through that configuration. Bound context is kept.
    """

    __slots__ = ("_built", "_ctx", "_key", "_name")

    def __init__(self, name: str, ctx: dict[str, Any] | None = None) -> None:
        self._name = name
        self._ctx = ctx or {}
        self._key: tuple[Any, ...] | None = None
        self._built: Any = None

    def bind(self, **kw: Any) -> LibraryLogger:
        return LibraryLogger(self._name, {**self._ctx, **kw})

    def _target(self) -> Any:
        # Building a bound logger costs ~10 µs (a lazy proxy resolved, the context
        # copied); a relay logs per event, so the built one is kept until structlog's
        # configuration changes. ``configure`` replaces its values, so comparing them
        # tells (a tuple compares identical items without calling ``__eq__``; a new
        # configuration equal to the old one builds the same logger anyway). The key
        # holds the values themselves, so no identity is reused meanwhile.
        key = (structlog.is_configured(), *structlog.get_config().values())
        if key != self._key:
            # Bound from the name's base logger, built once per configuration: binding a
            # built logger copies a dict, resolving structlog's lazy proxy costs ~10 µs
            # (a relay binds a logger or two per stream).
            self._built = _base_logger(self._name, key).bind(**self._ctx)
            self._key = key
        return self._built

    def __getattr__(self, method: str) -> Any:
        # debug, info, warning, error, exception, ... resolved at call time.
        return getattr(self._target(), method)

    def __repr__(self) -> str:
        return f"<LibraryLogger {self._name}>"


_QUIET: list[Any] = []


class _Stderr:
    """``sys.stderr`` as it is when a line is written (it may be replaced after the quiet
    logger was built: an application redirecting it, a test capturing it)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def _quiet_logger() -> Any:
    if not _QUIET:
        _QUIET.append(
            structlog.wrap_logger(
                structlog.PrintLogger(_Stderr()),  # type: ignore[arg-type]
                processors=_chain(False),
                wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
            )
        )
    return _QUIET[0]


_BASES: dict[str, tuple[tuple[Any, ...], Any]] = {}
_MAX_BASES = 256
"""Base loggers kept (one per logger name; the library uses a handful)."""


def _base_logger(name: str, key: tuple[Any, ...]) -> Any:
    """The built logger ``name`` binds from under the configuration ``key``."""
    entry = _BASES.get(name)
    if entry is not None and entry[0] == key:
        return entry[1]
    base = structlog.get_logger(name).bind() if key[0] else _quiet_logger().bind(logger=name)
    if len(_BASES) >= _MAX_BASES:
        _BASES.clear()
    _BASES[name] = (key, base)
    return base


def get_logger(name: str = "streamcite") -> LibraryLogger:
    """The logger library modules use (see :class:`LibraryLogger`)."""
    return LibraryLogger(name)
