"""Load shapes: how many requests, how many in flight, and when each one is due.

A :class:`LoadSpec` describes one run. Closed loop (no ``rate``): ``concurrency``
workers each send their next request as soon as the previous one is done. Open loop
(``rate`` requests per second): requests are due on a schedule, ``poisson``
(exponential gaps, seeded) or ``constant`` (``1/rate`` apart; ``fixed`` is the same),
with at most ``concurrency`` in flight.

Warm-up and ramp-up are part of the same stream of requests, not a separate phase
before it: the measured window opens while the warm-up requests are still in flight,
so it starts in the steady state instead of with a burst of ``concurrency`` requests
released at once. ``ramp_up_s`` raises the offered rate linearly from 0 to ``rate``
(open loop) or starts the workers one after another (closed loop); everything sent
during the ramp is unmeasured, like the warm-up.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

__all__ = ["MAX_REQUESTS", "LoadSpec", "Schedule"]

Schedule = Literal["poisson", "fixed", "constant"]

MAX_REQUESTS = 1_000_000
"""Most measured requests one run may have (``--duration`` runs are capped by it)."""


@dataclass(slots=True, frozen=True)
class LoadSpec:
    """How much load one run generates."""

    requests: int
    """Measured requests (warm-up excluded); with ``duration_s``, the most of them."""
    concurrency: int = 1
    """Closed loop: number of workers. Open loop: most requests in flight."""
    rate: float | None = None
    """Open loop: requests per second. ``None``: closed loop."""
    schedule: Schedule = "poisson"
    """Open loop arrivals: ``poisson`` (exponential gaps) or ``constant``/``fixed``."""
    warmup: int = 0
    """Requests sent first, at the same load, and not measured."""
    seed: int = 0
    """Seed of the Poisson schedule (same seed, same arrival times)."""
    duration_s: float | None = None
    """Measured window length: no measured request is sent after it (in-flight ones
    finish). ``None``: ``requests`` decides."""
    ramp_up_s: float = 0.0
    """Seconds over which the load rises to its level; requests sent meanwhile are
    unmeasured."""

    def __post_init__(self) -> None:
        if not 1 <= self.requests <= MAX_REQUESTS:
            raise ValueError(f"requests must be between 1 and {MAX_REQUESTS:,}")
        if self.concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        if self.rate is not None and not (self.rate > 0 and math.isfinite(self.rate)):
            raise ValueError("rate must be > 0 requests per second")
        if self.warmup < 0:
            raise ValueError("warmup must be >= 0")
        if self.schedule not in ("poisson", "fixed", "constant"):
            raise ValueError("schedule must be 'poisson' or 'constant' (or 'fixed')")
        if self.duration_s is not None and not (
            self.duration_s > 0 and math.isfinite(self.duration_s)
        ):
            raise ValueError("duration must be > 0 seconds")
        if not (self.ramp_up_s >= 0 and math.isfinite(self.ramp_up_s)):
            raise ValueError("ramp-up must be >= 0 seconds")

    @property
    def open_loop(self) -> bool:
        return self.rate is not None

    def plan(self) -> Iterator[tuple[float, bool]]:
        """Open loop: ``(due time, warm-up?)`` of every request, seconds after the first
        one, in order. The warm-up requests and those due during the ramp-up come first;
        the measured ones follow on the same clock (``duration_s`` counts from the first
        measured one). A generator: a long ``--duration`` run never holds its whole
        schedule."""
        if self.rate is None:
            raise ValueError("a closed loop has no schedule")
        rate, ramp = self.rate, self.ramp_up_s
        ramp_units = rate * ramp / 2.0  # arrivals expected during a linear ramp

        def at(u: float) -> float:
            if u < ramp_units:
                return math.sqrt(2.0 * u * ramp / rate)
            return ramp + (u - ramp_units) / rate

        rng = np.random.default_rng(self.seed)
        u = 0.0
        n = 0
        measured = 0
        first: float | None = None
        while measured < self.requests:
            t = at(u)
            if n < self.warmup or t < ramp:
                yield t, True
            else:
                if first is None:
                    first = t
                if self.duration_s is not None and t - first >= self.duration_s:
                    return
                measured += 1
                yield t, False
            n += 1
            u += 1.0 if self.schedule != "poisson" else float(rng.exponential(1.0))

    def arrivals(self) -> list[float]:
        """Open loop: due time of each measured request, seconds after the first
        measured one (closed loop: all zero)."""
        if self.rate is None:
            return [0.0] * self.requests
        times = [t for t, warm in self.plan() if not warm]
        return [t - times[0] for t in times] if times else []

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "concurrency": self.concurrency,
            "rate": self.rate,
            "schedule": self.schedule if self.rate is not None else None,
            "warmup": self.warmup,
            "seed": self.seed,
            "duration_s": self.duration_s,
            "ramp_up_s": self.ramp_up_s,
        }
