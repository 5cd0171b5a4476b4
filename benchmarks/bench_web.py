"""What the AI SDK UI message stream adds per token over the core's own event.

Per token: ``UIMessageEncoder.feed(TokenEvent)`` (one ``orjson.dumps`` of the text and the
SSE frame around it), next to the core's wire form ``orjson.dumps(event)`` and the core
parser's per-token cost on a recorded stream. Budget: the adapter adds <= 1 µs per token.

    .venv/bin/python benchmarks/bench_web.py [--tokens 200000]
"""

from __future__ import annotations

import argparse
import statistics
import time

import orjson

from streamcite.core.api import ChatStreamParser
from streamcite.events import TokenEvent
from streamcite.web import UIMessageEncoder

BUDGET_US = 1.0


def per_token_us(fn, n: int, repeats: int = 7) -> float:  # type: ignore[no-untyped-def]
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=200_000)
    n = ap.parse_args().tokens
    events = [
        TokenEvent(text=f" word{i % 97} [{i % 5 + 1}]" if i % 9 == 0 else f" w{i}")
        for i in range(n)
    ]

    def adapter() -> None:
        enc = UIMessageEncoder("m")
        enc.start()
        feed = enc.feed
        for ev in events:
            feed(ev)

    def wire() -> None:
        for ev in events:
            orjson.dumps(ev)

    chunks = b"".join(
        b"data: "
        + orjson.dumps({"id": "c", "choices": [{"index": 0, "delta": {"content": ev.text}}]})
        + b"\n\n"
        for ev in events
    )

    def core() -> None:
        parser = ChatStreamParser("keep")
        parser.feed(chunks)

    a, w, c = per_token_us(adapter, n), per_token_us(wire, n), per_token_us(core, n, 3)
    print(f"tokens per run               {n}")
    print(f"core parser (bytes -> event) {c:8.3f} µs/token")
    print(f"core wire JSON (dumps event) {w:8.3f} µs/token")
    print(f"UI message stream adapter    {a:8.3f} µs/token  (budget {BUDGET_US} µs)")
    print("PASS" if a <= BUDGET_US else "OVER BUDGET")


if __name__ == "__main__":
    main()
