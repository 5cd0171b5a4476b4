"""The core stays sans-I/O and the top level stays light, checked in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

import pytest

import streamcite

HEAVY_FOR_CORE = ("asyncio", "aiohttp", "httpx", "structlog", "rich", "tenacity", "numpy")
HEAVY_FOR_TOP = ("aiohttp", "httpx", "rich", "numpy", "bm25s", "click")


def _loaded_after(statement: str, candidates: tuple[str, ...]) -> list[str]:
    probe = (
        f"import sys; {statement}; print(','.join(m for m in {candidates!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    return [m for m in out.stdout.strip().split(",") if m]


@pytest.mark.parametrize(
    "module",
    [
        "streamcite.core.sse",
        "streamcite.core.chunks",
        "streamcite.core.markers",
        "streamcite.core.answer",
        "streamcite.core.events",
        "streamcite.core.models",
        "streamcite.core.api",
        "streamcite.core.offsets",
        "streamcite.events",
    ],
)
def test_core_modules_load_no_io_library(module: str) -> None:
    assert _loaded_after(f"import {module}", HEAVY_FOR_CORE) == []


def test_top_level_import_is_light() -> None:
    assert _loaded_after("import streamcite", HEAVY_FOR_TOP) == []


def test_top_level_names_resolve_lazily() -> None:
    for name in streamcite.__all__:
        assert getattr(streamcite, name) is not None
    assert len(streamcite.__all__) <= 12
    assert sorted(dir(streamcite)) == sorted(streamcite.__all__)
    # names of 0.1 still resolve (not listed), with a DeprecationWarning (issue 27)
    with pytest.warns(DeprecationWarning, match="streamcite.events"):
        assert streamcite.TokenEvent.__name__ == "TokenEvent"
    with pytest.raises(AttributeError):
        _ = streamcite.NoSuchName


def test_version_is_single_sourced() -> None:
    from importlib.metadata import version

    assert streamcite.__version__ == version("streamcite")


def test_help_opens_with_one_screen_naming_the_five() -> None:
    """``help(streamcite)``: its description (what pydoc prints before the package
    contents and the reference of each exported class) fits a 24-line screen."""
    import pydoc

    text = pydoc.render_doc(streamcite, renderer=pydoc.plaintext)
    first_screen = text.split("PACKAGE CONTENTS")[0].splitlines()
    assert len(first_screen) <= 24
    described = "\n".join(first_screen)
    for name in ("stream_chat", "ChatStream", "CitedAnswer", "iter_events", "aiter_events"):
        assert name in described


def test_moved_modules_keep_their_import_paths() -> None:
    """The pipeline, Google and Wikit modules became packages; their names still import."""
    from streamcite.enrich import google, wikit
    from streamcite.pipeline import ChatStream, Timeouts, stream_chat

    assert stream_chat is ChatStream and Timeouts().total == 600.0
    for mod in (google, wikit):
        for name in mod.__all__:
            assert getattr(mod, name) is not None, (mod.__name__, name)
    assert google.prepare_facts.__module__ == "streamcite.enrich.facts"
