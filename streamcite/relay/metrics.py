"""The relay's metrics, through ``prometheus_client``: a registry per relay, or the
multiprocess collector when several relay processes share ``PROMETHEUS_MULTIPROC_DIR``.

The relay's code counts as it always did (``metrics.errors[code] += 1``,
``metrics.streams_started += 1``, ``metrics.ttft.observe(s)``); each count goes to a
``prometheus_client`` metric, and ``/metrics`` is ``generate_latest`` of them.

Multiprocess mode (several relays on one host, one of them scraped): set
``PROMETHEUS_MULTIPROC_DIR`` to an empty directory before the relays start (it is read
when ``prometheus_client`` is imported); every process then writes its values there and
any relay's ``/metrics`` serves the sum (counters, histograms) or the sum over live
processes (gauges). Run one relay per process, wipe the directory when they all
restart; see docs/observability.md.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, Literal, Protocol

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client import Counter as PromCounter
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric

__all__ = ["CONTENT_TYPE", "RelayMetrics", "multiprocess_dir"]

CONTENT_TYPE = CONTENT_TYPE_LATEST
"""The ``Content-Type`` of ``/metrics`` (Prometheus text exposition)."""

_P = "streamcite_relay_"
_LATENCY_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)  # fmt: skip
_MAX_LABEL_VALUES = 200
"""Distinct label values kept per metric (error codes come from upstreams); the rest
are counted under ``other``."""


def multiprocess_dir() -> str | None:
    """The directory of ``prometheus_client``'s multiprocess mode, when it is on."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


class _Counts(Counter[str]):
    """A ``collections.Counter`` whose changes also go to a labelled metric (a counter
    only grows; a gauge follows both ways). Label values past the cap become ``other``."""

    def __init__(self, metric: Any, *, initial: tuple[str, ...] = ()) -> None:
        self._metric = metric
        self._children: dict[str, Any] = {}
        """Label value → its child metric (``labels()`` takes a lock and builds a tuple:
        every stream's end counted one); bounded as the label values are."""
        super().__init__()
        for key in initial:
            self._child(key)  # exposed at 0 from the start

    def _child(self, key: str) -> Any:
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self._metric.labels(key)
        return child

    def __setitem__(self, key: str, value: int) -> None:
        delta = value - self[key]
        if key not in self and len(self) >= _MAX_LABEL_VALUES:
            key = "other"
            value = self[key] + delta
        super().__setitem__(key, value)
        if delta:
            self._child(key).inc(delta)


class _Scalar:
    """An ``int`` attribute whose increments go to an unlabelled counter."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = "_v_" + name

    def __get__(self, obj: RelayMetrics, objtype: type | None = None) -> int:
        return int(getattr(obj, self.name))

    def __set__(self, obj: RelayMetrics, value: int) -> None:
        delta = value - getattr(obj, self.name)
        object.__setattr__(obj, self.name, value)
        if delta > 0:
            obj._counters[self.name].inc(delta)


class ReadDeadlineStats(Protocol):
    """What ``/metrics`` reads of the relay's read deadlines (``web.deadlines``)."""

    @property
    def half_open(self) -> int: ...
    @property
    def closed(self) -> Mapping[str, int]: ...


class _DeadlineCollector:
    """Half-open connections and those a read deadline closed, read at scrape time."""

    def __init__(self) -> None:
        self.source: ReadDeadlineStats | None = None

    def describe(self) -> list[Metric]:
        return []  # known only at scrape time (and only when the relay has deadlines)

    def collect(self) -> Iterator[Metric]:
        d = self.source
        if d is None:
            return
        yield GaugeMetricFamily(
            _P + "half_open_connections",
            "Connections waiting for a request head or body.",
            value=d.half_open,
        )
        closed = CounterMetricFamily(
            _P + "read_deadline_closed",
            "Connections closed by a read deadline.",
            labels=["phase"],
        )
        for phase in ("header", "body"):
            closed.add_metric([phase], d.closed.get(phase, 0))
        yield closed


