"""OpenTelemetry spans and metrics of one stream, offline (needs ``streamcite[otel]`` and
``opentelemetry-sdk``).

The embedded backend answers, Wikit sources and the local grounding check run after the
stream; the span tree and the metrics are printed. With ``--otlp`` they go to a collector
instead (``pip install opentelemetry-exporter-otlp-proto-http``; ``OTEL_EXPORTER_OTLP_ENDPOINT``,
default ``http://localhost:4318``).

    .venv/bin/python examples/otel_tracing.py
    .venv/bin/python examples/otel_tracing.py --otlp "How many days of remote work?"
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from streamcite import StreamciteError, stream_chat
from streamcite.enrich import LocalGrounding, WikitSources
from streamcite.local import MODEL, LocalBackend
from streamcite.telemetry import instrument


def providers(otlp: bool) -> tuple[TracerProvider, MeterProvider, Any, Any]:
    resource = Resource.create({"service.name": "streamcite-example"})
    spans: SpanExporter
    reader: MetricReader
    if otlp:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

        spans, reader = OTLPSpanExporter(), PeriodicExportingMetricReader(OTLPMetricExporter())
    else:
        spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    return tracer_provider, MeterProvider(resource=resource, metric_readers=[reader]), spans, reader


def print_tree(spans: list[ReadableSpan]) -> None:
    by_parent: dict[int | None, list[ReadableSpan]] = {}
    ids = {s.context.span_id for s in spans}
    for s in spans:
        parent = s.parent.span_id if s.parent and s.parent.span_id in ids else None
        by_parent.setdefault(parent, []).append(s)

    def show(s: ReadableSpan, depth: int) -> None:
        assert s.start_time is not None and s.end_time is not None
        ms = (s.end_time - s.start_time) / 1e6
        print(f"{'  ' * depth}{s.name}  {ms:.1f} ms  status={s.status.status_code.name}")
        for key, value in sorted((s.attributes or {}).items()):
            print(f"{'  ' * depth}    {key} = {value}")
        for ev in s.events:
            at = (ev.timestamp - s.start_time) / 1e6
            print(f"{'  ' * depth}    event {ev.name} at {at:.1f} ms")
        for child in by_parent.get(s.context.span_id, []):
            show(child, depth + 1)

    for root in by_parent.get(None, []):
        show(root, 0)


def print_metrics(reader: InMemoryMetricReader) -> None:
    data = reader.get_metrics_data()
    if data is None:
        return
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                for p in m.data.data_points:
                    extra = dict(p.attributes).get("gen_ai.token.type", "")
                    total = getattr(p, "sum", None)
                    print(
                        f"{m.name:48} {extra:7} count={getattr(p, 'count', '?')} sum={total:.4g} {m.unit}"
                    )


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("question", nargs="?", default="How many days a week can I work from home?")
    ap.add_argument("--otlp", action="store_true", help="export to an OTLP collector")
    args = ap.parse_args()
    tracer_provider, meter_provider, spans, reader = providers(args.otlp)
    instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
    request = {
        "model": MODEL,
        "messages": [{"role": "user", "content": args.question}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    async with LocalBackend() as backend:
        after = [
            WikitSources("streamcite-demo", "streamcite-local", base_url=backend.root_url),
            LocalGrounding(facts_from="sources"),
        ]
        async with stream_chat(request, base_url=backend.base_url, after=after) as stream:
            answer = (await stream.until_done()).raise_for_error()  # a failure raises
    print(answer.text, "\n")
    if args.otlp:
        tracer_provider.shutdown()
        meter_provider.shutdown()  # flushes the last metrics
        print("sent to the OTLP collector")
        return
    print_tree(list(spans.get_finished_spans()))
    print()
    print_metrics(reader)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except StreamciteError as exc:  # one line and exit status 1, no traceback
        sys.exit(f"error: {exc}")
