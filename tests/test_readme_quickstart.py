"""The README's first commands and its quick start work as written, in a fresh shell.

The README opens with ``make demo`` and ``make test`` (both Makefile targets). Its "Quick
start" section's shell commands (``$ `` lines of its ``console`` blocks) are read from the
README and run here, each in a fresh ``sh`` with an empty environment (``PATH=/usr/bin:/bin``
only: no activated venv), from a folder laid out as a clone after ``make demo``: ``.venv``
(this test's interpreter's environment) and ``examples/``. Two changes, both to keep ports
ephemeral: ``serve-local`` gets ``--port 0`` appended, and a command running an example
gets the server's address appended as its argument (what the example's docstring documents).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)


def section(title: str) -> str:
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", README, re.M | re.S)
    assert m, f"README has no '## {title}' section"
    return m.group(1)


def shell_commands(text: str) -> list[str]:
    cmds = []
    for lang, body in _FENCE.findall(text):
        if lang in ("console", "sh", "bash", "shell"):
            for line in body.splitlines():
                if line.startswith("$ "):
                    cmds.append(line[2:].split("  #", 1)[0].strip())
    return cmds


def make_targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([\w-]+):", makefile, re.M))


def test_the_first_two_commands_are_make_demo_and_make_test() -> None:
    lang, body = _FENCE.findall(README)[0]
    assert lang == "console"
    firsts = [line.split()[:2] for line in body.splitlines() if line.strip()]
    assert firsts[:2] == [["make", "demo"], ["make", "test"]], firsts
    assert {"demo", "test"} <= make_targets()


def test_every_command_the_readme_names_exists_as_written() -> None:
    """``make X`` is a target; ``.venv/bin/X`` is installed by the project; ``examples/…``
    files exist."""
    targets = make_targets()
    venv_bin = Path(sys.executable).parent
    cmds = shell_commands(README)
    assert cmds, "the README shows no shell command"
    for cmd in cmds:
        words = cmd.split()
        if words[0] == "make":
            assert words[1] in targets, cmd
        elif words[0].startswith(".venv/bin/"):
            assert (venv_bin / words[0].removeprefix(".venv/bin/")).exists(), cmd
        else:
            assert words[0] in ("git", "cd", "source", ".", "curl"), (
                f"not runnable as written: {cmd}"
            )
        for word in words[1:]:
            if word.startswith("examples/"):
                assert (ROOT / word).exists(), cmd


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A folder laid out as a clone after ``make demo`` (also its ``HOME``).

    ``make demo``'s ``streamcite ask --demo`` checked an answer offline, which left the
    checker's parsed lexicon in ``~/.cache/streamcite``: the quick start reads it back in
    a fraction of a second. Parsed from scratch instead (0.5-3 s on a quiet machine), it
    would eat into the quick start's grounding timeout (5 s), which a loaded machine can
    then exceed: the cache is made here, with no timeout, as ``make demo`` leaves it."""
    (tmp_path / ".venv").symlink_to(Path(sys.executable).parent.parent)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    warm = ".venv/bin/python -c 'from streamcite.grounding import lexicon; lexicon.warm((\"en\",))'"
    done = subprocess.run(
        fresh_shell(warm, tmp_path), cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert list((tmp_path / ".cache" / "streamcite" / "lexicon").glob("en-*.json"))
    return tmp_path


def fresh_shell(cmd: str, folder: Path) -> list[str]:
    # PYTHONPATH: the tree under test (the same as .venv's editable install on a clone)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(folder), "PYTHONPATH": str(ROOT)}
    return ["env", "-i", *(f"{k}={v}" for k, v in env.items()), "sh", "-c", cmd]


def test_the_quick_start_runs_verbatim_in_a_fresh_shell(clone: Path) -> None:
    cmds = shell_commands(section("Quick start"))
    server = [c for c in cmds if c.split()[1:2] == ["serve-local"]]
    assert server, f"the quick start starts no serve-local: {cmds}"
    assert all(" serve-local" not in c or c.startswith(".venv/bin/") for c in cmds), cmds
    proc = subprocess.Popen(
        fresh_shell(f"exec {server[0]} --port 0", clone),
        cwd=clone,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:\d+", first)
        assert m, (first, proc.stderr.read() if proc.stderr else "")
        url = m.group(0)
        ran = 0
        for cmd in cmds:
            if cmd in server:
                continue
            if "examples/" in cmd:
                cmd = f"{cmd} {url}"
            done = subprocess.run(
                fresh_shell(cmd, clone), cwd=clone, capture_output=True, text=True, timeout=120
            )
            assert done.returncode == 0, (cmd, done.stdout[-1000:], done.stderr[-2000:])
            if "quickstart.py" in cmd:
                assert "Employees may work remotely" in done.stdout, done.stdout
                assert "citations:" in done.stdout and "[1]" in done.stdout, done.stdout
                assert "support score" in done.stdout, done.stdout
            ran += 1
        assert ran >= 1, cmds
    finally:
        proc.terminate()
        proc.wait(timeout=10)
