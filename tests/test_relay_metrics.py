"""The relay's ``/metrics`` through ``prometheus_client``, read with its own parser: a
registry per relay, the multiprocess mode, bounded label values."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from streamcite.grounding.checker import LocalGrounding
from streamcite.local.server import BackendConfig, LocalBackend
from streamcite.relay.metrics import RelayMetrics
from streamcite.relay.server import RelayServer
from tests._relay_fixtures import relay, ws_client

QUESTION = "How many days can I work remotely?"

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> Samples:
    """Every sample of an exposition, by name and sorted labels."""
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


async def scrape(server: RelayServer) -> tuple[str, Samples]:
    async with aiohttp.ClientSession() as session, session.get(server.url + "/metrics") as resp:
        assert resp.status == 200
        ctype = resp.headers["Content-Type"]
        return ctype, parse(await resp.text())


async def test_metrics_parse_with_prometheus_client_and_have_the_latency_histograms() -> None:
    async with (
        LocalBackend(BackendConfig()) as be,
        relay(be.base_url, enrichers=[LocalGrounding()]) as server,
    ):
        async with ws_client(server) as client:
            for _ in range(2):
                sid = await client.ask(QUESTION)
                await client.until_done(sid)
        ctype, samples = await scrape(server)
    assert ctype.startswith("text/plain")
    p = "streamcite_relay_"
    # the names of the hand-written exposition, unchanged
    assert value(samples, p + "active_streams") == 0
    assert value(samples, p + "streams_started_total") == 2
    assert value(samples, p + "streams_finished_total", outcome="ok") == 2
    assert value(samples, p + "connections", transport="ws") == 0
    assert value(samples, p + "connections", transport="sse") == 0
    assert value(samples, p + "events_sent_total") > 0
    assert value(samples, p + "time_to_first_token_seconds_count") == 2
    assert value(samples, p + "time_to_first_token_seconds_bucket", le="+Inf") == 2
    for stage in ("ttft", "stream", "citations", "grounding", "first_claim", "total"):
        assert value(samples, p + "stage_seconds_count", stage=stage) == 2, stage
    # the per-stream latency histograms, measured by the relay from the ask
    for name in (
        "time_to_citations",
        "time_to_grounding",
        "time_to_first_claim",
        "stream_duration",
    ):
        assert value(samples, f"{p}{name}_seconds_count") == 2, name
        assert value(samples, f"{p}{name}_seconds_sum") > 0
    assert value(samples, p + "time_to_sources_seconds_count") == 0  # no Wikit enricher
    ttft = value(samples, p + "time_to_first_token_seconds_sum")
    cites = value(samples, p + "time_to_citations_seconds_sum")
    done = value(samples, p + "stream_duration_seconds_sum")
    assert ttft <= cites <= done


async def test_each_relay_has_its_own_registry() -> None:
    async with (
        LocalBackend(BackendConfig()) as be,
        relay(be.base_url) as first,
        relay(be.base_url) as second,
    ):
        async with ws_client(first) as client:
            await client.until_done(await client.ask(QUESTION))
        _, a = await scrape(first)
        _, b = await scrape(second)
    assert value(a, "streamcite_relay_streams_started_total") == 1
    assert value(b, "streamcite_relay_streams_started_total") == 0


def test_label_values_are_bounded_and_escaped() -> None:
    m = RelayMetrics()
    hostile = 'bad"code\nwith\\escapes'
    m.errors[hostile] += 1
    for n in range(500):
        m.errors[f"code{n}"] += 1
    samples = parse(m.render(active_streams=0, log_stats=None).decode())
    codes = {
        dict(labels)["code"]
        for (name, labels) in samples
        if name == "streamcite_relay_errors_total"
    }
    assert hostile in codes
    assert len(codes) == 201 and "other" in codes
    assert value(samples, "streamcite_relay_errors_total", code="other") == 500 - 199
    assert m.errors[hostile] == 1  # the relay still reads its counts


_WORKER = textwrap.dedent(
    """
    import sys
    from streamcite.relay.metrics import RelayMetrics
    m = RelayMetrics()
    n = int(sys.argv[1])
    m.streams_started += n
    m.errors["upstream_unavailable"] += 1
    m.ttft.observe(0.05 * n)
    m.stages["total"].observe(0.5)
    m.connections["ws"] += 1
    m.events_sent += 7
    if n == 3:
        m.close()  # a relay that stopped: its live gauges leave the sum
    else:
        m.set_active(0)  # a stream ended: the frames it sent are counted
    """
)
_SCRAPER = textwrap.dedent(
    """
    import sys
    from streamcite.relay.metrics import RelayMetrics
    sys.stdout.write(RelayMetrics().render(active_streams=0, log_stats=None).decode())
    """
)


def test_multiprocess_mode_sums_every_relay_process(tmp_path: Path) -> None:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}

    def python(code: str, *args: str) -> str:
        out = subprocess.run(
            [sys.executable, "-c", code, *args],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return out.stdout

    python(_WORKER, "2")
    python(_WORKER, "3")
    samples = parse(python(_SCRAPER))
    p = "streamcite_relay_"
    assert value(samples, p + "streams_started_total") == 5
    assert value(samples, p + "errors_total", code="upstream_unavailable") == 2
    assert value(samples, p + "time_to_first_token_seconds_count") == 2
    assert abs(value(samples, p + "time_to_first_token_seconds_sum") - 0.25) < 1e-9
    assert value(samples, p + "stage_seconds_count", stage="total") == 2
    assert value(samples, p + "connections", transport="ws") == 1  # only the one not closed
    assert value(samples, p + "events_sent_total") == 14
    assert any(f.name.endswith(".db") for f in tmp_path.iterdir())


def test_read_deadlines_are_read_at_scrape_time() -> None:
    from collections import Counter
    from types import SimpleNamespace

    m = RelayMetrics()
    plain = parse(m.render(active_streams=0, log_stats=None).decode())
    assert not [k for k in plain if k[0].startswith("streamcite_relay_half_open")]
    deadlines = SimpleNamespace(half_open=3, closed=Counter({"header": 2}))
    samples = parse(m.render(active_streams=1, log_stats=None, deadlines=deadlines).decode())  # type: ignore[arg-type]
    assert value(samples, "streamcite_relay_half_open_connections") == 3
    assert value(samples, "streamcite_relay_read_deadline_closed_total", phase="header") == 2
    assert value(samples, "streamcite_relay_read_deadline_closed_total", phase="body") == 0
    assert value(samples, "streamcite_relay_active_streams") == 1
    assert value(samples, "streamcite_relay_connections", transport="aisdk") == 0
