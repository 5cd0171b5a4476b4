"""Build streamcite with its hot core compiled by mypyc, into a folder of its own.

The modules listed under ``[tool.streamcite.compiled]`` in ``pyproject.toml`` are the
ones a stream's every byte goes through (the SSE decoder, the dialect interpreters,
the template matchers). mypyc compiles the same typed source to C extensions; the pure
Python modules stay the reference and the fallback.

The build goes to a separate folder (a copy of ``streamcite/`` with the ``.so`` files
beside the sources), never into the checkout: an extension module next to its ``.py``
wins the import, and an edit to the source would then silently not count. Use it with
``PYTHONPATH=build/compiled``. The folder is rebuilt only when a source changed (a
hash of every ``.py`` file and of the module list is kept beside it).

Run: ``python scripts/build_compiled.py [--out build/compiled]`` (needs mypy, which
brings mypyc, and a C compiler; about a minute on two cores).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "build" / "compiled"


def compiled_modules(root: Path = ROOT) -> list[str]:
    """The module paths (``streamcite/core/sse.py``, ...) mypyc compiles."""
    with (root / "pyproject.toml").open("rb") as f:
        table = tomllib.load(f)["tool"]["streamcite"]["compiled"]
    return list(table["modules"])


def source_hash(root: Path, modules: list[str]) -> str:
    """A hash of every source file and of the module list: what the build depends on."""
    h = hashlib.sha256("\n".join(modules).encode())
    for path in sorted((root / "streamcite").rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


# The build runs in a child process with the copy as its working directory, so that
# setuptools reads no pyproject.toml (the project's own metadata needs a newer
# setuptools than a development venv may have; this build needs none of it).
_SETUP = """
import sys
from setuptools import setup
from mypyc.build import mypycify
setup(
    name="streamcite-compiled",
    packages=[],
    ext_modules=mypycify(
        sys.argv[1:], opt_level="3", debug_level="0", group_name="streamcite_core"
    ),
    script_args=["build_ext", "--inplace"],
)
"""


def build(out: Path = DEFAULT_OUT, *, quiet: bool = True) -> Path:
    """Build (or reuse) the compiled copy in ``out``; return ``out``."""
    modules = compiled_modules()
    want = source_hash(ROOT, modules)
    stamp = out / ".source-hash"
    if stamp.exists() and stamp.read_text() == want:
        return out
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(
        ROOT / "streamcite",
        out / "streamcite",
        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyc"),
    )
    env = dict(os.environ, PYTHONPATH="")
    res = subprocess.run(
        [sys.executable, "-c", _SETUP, *modules],
        cwd=out,
        env=env,
        capture_output=quiet,
        text=True,
        timeout=900,
    )
    if res.returncode != 0:
        tail = (res.stdout or "")[-3000:] + (res.stderr or "")[-3000:]
        raise SystemExit(f"mypyc build failed (exit {res.returncode}):\n{tail}")
    shutil.rmtree(out / "build", ignore_errors=True)
    stamp.write_text(want)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the folder to build into")
    ap.add_argument("-v", "--verbose", action="store_true", help="show the compiler's output")
    args = ap.parse_args()
    out = build(args.out.resolve(), quiet=not args.verbose)
    print(out)


if __name__ == "__main__":
    main()
