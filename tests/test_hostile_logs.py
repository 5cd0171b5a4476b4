"""Logged tracebacks carry no local variables and log lines are bounded, in every
command's logging set-up (docs/security.md, "Nested, oversized and flooding upstream
events")."""

from __future__ import annotations

import resource
import subprocess
import sys

SCRIPT = r"""
import sys
from streamcite.logs import configure_logging, get_logger
if sys.argv[1] != "quiet":
    configure_logging("INFO", json=sys.argv[1] == "json")
log = get_logger()

def relay_stream():
    upstream = '{"a":' * 900 + '"SECRETLOCAL' + 'z' * 4000 + '"' + '}' * 900
    nested = [[[[{"deep": "LOCALVALUE" * 10000}]]]] * 2000
    raise ValueError("stream failed")

try:
    relay_stream()
except ValueError:
    log.exception("relay.stream.failed", stream_id="s1", body="B" * 1_000_000, obj=[[["x"]]] * 100000)
"""


def _stderr(mode: str) -> tuple[bytes, float]:
    """The script's stderr and the CPU time it took (a loaded machine stretches its wall
    time, not its work)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return run.stderr, cpu


def test_logged_traceback_has_no_locals_and_is_bounded() -> None:
    for mode in ("console", "json", "quiet"):
        err, took = _stderr(mode)
        assert b"relay.stream.failed" in err and b"stream failed" in err
        assert b"LOCALVALUE" not in err and b"SECRETLOCAL" not in err  # no locals
        assert len(err) < 32 * 1024, (mode, len(err))  # old (rich, locals): megabytes
        assert took < 10