class RelayMetrics:
    """Counters, gauges and histograms of one relay (``prometheus_client`` metrics)."""

    STAGES = ("ttft", "stream", "citations", "sources", "grounding", "first_claim", "total")
    TIME_TO: ClassVar[dict[str, str]] = {
        "citations": "citations",
        "sources": "sources",
        "grounding": "grounding",
        "claim": "first_claim",
    }
    """Event type → ``time_to_*`` histogram: first such event of a stream, from the ask."""

    streams_started = _Scalar()
    resumes = _Scalar()

    def __init__(self) -> None:
        self.multiprocess = multiprocess_dir() is not None
        self.registry = CollectorRegistry(auto_describe=True)
        """This relay's registry (in multiprocess mode ``/metrics`` reads the directory)."""
        self._count(self.registry)
        self._time(self.registry)
        reg = self.registry
        live: Literal["livesum"] = "livesum"
        self._log_streams = Gauge(
            _P + "log_streams", "Streams kept in the event log (live and retained).",
            registry=reg, multiprocess_mode=live,
        )  # fmt: skip
        self._log_bytes = Gauge(
            _P + "log_bytes", "Event payload bytes kept in the log.",
            registry=reg, multiprocess_mode=live,
        )  # fmt: skip
        self._deadlines = _DeadlineCollector()
        reg.register(self._deadlines)

    def _count(self, reg: CollectorRegistry) -> None:
        """The gauges and counters of streams, connections, events, errors (in ``__init__``)."""
        live: Literal["livesum"] = (
            "livesum"  # gauges in multiprocess mode: the sum over live processes
        )
        self._active = Gauge(
            _P + "active_streams", "Upstream requests running now.",
            registry=reg, multiprocess_mode=live,
        )  # fmt: skip
        self.connections = _Counts(
            Gauge(
                _P + "connections", "Open client connections.", ["transport"],
                registry=reg, multiprocess_mode=live,
            ),
            initial=("ws", "sse", "aisdk"),
        )  # fmt: skip
        """Open client connections by transport (gauge)."""
        self._counters = {
            "_v_streams_started": PromCounter(
                _P + "streams_started", "Streams started.", registry=reg
            ),
            "_v_resumes": PromCounter(_P + "resumes", "Resumes served.", registry=reg),
        }
        self._v_streams_started = self._v_resumes = 0
        self.events_sent = 0
        """Event frames written to clients: a plain int on the delivery path (an add, not
        a counter's lock), handed to its counter as streams start and end and at every
        scrape (other processes see it that late in multiprocess mode)."""
        self._events_sent = PromCounter(
            _P + "events_sent", "Event frames written to clients.", registry=reg
        )
        self._events_flushed = 0

        def counts(name: str, doc: str, label: str) -> _Counts:
            return _Counts(PromCounter(_P + name, doc, [label], registry=reg))

        self.streams_finished = counts(
            "streams_finished", "Streams finished, by outcome.", "outcome"
        )
        """By outcome: ``ok``, ``error``, ``cancelled``, ``abandoned``, ``shutdown``."""
        self.errors = counts("errors", "Errors (stream error events and relay errors).", "code")
        """Error events and relay errors by code."""
        self.rejected = counts("rejected", "Requests refused.", "reason")
        """Refused requests by reason (auth, origin, busy, ...)."""
        self.client_closed = counts(
            "client_closed", "Client connections closed by the relay.", "reason"
        )
        """Connections the relay closed, by reason (``too_slow``, ``shutdown``)."""

    def _time(self, reg: CollectorRegistry) -> None:
        """The latency histograms (in ``__init__``, after :meth:`_count`)."""

        def hist(name: str, doc: str) -> Histogram:
            return Histogram(_P + name, doc, registry=reg, buckets=_LATENCY_BUCKETS)

        self.ttft = hist("time_to_first_token_seconds", "Ask received to first token.")
        """Ask received → first token appended (seconds), measured by the relay."""
        self.time_to = {
            kind: hist(f"time_to_{name}_seconds", f"Ask received to the first {kind} event.")
            for kind, name in self.TIME_TO.items()
        }
        """Event type → ask received → first event of that type appended (seconds)."""
        self.stream_seconds = hist("stream_duration_seconds", "Ask received to done appended.")
        stages = Histogram(
            _P + "stage_seconds",
            "Pipeline stage durations (answer.timings).",
            ["stage"],
            registry=reg,
            buckets=_LATENCY_BUCKETS,
        )
        self.stages = {stage: stages.labels(stage) for stage in self.STAGES}
        """The pipeline's own stage timings (``answer.timings``), in seconds."""

    def set_active(self, streams: int) -> None:
        """Upstream requests running now (called as streams start and end)."""
        self._active.set(streams)
        self._flush()

    def _flush(self) -> None:
        due = self.events_sent - self._events_flushed
        if due > 0:
            self._events_sent.inc(due)
            self._events_flushed = self.events_sent

    def close(self) -> None:
        """The relay stops: pending counts are handed over, and in multiprocess mode its
        live gauges (active streams, connections, log size) leave the sums
        (``mark_process_dead``)."""
        self._flush()
        if self.multiprocess:
            from prometheus_client import multiprocess

            multiprocess.mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]

    def render(
        self,
        *,
        active_streams: int,
        log_stats: Mapping[str, int] | None,
        deadlines: ReadDeadlineStats | None = None,
    ) -> bytes:
        """The Prometheus text exposition (``CONTENT_TYPE``) of this relay, or of every
        relay process sharing the multiprocess directory (``deadlines``: this process's
        read deadlines, when the relay has them)."""
        self._deadlines.source = deadlines
        self._flush()
        self._active.set(active_streams)
        if log_stats:
            self._log_streams.set(log_stats.get("streams", 0))
            self._log_bytes.set(log_stats.get("bytes", 0))
        if not self.multiprocess:
            return generate_latest(self.registry)
        from prometheus_client import multiprocess

        merged = CollectorRegistry()
        multiprocess.MultiProcessCollector(merged)  # type: ignore[no-untyped-call]
        merged.register(self._deadlines)  # this process's own
        return generate_latest(merged)
