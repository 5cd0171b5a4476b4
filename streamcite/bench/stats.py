"""Aggregates of a benchmark run: percentiles, throughput, token counts, error rate.

Pure functions over :class:`~streamcite.bench.records.RunResult`; nothing here runs
while requests are in flight.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from streamcite.bench.records import RequestRecord, RunResult

__all__ = [
    "DEFAULT_PERCENTILES",
    "DIST_KEYS",
    "METRICS",
    "achieved_rate",
    "distribution",
    "pct_key",
    "summarize",
]

DEFAULT_PERCENTILES: tuple[float, ...] = (50.0, 90.0, 99.0)
"""Always in every distribution (the schema's ``p50``, ``p90``, ``p99``)."""

DIST_KEYS = ("count", "mean", "min", "p50", "p90", "p99", "max")
"""Keys every distribution in a summary has (``std`` and any ``--percentiles`` extra
are added)."""

METRICS = (
    "ttft_ms",
    "itl_ms",
    "tokens_per_s",
    "citations_ms",
    "sources_ms",
    "grounding_ms",
    "first_claim_ms",
    "stream_ms",
    "total_ms",
    "queue_ms",
    "reasoning_ms",
    "tpot_ms",
    "e2e_ms",
    "input_tokens",
    "output_tokens",
    "reasoning_tokens",
    "output_tokens_per_s_per_request",
    "citations_per_answer",
    "sources_per_answer",
    "support_score",
)
"""The distributions a summary holds."""


def pct_key(q: float) -> str:
    """``50`` → ``p50``, ``99.9`` → ``p99.9``."""
    return f"p{q:g}"


def distribution(
    values: Iterable[float], percentiles: Sequence[float] = DEFAULT_PERCENTILES
) -> dict[str, float | int | None]:
    """count, mean, std (population), min, the percentiles (p50, p90, p99 always;
    linear interpolation), max; ``None`` when empty."""
    qs = sorted({*DEFAULT_PERCENTILES, *percentiles})
    arr = np.fromiter(values, dtype=np.float64)
    keys = [pct_key(q) for q in qs]
    if arr.size == 0:
        return {"count": 0, "mean": None, "std": None, "min": None, **dict.fromkeys(keys),
                "max": None}  # fmt: skip
    ps = np.percentile(arr, qs)
    return {
        "count": int(arr.size),
        "mean": _r(arr.mean()),
        "std": _r(arr.std()),
        "min": _r(arr.min()),
        **{k: _r(p) for k, p in zip(keys, ps, strict=True)},
        "max": _r(arr.max()),
    }


def _r(x: Any) -> float:
    return round(float(x), 3)


def _values(records: Iterable[RequestRecord], name: str) -> list[float]:
    out: list[float] = []
    for r in records:
        v = getattr(r, name)
        if v is not None:
            out.append(float(v))
    return out


def achieved_rate(run: RunResult) -> float | None:
    """Open loop: requests actually sent per second over the sending span (the offered
    rate when the client kept its schedule)."""
    n, span = len(run.records), run.send_span_s
    if run.load.rate is None or n < 2 or not span or span <= 0:
        return None
    return (n - 1) / span


def _token_source(records: Sequence[RequestRecord], name: str = "output") -> str | None:
    sources = {getattr(r, f"{name}_tokens_source") for r in records}
    sources.discard(None)
    if not sources:
        return None
    return sources.pop() if len(sources) == 1 else "mixed"


def _errors(records: Sequence[RequestRecord]) -> tuple[dict[str, int], dict[str, int]]:
    codes: Counter[str] = Counter()
    stages: Counter[str] = Counter()
    for r in records:
        for e in r.errors:
            codes[e.code] += 1
            stages[e.stage] += 1
    return dict(sorted(codes.items())), dict(sorted(stages.items()))


MAX_MESSAGES = 8
"""Error codes whose first message the summary keeps (the most frequent first)."""


def _messages(records: Sequence[RequestRecord], codes: dict[str, int]) -> dict[str, str]:
    """Error code -> the first message seen with it (at most :data:`MAX_MESSAGES` codes,
    the most frequent; records carry them already made one line and clipped)."""
    wanted = sorted(codes, key=lambda c: (-codes[c], c))[:MAX_MESSAGES]
    out: dict[str, str] = {}
    for r in records:
        for e in r.errors:
            if e.message and e.code in wanted and e.code not in out:
                out[e.code] = e.message
    return {c: out[c] for c in wanted if c in out}


def _latency(
    records: Sequence[RequestRecord], ok: Sequence[RequestRecord], qs: Sequence[float]
) -> dict[str, Any]:
    itl: list[float] = []
    for r in records:
        itl.extend(r.itl_ms())
    grounded = [r for r in records if r.grounding_ms is not None]
    return {
        "ttft_ms": distribution(_values(records, "ttft_ms"), qs),
        "itl_ms": distribution(itl, qs),
        "tokens_per_s": distribution(_values(ok, "tokens_per_s"), qs),
        "citations_ms": distribution(_values(records, "citations_ms"), qs),
        "sources_ms": distribution(_values(records, "sources_ms"), qs),
        "grounding_ms": distribution(_values(records, "grounding_ms"), qs),
        "first_claim_ms": distribution(_values(records, "first_claim_ms"), qs),
        "stream_ms": distribution(_values(ok, "stream_ms"), qs),
        "total_ms": distribution(_values(ok, "total_ms"), qs),
        "queue_ms": distribution(_values(records, "queue_ms"), qs),
        "reasoning_ms": distribution(_values(records, "reasoning_ms"), qs),
        "tpot_ms": distribution(_values(ok, "tpot_ms"), qs),
        "e2e_ms": distribution(
            _values(ok, "e2e_ms") if any(r.queue_ms is not None for r in ok) else [], qs
        ),
        "input_tokens": distribution(_values(records, "input_tokens"), qs),
        "output_tokens": distribution(_values(ok, "output_tokens"), qs),
        "reasoning_tokens": distribution(_values(ok, "reasoning_tokens"), qs),
        "output_tokens_per_s_per_request": distribution(_values(ok, "output_tps"), qs),
        "citations_per_answer": distribution(_values(ok, "citations"), qs),
        "sources_per_answer": distribution(
            _values([r for r in ok if r.pipeline.get("sources_ms") is not None], "sources"), qs
        ),
        "support_score": distribution(_values(grounded, "support_score"), qs),
    }


def summarize(run: RunResult, percentiles: Sequence[float] = DEFAULT_PERCENTILES) -> dict[str, Any]:
    """The summary of one run (the ``summary`` object of ``results.json``).

    Distributions cover the requests that reached the stage (a request cut after its
    first token still has a TTFT); ``total_ms``, ``tokens_per_s``, ``tpot_ms`` and the
    token counts only cover successful requests, so failures that end early do not
    flatter them. Inter-token latencies are pooled over all gaps of all requests.
    Throughputs count successful requests only.
    """
    records = run.records
    ok = [r for r in records if r.ok]
    codes, stages = _errors(records)
    failed = len(records) - len(ok)
    wall = run.wall_s
    out_total = sum(r.output_tokens or 0 for r in ok)
    in_total = sum(r.input_tokens or 0 for r in ok)
    achieved = achieved_rate(run)
    return {
        "requests": len(records),
        "ok": len(ok),
        "failed": failed,
        "error_rate": round(failed / len(records), 6) if records else 0.0,
        "errors_by_code": codes,
        "errors_by_stage": stages,
        "error_messages": _messages(records, codes),
        "wall_s": round(wall, 6),
        "throughput_rps": round(len(ok) / wall, 3) if wall > 0 else None,
        "output_tokens_per_s": round(out_total / wall, 3) if wall > 0 else None,
        "tokens": sum(r.tokens for r in records),
        **_latency(records, ok, percentiles),
        "client": {
            "loop_lag_ms": distribution(run.loop_lag_ms, percentiles),
            "cpu_s": round(run.cpu_s, 6),
            "cpu_pct": round(100.0 * run.cpu_s / wall, 2) if wall > 0 else None,
            "schedule_lag_ms": distribution(run.release_lag_ms, percentiles),
        },
        "percentiles": sorted({*DEFAULT_PERCENTILES, *percentiles}),
        "token_count_source": _token_source(ok),
        "output_tokens_total": out_total,
        "input_tokens_total": in_total,
        "input_token_count_source": _token_source(ok, "input"),
        "reasoning_token_count_source": _token_source(ok, "reasoning"),
        "total_tokens_per_s": round((in_total + out_total) / wall, 3) if wall > 0 else None,
        "chunks_per_s": round(sum(r.tokens for r in ok) / wall, 3) if wall > 0 else None,
        "offered_rps": run.load.rate,
        "achieved_rps": None if achieved is None else round(achieved, 3),
        "nothing_to_check": sum(1 for r in records if r.nothing_to_check),
    }
