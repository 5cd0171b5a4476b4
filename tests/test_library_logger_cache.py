"""The library logger keeps its built structlog logger until the configuration changes."""

from __future__ import annotations

import io
from collections.abc import Iterator, MutableMapping
from typing import Any

import pytest
import structlog

from streamcite.logs import get_logger


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
def test_reset_to_defaults_goes_back_to_the_quiet_logger(
    capsys: pytest.CaptureFixture[str],
) -> None:
    log = get_logger("streamcite.test")
    buf = io.StringIO()
    _configure(buf, "x")
    log.info("configured")
    structlog.reset_defaults()
    log.info("quiet: an info line is not written while unconfigured")
    log.warning("loud")
    err = capsys.readouterr().err
    assert "quiet" not in err and "quiet" not in buf.getvalue()
    assert "loud" in err
