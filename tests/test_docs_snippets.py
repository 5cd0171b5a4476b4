"""Every Python block of README.md and docs/*.md runs, and every sample output shown under
one is what it prints.

The one convention for code blocks in the docs (info strings of the fence):

- ```python          a script. This test runs it as it is, as ``python block.py`` in a
                     subprocess (timeout 180 s), in a temporary folder holding a link to
                     ``examples/``, against a ``streamcite serve-local`` the test starts on an
                     ephemeral port: each ``http://127.0.0.1:8765`` in the block (the address
                     ``streamcite serve-local`` listens on by default, what a reader has
                     running) becomes the test's address, and ``STREAMCITE_LOCAL_URL`` points
                     at it. It must exit 0.
- ```python fragment a piece of a larger program (names defined around it): compiled (top-
                     level ``await`` allowed), never run. Use it only where a script would hide
                     the point; say in the prose what surrounds it.
- ```text output     directly under a script (blank lines only between): what the script
                     prints, compared line by line after normalising addresses
                     (``127.0.0.1:PORT``), durations (``N ms``, ``N s``) and trailing blanks;
                     a line that is exactly ``…`` stands for any number of lines.

- ```console output a ``$ streamcite …`` command line, then what it prints: the test runs the
                     command (from the repository's root, ``COLUMNS=100``, no colour) and
                     compares, normalised as above, the checkout's folder written ``/…``.

Any other info string (``console``, ``text``, ``json``…) is not checked here.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DEFAULT_ROOT = "http://127.0.0.1:8765"
_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    info: tuple[str, ...]
    code: str
    output: str | None  # the ```text output block right under it, if any

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT).as_posix()}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The page's Python blocks, each with the output block that follows it."""
    text = page.read_text(encoding="utf-8")
    fences = list(_FENCE.finditer(text))
    out: list[Block] = []
    for i, m in enumerate(fences):
        info = tuple(m.group(1).split())
        if not info or info[0] not in ("python", "py"):
            continue
        output = None
        if i + 1 < len(fences):
            nxt = fences[i + 1]
            between = text[m.end() : nxt.start()]
            if not between.strip() and tuple(nxt.group(1).split()) == ("text", "output"):
                output = nxt.group(2)
        line = text.count("\n", 0, m.start()) + 1
        out.append(Block(page, line, info, m.group(2), output))
    return out


ALL = [b for page in PAGES for b in blocks(page)]
SCRIPTS = [b for b in ALL if "fragment" not in b.info]
FRAGMENTS = [b for b in ALL if "fragment" in b.info]


def normalise(text: str, folder: Path | None = None) -> list[str]:
    if folder is not None:
        text = text.replace(str(folder), ".")
    text = re.sub(r"(127\.0\.0\.1|localhost):\d+", r"\1:PORT", text)
    text = re.sub(r"\b\d+(?:\.\d+)?(?:–\d+(?:\.\d+)?)? ?(ms|s)\b", r"N \1", text)
    return [line.rstrip() for line in text.rstrip().splitlines()]


def matches(expected: list[str], got: list[str]) -> bool:
    """``expected`` equals ``got``, a line ``…`` standing for any number of lines."""
    if not expected:
        return not got
    if expected[0] == "…":
        return any(matches(expected[1:], got[k:]) for k in range(len(got) + 1))
    return bool(got) and expected[0] == got[0] and matches(expected[1:], got[1:])


