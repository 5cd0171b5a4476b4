"""Review finding R3: the request's model is a metric attribute, and in an application
that forwards its clients' requests the client chooses it: it must be bounded like the
response's model (a new model name per request made a new metric series per request)."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader

from streamcite import stream_chat, telemetry
from streamcite.telemetry import conventions as cv

try:
    from _upstream import chunk
except ImportError:  # tests/ imported as a package
    from tests._upstream import chunk


async def test_a_client_chosen_request_model_cannot_grow_the_metric_series(serve: Any) -> None:
    async def handle(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(chunk("Hi", model="m"))
        await resp.write(chunk(None, "stop", model="m"))
        await resp.write(b"data: [DONE]\n\n")
        return resp

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handle)
    url = await serve(app)
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    telemetry.instrument(meter_provider=provider)
    try:
        for i in range(80):
            request = {"model": f"client-model-{i}", "messages": [{"role": "user", "content": "q"}]}
            async with stream_chat(request, base_url=url + "/v1") as stream:
                await stream.until_done()
        data = reader.get_metrics_data()
    finally:
        telemetry.uninstrument()
        provider.shutdown()
    points = [
        p
        for rm in (data.resource_metrics if data else [])
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == cv.METRIC_DURATION
        for p in m.data.data_points
        if isinstance(p, HistogramDataPoint)
    ]
    models = {p.attributes["gen_ai.request.model"] for p in points if p.attributes}
    assert len(models) == 65 and "_OTHER" in models  # was 80: one series per request
