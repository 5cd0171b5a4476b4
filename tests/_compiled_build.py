"""The compiled build for the tests that check it against the source.

``build()`` makes (or reuses) the copy ``scripts/build_compiled.py`` compiles; ``run()``
starts a child process with that copy first on the path; ``pytest_compiled()`` runs test
files there. Needs mypyc (the dev extra's mypy) and a C compiler: without them the tests
skip, except on CI, where they fail.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "build" / "compiled"


def _load_builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "build_compiled", ROOT / "scripts" / "build_compiled.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


builder = _load_builder()


def require_tools() -> None:
    """Skip (fail on CI) without mypyc and a C compiler."""
    missing = [
        what
        for what, ok in (("mypyc", importlib.util.find_spec("mypyc")), ("cc", shutil.which("cc")))
        if not ok
    ]
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the compiled build needs {', '.join(missing)}")
        pytest.skip(f"the compiled build needs {', '.join(missing)}")


def build() -> Path:
    """The compiled copy, built if a source changed (or a skip/failure without the tools)."""
    require_tools()
    return Path(builder.build(TREE))


def run(tree: Path, *argv: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``python argv...`` with the compiled copy first on the path."""
    # The child starts in the build's folder: ``python -c``/``-m`` put the working
    # directory first on the path, and the checkout's sources must not win there.
    env = dict(os.environ, PYTHONPATH=f"{tree}{os.pathsep}{ROOT}")
    return subprocess.run(
        [sys.executable, *argv], cwd=tree, env=env, capture_output=True, text=True, timeout=timeout
    )


def pytest_compiled(tree: Path, tests: list[str], *options: str) -> None:
    """Run ``tests`` against the compiled copy; fail with their output if one fails.
    Tests that patch the source are left out (``tests/_compiled_plugin.py``)."""
    res = run(
        tree,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        # --import-mode=append: pytest must not put the checkout ahead of the build.
        "--import-mode=append",
        "-p",
        "tests._compiled_plugin",
        *options,
        *tests,
        timeout=900,
    )
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert " passed" in res.stdout


def listed_module_files(tree: Path) -> tuple[list[str], list[str]]:
    """The modules the compiled build lists, and the file each one imports from in a child
    process with ``tree`` first on the path."""
    modules = [m.removesuffix(".py").replace("/", ".") for m in builder.compiled_modules()]
    code = "import importlib, sys\nfor m in sys.argv[1:]:\n    print(importlib.import_module(m).__file__)"
    res = run(tree, "-c", code, *modules)
    assert res.returncode == 0, res.stderr[-3000:]
    return modules, res.stdout.split()


def cases_there_and_here(tree: Path, out: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``tests/_compiled_cases.py``'s events run with ``tree`` first on the path (written
    to ``out``), and the same cases run here, on the source."""
    from tests import _compiled_cases

    res = run(tree, "-m", "tests._compiled_cases", str(out))
    assert res.returncode == 0, res.stderr[-3000:]
    return orjson.loads(out.read_bytes()), _compiled_cases.run()
