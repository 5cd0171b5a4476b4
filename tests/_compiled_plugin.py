"""A pytest plugin for running the core's tests against the compiled build.

A compiled module binds the functions and methods it calls when it is built, so a
test that replaces one with ``monkeypatch`` (a spy that counts parses, a forced
failure) would watch a function the compiled code never calls: such tests check the
source and are left out of this run (they run on the source in the main suite). A
test that patches another way (``mock.patch``) says so with ``@pytest.mark.source_only``.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kept, spies = [], []
    for item in items:
        patches = "monkeypatch" in getattr(item, "fixturenames", ())
        (spies if patches or item.get_closest_marker("source_only") else kept).append(item)
    if spies:
        config.hook.pytest_deselected(items=spies)
        items[:] = kept
