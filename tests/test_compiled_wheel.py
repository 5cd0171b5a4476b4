"""The compiled wheel: ``STREAMCITE_COMPILE=1 pip wheel .`` is what a user installs.

The project's build backend makes the source distribution from a copy of the tracked
files (what ``MANIFEST.in`` puts in it is what the wheel is built from), pip builds the
wheel from that archive, installs it alone into a folder, and a child process runs it
from there: every listed module is an extension module of the
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

import pytest

from tests._compiled_build import (
    ROOT,
    cases_there_and_here,
    listed_module_files,
    require_tools,
    run,
)

pytestmark = pytest.mark.timeout(1500)


def _pip(*argv: str, env: dict[str, str] | None = None) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]


def _sdist(into: Path, tmp: Path) -> Path:
    """The source distribution, made by the project's build backend from a copy of the
    tracked files (the backend writes its egg-info where it runs: not in the checkout)."""
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
    ).stdout.decode()
    tree = tmp / "tree"
    for name in filter(None, tracked.split("\0")):
        if (ROOT / name).is_file():  # (a file deleted in the work tree is not copied)
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tree / name)
    code = "import sys, streamcite_build as b; print(b.build_sdist(sys.argv[1]))"
    res = subprocess.run(
        [sys.executable, "-c", code, str(into)],
        cwd=tree,
        env=dict(os.environ, PYTHONPATH=str(tree / "build_support")),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return into / res.stdout.split()[-1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_tools()
    sdist = _sdist(tmp_path_factory.mktemp("sdist"), tmp_path_factory.mktemp("copy"))
    out = tmp_path_factory.mktemp("wheels")
    env = dict(os.environ, STREAMCITE_COMPILE="1")
    _pip("wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(sdist), env=env)
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
    # The sources ship beside their extension modules (the reference, and the
    # tracebacks): every tracked file of the package is in the wheel.
    tracked = subprocess.run(
        ["git", "ls-files", "streamcite"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    missing = [f for f in tracked if (ROOT / f).is_file() and f not in names]
    assert len(tracked) > 100 and missing == []


def test_every_listed_module_is_the_wheels_extension(site: Path) -> None:
    modules, files = listed_module_files(site)
    assert len(files) == len(modules)
    assert [f for f in files if not (f.endswith(".so") and f.startswith(str(site)))] == []


def test_the_cli_says_the_core_is_compiled(site: Path) -> None:
    res = run(site, "-m", "streamcite.cli", "--version")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "core: mypyc" in res.stdout


def test_same_events_as_the_source(site: Path, tmp_path: Path) -> None:
    compiled, pure = cases_there_and_here(site, tmp_path / "wheel.json")
    assert len(pure) >= 400
    assert compiled.keys() == pure.keys()
    differ = [k for k in pure if compiled[k] != pure[k]]
    assert differ == [], f"{len(differ)} cases differ, first: {differ[:5]}"
