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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "build" / "compiled"

sys.path.insert(0, str(ROOT / "build_support"))
import streamcite_compiled as _compiled  # noqa: E402  (the project's one reading of the module list)


def compiled_modules(root: Path = ROOT) -> list[str]:
    """The module paths (``streamcite/core/sse.py``, ...) mypyc compiles."""
    return _compiled.compiled_modules(root)


def source_hash(root: Path, modules: list[str]) -> str:
    """A hash of every source file, of the module list and of the build's options: what
    the build depends on."""
    h = hashlib.sha256("\n".join(modules).encode())
    h.update((root / "build_support" / "streamcite_compiled.py").read_bytes())
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
sys.path.insert(0, sys.argv[1])
from streamcite_compiled import mypyc_extensions
setup(
    name="streamcite-compiled",
    packages=[],
    ext_modules=mypyc_extensions(sys.argv[2:]),
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
        [sys.executable, "-c", _SETUP, str(ROOT / "build_support"), *modules],
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
