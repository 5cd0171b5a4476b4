"""The library logger keeps its built structlog logger until the configuration changes."""

from __future__ import annotations

import io
from collections.abc import Iterator, MutableMapping
from typing import Any

import pytest
import structlog

from streamcite.logs import _quiet_logger, get_logger


@pytest.fixture
def restore_structlog() -> Iterator[None]:
    saved = structlog.get_config()
    configured = structlog.is_configured()
    yield
    structlog.reset_defaults()
    if configured:
        structlog.configure(**saved)


def _configure(buf: io.StringIO, tag: str) -> None:
    def add_tag(_: object, __: str, ev: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        ev["tag"] = tag
        return ev

    structlog.configure(
        processors=[add_tag, structlog.processors.KeyValueRenderer(sort_keys=True)],
        logger_factory=structlog.PrintLoggerFactory(buf),
        cache_logger_on_first_use=False,
    )


@pytest.mark.usefixtures("restore_structlog")
def test_built_once_then_rebuilt_when_structlog_is_configured_again() -> None:
    log = get_logger("streamcite.test").bind(stream="s1")
    first = io.StringIO()
    _configure(first, "one")
    log.info("a")
    built = log._target()
    log.info("b")
    assert log._target() is built  # no rebuild per call
    second = io.StringIO()
    _configure(second, "two")
    log.info("c")
    assert log._target() is not built
    assert "tag='one'" in first.getvalue() and "event='b'" in first.getvalue()
    assert "event='c'" in second.getvalue() and "tag='two'" in second.getvalue()
    assert "event='c'" not in first.getvalue()
    assert "stream='s1'" in second.getvalue()


@pytest.mark.usefixtures("restore_structlog")
def test_reset_to_defaults_goes_back_to_the_quiet_logger() -> None:
    log = get_logger("streamcite.test")
    buf = io.StringIO()
    _configure(buf, "x")
    log.info("configured")
    configured = log._target()
    structlog.reset_defaults()
    quiet = log._target()
    assert quiet is not configured
    assert quiet._logger is _quiet_logger()._logger  # warnings and errors only, to stderr
    log.info("not written")
    assert "configured" in buf.getvalue() and "not written" not in buf.getvalue()


@pytest.mark.usefixtures("restore_structlog")
def test_bound_loggers_of_one_name_are_built_from_one_base() -> None:
    """A relay binds a logger or two per stream: each is bound from the name's base logger
    (a dict copy), not built through structlog's factory again, and keeps its own context."""
    buf = io.StringIO()
    made: list[tuple[Any, ...]] = []

    def factory(*args: Any) -> structlog.PrintLogger:
        made.append(args)
        return structlog.PrintLogger(buf)

    structlog.configure(
        processors=[structlog.processors.KeyValueRenderer(sort_keys=True)],
        logger_factory=factory,
        cache_logger_on_first_use=False,
    )
    base = get_logger("streamcite.test.base")
    for i in range(20):
        base.bind(stream=f"s{i}").info("start", n=i)
    assert len(made) == 1
    lines = buf.getvalue().splitlines()
    assert len(lines) == 20
    assert all(f"n={i} stream='s{i}'" in line for i, line in enumerate(lines))
