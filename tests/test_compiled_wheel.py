"""The compiled wheel: ``STREAMCITE_COMPILE=1 pip wheel .`` is what a user installs.

The wheel is built from a copy of what the source distribution holds (``MANIFEST.in``:
the package, the build backend, ``setup.py``), installed alone into a folder, and run
from there in a child process: every listed module is an extension module of the
wheel, the CLI says which core runs, and every recording and seeded mutation gives
the same events as the source does here. ``tests/test_compiled_core.py`` checks the
checkout's own compiled copy; this checks the packaging around the same modules.

Needs mypyc (the dev extra's mypy) and a C compiler; without them the tests skip,
except on CI, where they fail. The wheel is built without build isolation (with this
environment's setuptools and mypy), so no download is needed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import orjson
import pytest

from tests import _compiled_cases
from tests._compiled_build import ROOT, builder, require_tools, run

pytestmark = pytest.mark.timeout(1500)

# What a source distribution carries that the build reads (MANIFEST.in adds
# build_support/ to setuptools' defaults).
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE")
FOLDERS = ("build_support", "streamcite")


def _pip(*argv: str, env: dict[str, str] | None = None) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_tools()
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        shutil.copy2(ROOT / name, src / name)
    for name in FOLDERS:
        shutil.copytree(
            ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.so")
        )
    out = tmp_path_factory.mktemp("wheels")
    env = dict(os.environ, STREAMCITE_COMPILE="1")
    _pip("wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(src), env=env)
    (whl,) = out.glob("streamcite-*.whl")
    return whl


@pytest.fixture(scope="module")
def site(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    _pip("install", "--no-deps", "--no-index", "--target", str(target), str(wheel))
    return target


def test_the_wheel_is_a_platform_wheel_with_its_types(wheel: Path) -> None:
    # A pure wheel (py3-none-any) would mean the modules were silently not compiled.
    assert not wheel.name.endswith("-none-any.whl"), wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    assert "streamcite/py.typed" in names
    # The sources ship beside their extension modules: the reference, and the tracebacks.
    assert "streamcite/core/fastpath.py" in names


def test_every_listed_module_is_the_wheels_extension(site: Path) -> None:
    modules = [m.removesuffix(".py").replace("/", ".") for m in builder.compiled_modules()]
    code = "import importlib, sys\nfor m in sys.argv[1:]:\n    print(importlib.import_module(m).__file__)"
    res = run(site, "-c", code, *modules)
    assert res.returncode == 0, res.stderr[-3000:]
    files = res.stdout.split()
    assert len(files) == len(modules)
    assert [f for f in files if not (f.endswith(".so") and f.startswith(str(site)))] == []


def test_the_cli_says_the_core_is_compiled(site: Path) -> None:
    res = run(site, "-m", "streamcite.cli", "--version")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "core: mypyc" in res.stdout


def test_same_events_as_the_source(site: Path, tmp_path: Path) -> None:
    out = tmp_path / "wheel.json"
    res = run(site, "-m", "tests._compiled_cases", str(out))
    assert res.returncode == 0, res.stderr[-3000:]
    compiled = orjson.loads(out.read_bytes())
    pure = _compiled_cases.run()
    assert len(pure) >= 400
    assert compiled.keys() == pure.keys()
    differ = [k for k in pure if compiled[k] != pure[k]]
    assert differ == [], f"{len(differ)} cases differ, first: {differ[:5]}"
