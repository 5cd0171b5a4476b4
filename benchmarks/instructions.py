"""Instructions per SSE event on the real recordings, per dialect: streamcite and the floor.

CPU time moves with the machine's load; instruction counts (valgrind's cachegrind) do not.
For each dialect and each implementation (``ours``, ``floor``) this runs
``bench_recordings.py --only IMPL`` under cachegrind at two repeat counts and takes the
difference, so the interpreter's start-up and the imports cancel out: what is left is
``repeat`` passes over the recordings, everything a stream costs included (parser
creation to the ``done`` event).

Run: ``.venv/bin/python benchmarks/instructions.py [--dialects chat anthropic]
[--recordings DIR] [--repeat 10]`` (needs ``valgrind``; about 20 s per dialect).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_recordings

from streamcite.core.build import core_build  # the children run the same build

HERE = Path(__file__).resolve().parent


def valgrind_irefs(argv: list[str], env: dict[str, str]) -> int:
    """Instructions valgrind counts for ``python argv...`` (start-up included)."""
    cmd = [
        "valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
        sys.executable, *argv,
    ]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    m = re.search(r"I\s+refs:\s+([\d,]+)", res.stderr)
    if m is None:
        raise SystemExit(f"no instruction count in valgrind's output:\n{res.stderr[-2000:]}")
    return int(m.group(1).replace(",", ""))


def irefs(impl: str, dialect: str, repeat: int, env: dict[str, str]) -> int:
    """Instructions valgrind counts for ``repeat`` passes (plus the start-up)."""
    argv = [str(HERE / "bench_recordings.py"), "--only", impl, "--dialects", dialect]
    return valgrind_irefs([*argv, "--repeat", str(repeat)], env)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--dialects", nargs="*", default=bench_recordings.DIALECT_ORDER)
    ap.add_argument("--repeat", type=int, default=10, help="passes counted (the difference)")
    ap.add_argument("--recordings", help="a folder of DIALECT__NAME.sse files")
    args = ap.parse_args()
    env = dict(os.environ, PYTHONHASHSEED="0")
    if args.recordings:
        env["STREAMCITE_DIALECT_RECORDINGS"] = args.recordings
    root = Path(args.recordings) if args.recordings else bench_recordings.recordings_dir()
    recs = bench_recordings.load(root)
    print(f"recordings: {root}; instructions per pass = (I refs at {args.repeat + 2} − at 2) "
          f"÷ {args.repeat}; core: {core_build()}")  # fmt: skip
    print(f"{'dialect':<10} {'files':>5} {'events':>6}  {'floor/event':>11}  {'ours/event':>10}"
          f"  {'×floor':>6}  {'ours/stream':>11}")  # fmt: skip
    for d in args.dialects:
        if d not in recs:
            continue
        per: dict[str, float] = {}
        for impl in ("floor", "ours"):
            hi = irefs(impl, d, args.repeat + 2, env)
            lo = irefs(impl, d, 2, env)
            per[impl] = (hi - lo) / args.repeat
        events = sum(n for *_, n in recs[d])
        files = len(recs[d])
        print(f"{d:<10} {files:>5} {events:>6}  {per['floor'] / events:11,.0f}"
              f"  {per['ours'] / events:10,.0f}  {per['ours'] / per['floor']:5.2f}×"
              f"  {per['ours'] / files:11,.0f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
