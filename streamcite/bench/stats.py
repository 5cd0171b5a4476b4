"""Aggregates of a benchmark run: percentiles, throughput, error rate.

Pure functions over :class:`~streamcite.bench.runner.RunResult`; nothing here runs
while requests are in flight.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from streamcite.bench.runner import RequestRecord, RunResult

__all__ = ["DIST_KEYS", "METRICS", "distribution", "summarize"]

DIST_KEYS = ("count", "mean", "min", "p50", "p90", "p99", "max")
"""Keys of every distribution in a summary."""

METRICS = (
    "ttft_ms",
    "itl_ms",
    "tokens_per_s",
    "citations_ms",
    "sources_ms",
    "grounding_ms",
    "stream_ms",
    "total_ms",
    "queue_ms",
)
"""The distributions a summary holds, in display order."""


def distribution(values: Iterable[float]) -> dict[str, float | int | None]:
    """count, mean, min, p50, p90, p99, max (linear interpolation); ``None`` when empty."""
    arr = np.fromiter(values, dtype=np.float64)
    if arr.size == 0:
        return {"count": 0, **dict.fromkeys(DIST_KEYS[1:])}
    p50, p90, p99 = np.percentile(arr, [50.0, 90.0, 99.0])
    return {
        "count": int(arr.size),
        "mean": _r(arr.mean()),
        "min": _r(arr.min()),
        "p50": _r(p50),
        "p90": _r(p90),
        "p99": _r(p99),
        "max": _r(arr.max()),
    }


def _r(x: Any) -> float:
    return round(float(x), 3)


def _values(records: Sequence[RequestRecord], name: str) -> list[float]:
    out: list[float] = []
    for r in records:
        v = getattr(r, name)
        if v is not None:
            out.append(float(v))
    return out


def summarize(run: RunResult) -> dict[str, Any]:
    """The summary of one run (the ``summary`` object of ``results.json``).

    Distributions cover the requests that reached the stage (a request cut after its
    first token still has a TTFT); ``total_ms`` and ``tokens_per_s`` only cover
    successful requests, so failures that end early do not flatter them. Inter-token
    latencies are pooled over all tokens of all requests.
    """
    records = run.records
    ok = [r for r in records if r.ok]
    itl: list[float] = []
    for r in records:
        itl.extend(r.itl_ms())
    codes: Counter[str] = Counter()
    stages: Counter[str] = Counter()
    for r in records:
        for e in r.errors:
            codes[e.code] += 1
            stages[e.stage] += 1
    failed = len(records) - len(ok)
    tokens = sum(r.tokens for r in records)
    wall = run.wall_s
    latency = {
        "ttft_ms": distribution(_values(records, "ttft_ms")),
        "itl_ms": distribution(itl),
        "tokens_per_s": distribution(r.tokens_per_s for r in ok if r.tokens_per_s is not None),
        "citations_ms": distribution(_values(records, "citations_ms")),
        "sources_ms": distribution(_values(records, "sources_ms")),
        "grounding_ms": distribution(_values(records, "grounding_ms")),
        "stream_ms": distribution(_values(ok, "stream_ms")),
        "total_ms": distribution(_values(ok, "total_ms")),
        "queue_ms": distribution(_values(records, "queue_ms")),
    }
    return {
        "requests": len(records),
        "ok": len(ok),
        "failed": failed,
        "error_rate": round(failed / len(records), 6) if records else 0.0,
        "errors_by_code": dict(sorted(codes.items())),
        "errors_by_stage": dict(sorted(stages.items())),
        "wall_s": round(wall, 6),
        "throughput_rps": round(len(ok) / wall, 3) if wall > 0 else None,
        "output_tokens_per_s": round(tokens / wall, 3) if wall > 0 else None,
        "tokens": tokens,
        **latency,
        "client": {
            "loop_lag_ms": distribution(run.loop_lag_ms),
            "cpu_s": round(run.cpu_s, 6),
            "cpu_pct": round(100.0 * run.cpu_s / wall, 2) if wall > 0 else None,
        },
    }