@pytest.fixture(scope="module")
def serve_local() -> Iterator[str]:
    """``streamcite serve-local --port 0`` in its own process; yields its root URL."""
    exe = Path(sys.executable).with_name("streamcite")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "streamcite.cli"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [*cmd, "serve-local", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # "streamcite local backend on http://127.0.0.1:N"
        m = re.search(r"http://127\.0\.0\.1:\d+", first)
        assert m, (first, proc.stderr.read() if proc.stderr else "")
        yield m.group(0)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def run(block: Block, root_url: str, folder: Path) -> subprocess.CompletedProcess[str]:
    (folder / "examples").symlink_to(ROOT / "examples")
    script = folder / "block.py"
    script.write_text(block.code.replace(DEFAULT_ROOT, root_url), encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "STREAMCITE_LOCAL_URL": root_url,
        "COLUMNS": "200",
        "NO_COLOR": "1",
    }
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.mark.parametrize("block", SCRIPTS, ids=lambda b: b.name)
def test_every_python_block_runs_as_a_script(
    block: Block, serve_local: str, tmp_path: Path
) -> None:
    done = run(block, serve_local, tmp_path)
    assert done.returncode == 0, f"{block.name} exited {done.returncode}:\n{done.stderr[-3000:]}"
    if block.output is not None:
        want = normalise(block.output)
        got = normalise(done.stdout, tmp_path)
        assert matches(want, got), (
            f"{block.name}: the sample output under it is not what it prints:\n" + "\n".join(got)
        )


def console_outputs() -> list[tuple[str, str, str]]:
    """(where, command, expected output) of every ```console output block."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in _FENCE.finditer(text):
            if tuple(m.group(1).split()) == ("console", "output"):
                first, _, rest = m.group(2).partition("\n")
                where = (
                    f"{page.relative_to(ROOT).as_posix()}:{text.count(chr(10), 0, m.start()) + 1}"
                )
                found.append((where, first.removeprefix("$ "), rest))
    return found


@pytest.mark.parametrize(
    "where,command,expected", [pytest.param(*c, id=c[0]) for c in console_outputs()]
)
def test_every_console_sample_is_what_the_command_prints(
    where: str, command: str, expected: str
) -> None:
    words = shlex.split(command)
    assert words[0] in ("streamcite", ".venv/bin/streamcite"), f"{where}: not a streamcite command"
    assert words[1] not in ("serve-local", "relay"), f"{where}: servers do not end"
    exe = Path(sys.executable).with_name("streamcite")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
    done = subprocess.run(
        [str(exe), *words[1:]], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    got = normalise(done.stdout.replace(str(ROOT), "/…"))
    assert matches(normalise(expected), got), (
        f"{where}: the sample is not what it prints:\n" + "\n".join(got)
    )


@pytest.mark.parametrize("block", FRAGMENTS, ids=lambda b: b.name)
def test_every_fragment_at_least_compiles(block: Block) -> None:
    compile(block.code, block.name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


def test_the_docs_have_scripts_and_outputs() -> None:
    assert len(SCRIPTS) >= 15, [b.name for b in SCRIPTS]
    assert sum(b.output is not None for b in SCRIPTS) >= 5
    assert len(FRAGMENTS) <= len(SCRIPTS) // 2, "most examples should run as they are"


def test_the_conventions_are_enforced(tmp_path: Path) -> None:
    """The parser tells scripts, fragments and outputs apart; the matcher catches drift."""
    page = tmp_path / "p.md"
    page.write_text(
        "```python\nprint(1)\n```\n\n```text output\n1\n```\n"
        "```python fragment\nawait x\n```\n```text\nnot an output\n```\n"
        "```python\nprint(2)\n```\nprose\n```text output\n2\n```\n",
        encoding="utf-8",
    )
    found = blocks(page)
    assert [(b.info, b.output) for b in found] == [
        (("python",), "1\n"),
        (("python", "fragment"), None),
        (("python",), None),  # prose between: not its output
    ]
    assert matches(normalise("a\n…\nd"), normalise("a\nb\nc\nd"))
    assert matches(
        normalise("took 12.5 ms on 127.0.0.1:8765"), normalise("took 3 ms on 127.0.0.1:4242")
    )
    assert not matches(normalise("a\nb"), normalise("a\nc"))
    assert not matches(normalise("a"), normalise("a\nb"))
