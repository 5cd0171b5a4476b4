"""The relay's metrics: counters, gauges and histograms, rendered as Prometheus text."""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from streamcite.web.deadlines import ReadDeadlines

__all__ = ["RelayMetrics"]

_LATENCY_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)  # fmt: skip


class _Histogram:
    __slots__ = ("buckets", "count", "counts", "sum")

    def __init__(self, buckets: Sequence[float] = _LATENCY_BUCKETS) -> None:
        self.buckets = tuple(buckets)
        self.counts = [0] * (len(self.buckets) + 1)
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.buckets, value)] += 1
        self.sum += value
        self.count += 1

    def lines(self, name: str, labels: str = "") -> list[str]:
        sep = "," if labels else ""
        out: list[str] = []
        cumulative = 0
        for bound, n in zip(self.buckets, self.counts, strict=False):
            cumulative += n
            out.append(f'{name}_bucket{{{labels}{sep}le="{bound:g}"}} {cumulative}')
        out.append(f'{name}_bucket{{{labels}{sep}le="+Inf"}} {self.count}')
        braces = f"{{{labels}}}" if labels else ""
        out.append(f"{name}_sum{braces} {self.sum:.6f}")
        out.append(f"{name}_count{braces} {self.count}")
        return out


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class RelayMetrics:
    """Counters, gauges and histograms of one relay, rendered as Prometheus text."""

    STAGES = ("ttft", "stream", "sources", "grounding", "total")

    def __init__(self) -> None:
        self.connections: Counter[str] = Counter()
        """Open client connections by transport (gauge)."""
        self.streams_started = 0
        self.streams_finished: Counter[str] = Counter()
        """By outcome: ``ok``, ``error``, ``cancelled``, ``abandoned``, ``shutdown``."""
        self.errors: Counter[str] = Counter()
        """Error events and relay errors by code."""
        self.rejected: Counter[str] = Counter()
        """Refused requests by reason (auth, origin, busy, ...)."""
        self.client_closed: Counter[str] = Counter()
        """Connections the relay closed, by reason (``too_slow``, ``shutdown``)."""
        self.resumes = 0
        self.events_sent = 0
        self.ttft = _Histogram()
        """Ask received → first token appended (seconds), measured by the relay."""
        self.stages = {stage: _Histogram() for stage in self.STAGES}
        """The pipeline's own stage timings (``answer.timings``), in seconds."""

    def render(
        self,
        *,
        active_streams: int,
        log_stats: Mapping[str, int] | None,
        deadlines: ReadDeadlines | None = None,
    ) -> str:
        p = "streamcite_relay_"
        lines = [
            f"# HELP {p}active_streams Upstream requests running now.",
            f"# TYPE {p}active_streams gauge",
            f"{p}active_streams {active_streams}",
            f"# HELP {p}connections Open client connections.",
            f"# TYPE {p}connections gauge",
        ]
        for transport in ("ws", "sse", "aisdk"):
            lines.append(f'{p}connections{{transport="{transport}"}} {self.connections[transport]}')
        lines += [
            f"# HELP {p}streams_started_total Streams started.",
            f"# TYPE {p}streams_started_total counter",
            f"{p}streams_started_total {self.streams_started}",
            f"# HELP {p}streams_finished_total Streams finished, by outcome.",
            f"# TYPE {p}streams_finished_total counter",
        ]
        lines += [
            f'{p}streams_finished_total{{outcome="{_label(k)}"}} {v}'
            for k, v in sorted(self.streams_finished.items())
        ]
        for name, counter, label, help_ in (
            ("errors_total", self.errors, "code", "Errors (stream error events and relay errors)."),
            ("rejected_total", self.rejected, "reason", "Requests refused."),
            (
                "client_closed_total",
                self.client_closed,
                "reason",
                "Client connections closed by the relay.",
            ),
        ):
            lines += [f"# HELP {p}{name} {help_}", f"# TYPE {p}{name} counter"]
            lines += [f'{p}{name}{{{label}="{_label(k)}"}} {v}' for k, v in sorted(counter.items())]
        lines += [
            f"# HELP {p}resumes_total Resumes served.",
            f"# TYPE {p}resumes_total counter",
            f"{p}resumes_total {self.resumes}",
            f"# HELP {p}events_sent_total Event frames written to clients.",
            f"# TYPE {p}events_sent_total counter",
            f"{p}events_sent_total {self.events_sent}",
            f"# HELP {p}time_to_first_token_seconds Ask received to first token.",
            f"# TYPE {p}time_to_first_token_seconds histogram",
            *self.ttft.lines(f"{p}time_to_first_token_seconds"),
            f"# HELP {p}stage_seconds Pipeline stage durations (answer.timings).",
            f"# TYPE {p}stage_seconds histogram",
        ]
        for stage, hist in self.stages.items():
            lines += hist.lines(f"{p}stage_seconds", f'stage="{stage}"')
        if deadlines is not None:
            lines += [
                f"# HELP {p}half_open_connections Connections waiting for a request head or body.",
                f"# TYPE {p}half_open_connections gauge",
                f"{p}half_open_connections {deadlines.half_open}",
                f"# HELP {p}read_deadline_closed_total Connections closed by a read deadline.",
                f"# TYPE {p}read_deadline_closed_total counter",
            ]
            for phase in ("header", "body"):
                lines.append(
                    f'{p}read_deadline_closed_total{{phase="{phase}"}} {deadlines.closed[phase]}'
                )
        if log_stats:
            lines += [
                f"# HELP {p}log_streams Streams kept in the event log (live and retained).",
                f"# TYPE {p}log_streams gauge",
                f"{p}log_streams {log_stats.get('streams', 0)}",
                f"# HELP {p}log_bytes Event payload bytes kept in the log.",
                f"# TYPE {p}log_bytes gauge",
                f"{p}log_bytes {log_stats.get('bytes', 0)}",
            ]
        return "\n".join(lines) + "\n"
