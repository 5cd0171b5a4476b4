"""The hot core compiled by mypyc behaves as its pure-Python source does.

``scripts/build_compiled.py`` builds the compiled copy (reused while no source
changes). Then, in a child process with that copy first on the path: every listed
module is the compiled one, every recording and seeded mutation gives the same events
as the source does here, and the core's own tests pass.

Needs mypyc (the dev extra's mypy) and a C compiler; without them the tests skip,
except on CI, where they fail.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests._compiled_build import (
    ROOT,
    build,
    cases_there_and_here,
    listed_module_files,
    pytest_compiled,
)

# The core's tests that also run against the compiled build: every test file of the
# decoder, the dialects, the chunk and delta readers, citations, footnotes and the
# answer. Tests that replace a function with ``monkeypatch`` are left out of that run
# (``tests/_compiled_plugin.py`` says why).
CORE_TESTS = re.compile(
    r"test_.*(dialect|sse|hotloop|template|chunk|delta|citation|answer|marker|footnote|cohere"
    r"|anthropic|gemini|responses|fastpath|passages|five_apis|span|surrogate|caps).*\.py"
)


# The first run builds (a minute or more on a busy machine); the child test run is long.
pytestmark = pytest.mark.timeout(1500)


@pytest.fixture(scope="module")
def tree() -> Path:
    return build()


def test_every_listed_module_is_the_compiled_one(tree: Path) -> None:
    modules, files = listed_module_files(tree)
    assert len(files) == len(modules)
    not_compiled = [f for f in files if not f.endswith(".so")]
    assert not_compiled == []
    assert all(f.startswith(str(tree)) for f in files)


def test_same_events_as_the_source(tree: Path, tmp_path: Path) -> None:
    compiled, pure = cases_there_and_here(tree, tmp_path / "compiled.json")
    assert len(pure) >= 400
    assert compiled.keys() == pure.keys()
    differ = [k for k in pure if compiled[k] != pure[k]]
    assert differ == [], f"{len(differ)} cases differ, first: {differ[:5]}"


def test_core_tests_pass_compiled(tree: Path) -> None:
    tests = sorted(
        str(p) for p in (ROOT / "tests").glob("test_*.py") if CORE_TESTS.fullmatch(p.name)
    )
    assert len(tests) >= 40
    pytest_compiled(tree, tests, "-x")
