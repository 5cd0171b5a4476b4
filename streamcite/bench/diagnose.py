"""Warnings about a run whose figures would mislead if read as they are.

Each warning is one sentence saying what was seen, why it matters and what to do.
They go into the summary (``warnings``) and under the run's table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamcite.bench.records import RunResult

__all__ = ["ONE_WRITE_GAP_MS", "SCHEDULE_TOLERANCE", "warnings_for"]

SCHEDULE_TOLERANCE = 0.10
"""Achieved rate more than this fraction below the offered rate: schedule not kept."""
ONE_WRITE_GAP_MS = 0.1
"""An answer whose every chunk gap is under this came in one write (or back to back)."""
_IMPLAUSIBLE_ITL_MS = 0.5
_LOOP_LAG_P99_MS = 20.0


def _schedule(run: RunResult, s: Mapping[str, Any]) -> list[str]:
    offered, achieved = s.get("offered_rps"), s.get("achieved_rps")
    if offered is None:
        return []
    queue = (s.get("queue_ms") or {}).get("p50")
    late = (s.get("client", {}).get("schedule_lag_ms") or {}).get("p50")
    behind = achieved is not None and achieved < offered * (1.0 - SCHEDULE_TOLERANCE)
    queued = queue is not None and queue > 10.0
    if not behind and not queued:
        return []
    what = f"achieved {achieved:.2f} req/s" if achieved is not None else "achieved ?"
    slot = queue - (late or 0.0) if queue is not None else None
    why = (
        "waiting for a free slot: raise --concurrency or lower --rate"
        if slot is not None and slot >= (late or 0.0)
        else "the client itself was late: run fewer requests per process"
    )
    return [
        f"the client could not keep the schedule: offered {offered:g} req/s, {what}, "
        f"requests queued p50 {queue or 0:.1f} ms before being sent ({why}); "
        "'total incl. queue' is the latency a user would have seen"
    ]


def _chunks(run: RunResult, s: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    multi = [r for r in run.records if r.tokens >= 3]
    one_write = [r for r in multi if max(r.itl_ms()) < ONE_WRITE_GAP_MS]
    if one_write:
        out.append(
            f"{len(one_write)} of {len(multi)} answers arrived in one write (every chunk gap "
            f"under {ONE_WRITE_GAP_MS} ms): inter-token latency and chunks/s measure the "
            "client's parsing, not the model's decoding"
        )
    itl = (s.get("itl_ms") or {}).get("p50")
    if not one_write and itl is not None and itl < _IMPLAUSIBLE_ITL_MS:
        out.append(
            f"inter-token p50 {itl:.3f} ms is faster than any model streams: the upstream "
            "sent its chunks back to back (the local backend has no token delay unless "
            "--fault token_delay=0.02 or similar), so chunks/s is not a decode rate"
        )
    return out


def warnings_for(run: RunResult, summary: Mapping[str, Any]) -> list[str]:
    """The warnings of one run (empty when its figures can be taken as they are)."""
    out = _schedule(run, summary) + _chunks(run, summary)
    lag = (summary.get("client", {}).get("loop_lag_ms") or {}).get("p99")
    if lag is not None and lag > _LOOP_LAG_P99_MS:
        out.append(
            f"client loop lag p99 {lag:.1f} ms: the client was too busy to measure "
            "precisely; lower the load per process"
        )
    if run.records and not summary.get("ok"):
        out.append("no request succeeded: there is no latency to report")
    return out
