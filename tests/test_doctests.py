"""The examples in the docstrings of the pure modules run, and say what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "streamcite.apps._terminal",
    "streamcite.bench.cells",
    "streamcite.core._validate",
    "streamcite.core.bounds",
    "streamcite.core.events",
    "streamcite.core.markers",
    "streamcite.relay.readers",
    "streamcite.telemetry.conventions",
    "streamcite.core.offsets",
    "streamcite.core.redact",
    "streamcite.core.retry_after",
    "streamcite.core.surrogates",
    "streamcite.core.terminal",
    "streamcite.grounding.checker",
    "streamcite.grounding.sentence_stream",
    "streamcite.transports.base",
    "streamcite.web.eventsse",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0, f"{name} has no examples"
