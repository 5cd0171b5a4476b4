"""What a stream costs once, whatever its length: per dialect, in instructions, the parser
created, one text event fed, ``close`` and ``done_event`` — each step on its own.

A real answer has a few dozen to a few hundred events, so these fixed costs weigh as much
as the per-event loop (``bench_recordings.py`` measures both together). Each step is
measured with cachegrind as (2N streams − N streams) ÷ N taken up to the step, less the
same for the step before, so start-up, imports and first-call warm-up cancel out.

Run: ``.venv/bin/python benchmarks/bench_fixed.py [--dialects chat anthropic] [-n 2000]``
(needs ``valgrind``; a few seconds per dialect). ``--run DIALECT STEP N`` is the measured
inner loop (what valgrind runs).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from instructions import valgrind_irefs

HERE = Path(__file__).resolve().parent

ONE_EVENT: dict[str, bytes] = {
    "chat": b'data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":'
    b'[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\n',
    "responses": b"event: response.output_text.delta\ndata: "
    b'{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,'
    b'"content_index":0,"delta":"Hi","sequence_number":4}\n\n',
    "anthropic": b"event: content_block_delta\ndata: "
    b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}\n\n',
    "gemini": b'data: {"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},'
    b'"index":0}],"modelVersion":"gemini-2.0-flash"}\n\n',
    "cohere": b'event: content-delta\ndata: {"type":"content-delta","index":0,'
    b'"delta":{"message":{"content":{"text":"Hi"}}}}\n\n',
}
"""One text delta per dialect, as its provider sends it (written for this benchmark)."""

STEPS = ["none", "new", "feed", "close", "done"]


def run(dialect: str, step: str, n: int) -> None:
    """``n`` streams, each taken up to ``step`` (``none``: the loop alone)."""
    from streamcite.core.api import ChatStreamParser

    upto = STEPS.index(step)
    body = ONE_EVENT[dialect]
    for _ in range(n):
        if upto < 1:
            continue
        p = ChatStreamParser(dialect=dialect)  # type: ignore[arg-type]
        if upto >= 2:
            p.feed(body)
        if upto >= 3:
            p.close()
        if upto >= 4:
            p.done_event()


def irefs(dialect: str, step: str, n: int) -> int:
    env = dict(os.environ, PYTHONHASHSEED="0")
    return valgrind_irefs([__file__, "--run", dialect, step, str(n)], env)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--dialects", nargs="*", default=list(ONE_EVENT))
    ap.add_argument("-n", type=int, default=1000, help="streams counted per step")
    ap.add_argument("--run", nargs=3, metavar=("DIALECT", "STEP", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run:
        run(args.run[0], args.run[1], int(args.run[2]))
        return
    print(f"instructions per stream, step by step ({args.n} streams counted)")
    print(f"{'dialect':<10}" + "".join(f"{s:>9}" for s in STEPS[1:]) + f"{'total':>9}")
    for d in args.dialects:
        # Per stream up to each step: the runs of 2n and n streams differ by n streams
        # (start-up, imports and first-call warm-up cancel out).
        counts = [(irefs(d, s, 2 * args.n) - irefs(d, s, args.n)) / args.n for s in STEPS]
        steps = [b - a for a, b in itertools.pairwise(counts)]
        print(f"{d:<10}" + "".join(f"{v:9,.0f}" for v in steps) + f"{sum(steps):9,.0f}", flush=True)


if __name__ == "__main__":
    main()
