"""Service-level objectives and goodput (``--slo``).

An objective is ``[pNN:]METRIC=VALUE``, e.g. ``ttft_ms=500`` or ``p95:itl_ms=50``:

* every objective is also a per-request threshold: a request is *good* when it
  succeeded and meets all of them; **goodput** is good requests per second;
* ``pNN:METRIC=VALUE`` passes when the run's NN-th percentile of METRIC (the figure
  of the summary table) is at most VALUE;
* ``METRIC=VALUE`` without a percentile passes when *every* measured request meets
  it (a failed request misses it);
* ``error_rate=X`` passes when the run's error rate is at most X (a fraction).

Per-request values: ``itl_ms`` is the request's longest gap between two chunks;
``e2e_ms`` includes the queue (open loop); the others are the request's own field.
The command exits with :data:`EXIT_SLO_MISSED` when an objective is missed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from streamcite.bench.records import RequestRecord, RunResult
from streamcite.bench.stats import pct_key

__all__ = ["EXIT_SLO_MISSED", "SLO_METRICS", "Objective", "evaluate", "parse_slo"]

EXIT_SLO_MISSED = 3
"""Exit code of ``streamcite bench`` when an SLO is missed (1: error, 2: usage)."""

SLO_METRICS = (
    "ttft_ms",
    "itl_ms",
    "tpot_ms",
    "total_ms",
    "e2e_ms",
    "queue_ms",
    "reasoning_ms",
    "citations_ms",
    "sources_ms",
    "grounding_ms",
    "first_claim_ms",
    "error_rate",
)

_SPEC = re.compile(r"^(?:p(?P<q>\d+(?:\.\d+)?):)?(?P<metric>[a-z_]+)=(?P<value>[0-9.eE+-]+)$")


@dataclass(slots=True, frozen=True)
class Objective:
    metric: str
    threshold: float
    percentile: float | None = None
    """``None``: every request must meet the threshold."""

    @property
    def spec(self) -> str:
        head = f"p{self.percentile:g}:" if self.percentile is not None else ""
        return f"{head}{self.metric}={self.threshold:g}"

    def request_value(self, r: RequestRecord) -> float | None:
        if self.metric == "itl_ms":
            return r.max_itl_ms
        if self.metric == "e2e_ms":
            return r.e2e_ms
        if self.metric == "queue_ms":
            return r.queue_ms or 0.0
        value = getattr(r, self.metric)
        return None if value is None else float(value)

    def met_by(self, r: RequestRecord) -> bool:
        value = self.request_value(r)
        return r.ok and value is not None and value <= self.threshold


def parse_slo(text: str) -> Objective:
    """``[pNN:]METRIC=VALUE`` (raises ``ValueError`` with the reason)."""
    m = _SPEC.match(text.strip().lower())
    if m is None:
        raise ValueError(f"--slo {text!r}: expected [pNN:]METRIC=VALUE, e.g. p95:ttft_ms=500")
    metric = m["metric"]
    if metric not in SLO_METRICS:
        raise ValueError(f"--slo {text!r}: unknown metric; known: {', '.join(SLO_METRICS)}")
    try:
        value = float(m["value"])
    except ValueError:
        raise ValueError(f"--slo {text!r}: {m['value']!r} is not a number") from None
    if not value >= 0:
        raise ValueError(f"--slo {text!r}: the threshold must be >= 0")
    q = None if m["q"] is None else float(m["q"])
    if q is not None and not 0 < q <= 100:
        raise ValueError(f"--slo {text!r}: the percentile must be in (0, 100]")
    if metric == "error_rate" and q is not None:
        raise ValueError(f"--slo {text!r}: error_rate takes no percentile")
    return Objective(metric, value, q)


def _check(o: Objective, run: RunResult, summary: Mapping[str, Any]) -> dict[str, Any]:
    records = run.records
    if o.metric == "error_rate":
        rate = float(summary["error_rate"])
        return {"spec": o.spec, "metric": o.metric, "percentile": None, "threshold": o.threshold,
                "value": rate, "attained": None, "passed": rate <= o.threshold}  # fmt: skip
    met = sum(1 for r in records if o.met_by(r))
    value: float | None
    attained = met / len(records) if records else 0.0
    if o.percentile is None:
        worst = [o.request_value(r) for r in records]
        present = [v for v in worst if v is not None]
        value = max(present) if present and all(r.ok for r in records) else None
        passed = bool(records) and met == len(records)
    else:
        dist = summary.get(o.metric) or {}
        value = dist.get(pct_key(o.percentile))
        if value is None and o.percentile not in (50.0, 90.0, 99.0):
            value = _percentile([o.request_value(r) for r in records if r.ok], o.percentile)
        passed = value is not None and value <= o.threshold
    return {
        "spec": o.spec,
        "metric": o.metric,
        "percentile": o.percentile,
        "threshold": o.threshold,
        "value": None if value is None else round(float(value), 3),
        "attained": round(attained, 6),
        "passed": passed,
    }


def _percentile(values: Sequence[float | None], q: float) -> float | None:
    import numpy as np

    present = [v for v in values if v is not None]
    return float(np.percentile(present, q)) if present else None


def evaluate(
    objectives: Sequence[Objective], run: RunResult, summary: Mapping[str, Any]
) -> dict[str, Any]:
    """The ``slo`` object of a run summary: each objective's result, goodput, pass."""
    per_request = [o for o in objectives if o.metric != "error_rate"]
    good = sum(1 for r in run.records if r.ok and all(o.met_by(r) for o in per_request))
    checks = [_check(o, run, summary) for o in objectives]
    wall = run.wall_s
    return {
        "objectives": checks,
        "good_requests": good,
        "goodput_rps": round(good / wall, 3) if wall > 0 else None,
        "passed": all(c["passed"] for c in checks),
    }
