"""Instructions per relayed event, the pure-Python relay and the compiled build side by side.

CPU time moves with the machine's load; instruction counts (valgrind's cachegrind) do not.
For each build and loop this runs ``relay_inproc.py`` (the relay's own work per event, in
one process, no network) under cachegrind at two round counts and takes the difference,
so the interpreter's start-up, the imports and the first round's warm-up cancel out: what
is left is ``--rounds`` rounds of ``--streams`` streams of ``--tokens`` tokens, set-up and
``done`` included, divided by the events they logged.

A build is ``NAME=PATH``: ``PATH`` goes first on ``PYTHONPATH`` (the checkout for the pure
modules, ``build/compiled`` for the mypyc build of ``scripts/build_compiled.py``).

Run: ``.venv/bin/python benchmarks/relay_instructions.py --builds pure=. compiled=build/compiled
[--loops asyncio uvloop] [--streams 100] [--tokens 100] [--rounds 2]`` (needs ``valgrind``;
about a minute per build and loop).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def irefs(
    path: str, loop: str, streams: int, tokens: int, rounds: int, push: bool = False
) -> tuple[int, int]:
    """Instructions valgrind counts for ``relay_inproc.py`` with ``rounds`` rounds (start-up
    included), and the events a round logs."""
    cmd = [
        "valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
        sys.executable, str(HERE / "relay_inproc.py"), "--loop", loop, "--no-parse",
        "--streams", str(streams), "--tokens", str(tokens), "--rounds", str(rounds),
    ] + (["--push"] if push else [])  # fmt: skip
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONPATH=str(Path(path).resolve()))
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True, cwd="/")
    m = re.search(r"I\s+refs:\s+([\d,]+)", res.stderr)
    e = re.search(r"(\d+) events a round", res.stdout)
    if m is None or e is None:
        raise SystemExit(f"no instruction count in valgrind's output:\n{res.stderr[-2000:]}")
    return int(m.group(1).replace(",", "")), int(e.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--builds", nargs="+", default=["pure=."], help="NAME=PATH ...")
    ap.add_argument("--loops", nargs="+", default=["asyncio", "uvloop"])
    ap.add_argument("--streams", type=int, default=100)
    ap.add_argument("--tokens", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=2, help="rounds counted (the difference)")
    ap.add_argument(
        "--push", action="store_true", help="the upstream's reads pushed (push transport)"
    )
    args = ap.parse_args()
    builds = [b.split("=", 1) for b in args.builds]
    print(f"{args.streams} streams × {args.tokens} tokens; instructions per event = "
          f"(I refs at {args.rounds + 1} rounds − at 1) ÷ events")  # fmt: skip
    print(f"{'loop':<8} " + "  ".join(f"{name:>12}" for name, _ in builds) + "  ratios")
    for loop in args.loops:
        per: list[float] = []
        for _, path in builds:
            hi, events = irefs(path, loop, args.streams, args.tokens, args.rounds + 1, args.push)
            lo, _ = irefs(path, loop, args.streams, args.tokens, 1, args.push)
            per.append((hi - lo) / (events * args.rounds))
        ratios = "  ".join(f"{p / per[0]:.2f}×" for p in per[1:])
        print(f"{loop:<8} " + "  ".join(f"{p:12,.0f}" for p in per) + f"  {ratios}", flush=True)


if __name__ == "__main__":
    main()
