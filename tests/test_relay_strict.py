"""``relay --strict``: a corpus file that is not UTF-8 fails the start, as with ``ask`` and
``serve-local``; without it the file is skipped with a warning (issue 17 §4)."""

from __future__ import annotations

import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

RELAY = [sys.executable, "-m", "streamcite.cli", "relay", "--port", "0"]


@pytest.fixture
def mixed_corpus(tmp_path: Path) -> Path:
    (tmp_path / "good.md").write_text("# Bikes\n\nThe company pays 300 euros for a bicycle.\n")
    (tmp_path / "latin1.txt").write_bytes("Café crème à 2 €".encode("latin-1", "replace"))
    return tmp_path


def test_relay_strict_fails_on_a_latin1_file(mixed_corpus: Path) -> None:
    r = subprocess.run(
        [*RELAY, "--strict", "--corpus", str(mixed_corpus)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
    assert f"{(mixed_corpus / 'latin1.txt').resolve()}: not UTF-8" in r.stderr


def test_relay_without_strict_skips_it_with_a_warning(mixed_corpus: Path) -> None:
    proc = subprocess.Popen(
        [*RELAY, "--corpus", str(mixed_corpus)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    expected = f"warning: skipped {(mixed_corpus / 'latin1.txt').resolve()}: not UTF-8"
    seen = ""
    try:
        assert proc.stderr is not None
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stderr, selectors.EVENT_READ)
            deadline = time.monotonic() + 60
            while expected not in seen and time.monotonic() < deadline:
                if sel.select(timeout=deadline - time.monotonic()):
                    line = proc.stderr.readline()
                    if not line:
                        break  # the relay ended
                    seen += line
        assert expected in seen, seen
        assert proc.poll() is None, seen  # still serving
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert "Traceback" not in seen
