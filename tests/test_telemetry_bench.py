"""The bench's ``requests.csv`` and the OpenTelemetry spans of the same run agree:
TTFT and time to citations, request by request (the span of request ``i`` is the one
whose ``streamcite.stream_id`` is ``bench-m{i}``)."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from streamcite import telemetry
from streamcite.bench import BenchTarget, LoadSpec, build_results, run_load
from streamcite.bench.csvout import write_csv
from streamcite.local.server import BackendConfig, LocalBackend

QUESTION = "How many days of remote work are allowed per week?"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.instrument(tracer_provider=provider)
    try:
        yield exporter
    finally:
        telemetry.uninstrument()


def _event_ms(span: ReadableSpan, name: str) -> float | None:
    assert span.start_time is not None
    for ev in span.events:
        if ev.name == name:
            return (ev.timestamp - span.start_time) / 1e6
    return None


def _close(a: float, b: float) -> bool:
    """Within 2 ms or 2 %: the bench stamps when its consumer gets the event, the span
    when the pipeline read it (the same task, no await between the two)."""
    return abs(a - b) <= max(2.0, 0.02 * max(a, b))


async def test_bench_csv_and_spans_agree_per_request(
    spans: InMemorySpanExporter, tmp_path: Path
) -> None:
    async with LocalBackend(BackendConfig()) as backend:
        target = BenchTarget(
            backend.base_url,
            headers={"X-Streamcite-Fault": "first_token_delay=0.03;token_delay=0.002"},
        )
        run = await run_load(target, [QUESTION], LoadSpec(requests=6, concurrency=2, warmup=1))
    path = write_csv(build_results([run], {}), tmp_path)
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    by_stream = {
        (s.attributes or {}).get("streamcite.stream_id"): s
        for s in spans.get_finished_spans()
        if s.name.startswith("chat ")
    }
    assert len(rows) == 6
    assert len(by_stream) == 7  # the warm-up request is traced too
    for row in rows:
        span = by_stream[f"bench-m{row['index']}"]
        ttft = _event_ms(span, "streamcite.first_token")
        cites = _event_ms(span, "streamcite.citations")
        assert ttft is not None and cites is not None
        assert float(row["ttft_ms"]) >= 30.0  # the injected delay: real timings compared
        assert _close(float(row["ttft_ms"]), ttft), (row["ttft_ms"], ttft)
        assert _close(float(row["citations_ms"]), cites), (row["citations_ms"], cites)
        assert ttft < cites
