"""``streamcite bench`` against the embedded local backend, with injected faults.

Known injected delays must come out as the measured percentiles (within a tolerance
that leaves room for a loaded machine, never below the injected delay), errors must
be counted by code, ``results.json`` must keep its schema, and the plots must be real
PNG files.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import structlog
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from streamcite.apps.bench import command
from streamcite.bench import (
    SCHEMA_VERSION,
    BenchTarget,
    LoadSpec,
    LocalUpstream,
    ResultsFileError,
    build_results,
    distribution,
    load_results,
    run_load,
    run_sweep,
    summarize,
    write_results,
)
from streamcite.bench.report import compare_rows
from streamcite.local.server import BackendConfig, LocalBackend
from streamcite.pipeline import Timeouts

QUESTION = "How many days of remote work are allowed per week?"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def restore_structlog() -> Iterator[None]:
    """The command configures structlog for the process, as a CLI should: undo it."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


@pytest.fixture
async def backend() -> AsyncIterator[LocalBackend]:
    async with LocalBackend(BackendConfig(), host="127.0.0.1", port=0) as b:
        yield b


def target(backend: LocalBackend, fault: str | None = None, **kw: Any) -> BenchTarget:
    headers = {"X-Streamcite-Fault": fault} if fault else {}
    return BenchTarget(backend.base_url, headers=headers, **kw)


# -- measured values follow injected delays -----------------------------------------


async def test_ttft_percentiles_follow_the_injected_first_token_delay(
    backend: LocalBackend,
) -> None:
    run = await run_load(
        target(backend, "first_token_delay=0.1", extra_body={"max_tokens": 5}),
        [QUESTION],
        LoadSpec(requests=8, concurrency=2, warmup=1),
    )
    s = summarize(run)
    assert s["ok"] == 8 and s["error_rate"] == 0.0
    assert s["ttft_ms"]["count"] == 8
    # Never below the injected delay (the tool must not under-report); a loaded machine
    # may add some.
    assert s["ttft_ms"]["min"] >= 100.0
    assert 100.0 <= s["ttft_ms"]["p50"] <= 160.0
    assert s["ttft_ms"]["p50"] <= s["ttft_ms"]["p90"] <= s["ttft_ms"]["p99"] <= s["ttft_ms"]["max"]
    for r in run.records:
        assert r.tokens == 5 == r.completion_tokens
        assert r.pipeline["ttft_ms"] is not None
        # The pipeline's own TTFT and the consumer's agree to well under a millisecond
        # scale difference (the consumer sees the token right after the pipeline).
        assert r.ttft_ms is not None and r.ttft_ms >= r.pipeline["ttft_ms"] - 1.0


async def test_inter_token_latency_follows_the_injected_token_delay(backend: LocalBackend) -> None:
    run = await run_load(
        target(backend, "token_delay=0.02", extra_body={"max_tokens": 8}),
        [QUESTION],
        LoadSpec(requests=4, concurrency=2),
    )
    s = summarize(run)
    assert s["ok"] == 4
    assert s["itl_ms"]["count"] == 4 * 7  # n tokens, n-1 gaps, per request
    assert 20.0 <= s["itl_ms"]["p50"] <= 40.0
    # 7 gaps of ~20 ms: at most 50 tokens/s after the first token.
    assert 20.0 <= s["tokens_per_s"]["p50"] <= 50.5
    for r in run.records:
        assert r.token_ms == sorted(r.token_ms)
        # The server sleeps 20 ms between tokens: first to last spans 7 x 20 ms, less
        # at most how late the first token was delivered.
        assert r.token_ms[-1] - r.token_ms[0] >= 130.0
        assert r.ttft_ms == r.token_ms[0]
        assert r.citations_ms is not None and r.total_ms is not None
        assert r.token_ms[-1] <= r.citations_ms <= r.total_ms


async def test_sources_and_grounding_are_timed_after_the_citations() -> None:
    from streamcite.enrich.google import GoogleGrounding
    from streamcite.enrich.wikit import WikitSources

    # The sources endpoint reads its faults from its own request: set it server-wide.
    async with (
        LocalBackend(BackendConfig(faults="sources_delay=0.05")) as backend,
        WikitSources("app", "org", base_url=backend.root_url) as wikit,
        GoogleGrounding(
            "projects/p/locations/global/groundingConfigs/default_grounding_config",
            token="local",
            endpoint=backend.root_url,
        ) as google,
    ):
        run = await run_load(
            target(backend, extra_body={"max_tokens": 6}),
            [QUESTION],
            LoadSpec(requests=4, concurrency=2),
            enrichers=[wikit, google],
        )
    s = summarize(run)
    assert s["ok"] == 4, s["errors_by_code"]
    assert s["sources_ms"]["count"] == 4 and s["grounding_ms"]["count"] == 4
    assert s["first_claim_ms"]["count"] == 4
    for r in run.records:
        assert r.sources > 0 and r.citations > 0 and r.support_score is not None
        assert r.ttft_ms is not None and r.citations_ms is not None
        assert r.sources_ms is not None and r.grounding_ms is not None and r.total_ms is not None
        assert r.ttft_ms <= r.citations_ms
        # The sources endpoint was told to wait 50 ms after the finish chunk.
        assert r.sources_ms >= r.citations_ms + 50.0
        assert max(r.sources_ms, r.grounding_ms) <= r.total_ms
        # Google's claims come on the claim channel just before its grounding event.
        assert r.first_claim_ms is not None and r.first_claim_ms <= r.grounding_ms
        # The pipeline's own durations are consistent with the times since send.
        assert r.pipeline["sources_ms"] is not None and r.pipeline["sources_ms"] >= 50.0


async def test_httpx_transport_shares_one_client(backend: LocalBackend) -> None:
    run = await run_load(
        target(backend, "first_token_delay=0.02", transport="httpx", extra_body={"max_tokens": 3}),
        [QUESTION],
        LoadSpec(requests=4, concurrency=2),
    )
    s = summarize(run)
    assert s["ok"] == 4 and s["tokens"] == 12
    assert s["ttft_ms"]["min"] >= 20.0


# -- errors by code ------------------------------------------------------------------


async def test_http_503_counts_as_upstream_unavailable(backend: LocalBackend) -> None:
    run = await run_load(
        target(backend, "status=503"), [QUESTION], LoadSpec(requests=5, concurrency=2)
    )
    s = summarize(run)
    assert s["errors_by_code"] == {"upstream_unavailable": 5}
    assert s["errors_by_stage"] == {"http": 5}
    assert s["ok"] == 0 and s["failed"] == 5 and s["error_rate"] == 1.0
    assert s["ttft_ms"]["count"] == 0 and s["total_ms"]["count"] == 0
    assert s["throughput_rps"] == 0.0
    assert all(e.status == 503 for r in run.records for e in r.errors)


async def test_dropped_connection_counts_as_lost_or_truncated(backend: LocalBackend) -> None:
    run = await run_load(
        target(backend, "drop_after=3"), [QUESTION], LoadSpec(requests=4, concurrency=2)
    )
    s = summarize(run)
    assert s["failed"] == 4 and s["ok"] == 0
    assert set(s["errors_by_code"]) <= {"connection_lost", "truncated"}
    assert sum(s["errors_by_code"].values()) >= 4
    for r in run.records:
        assert r.tokens == 3  # what arrived before the cut is still measured
        assert r.ttft_ms is not None and r.citations_ms is None
    # A cut request reached its first token but did not succeed: TTFT counts, total not.
    assert s["ttft_ms"]["count"] == 4 and s["total_ms"]["count"] == 0


async def test_stall_counts_as_idle_timeout(backend: LocalBackend) -> None:
    run = await run_load(
        target(backend, "stall_after=2;stall_for=5", timeouts=Timeouts(idle=0.2, total=5.0)),
        [QUESTION],
        LoadSpec(requests=2, concurrency=2),
    )
    s = summarize(run)
    # The pipeline gives up after 0.2 s of silence, then reports the cut stream too.
    assert s["errors_by_code"] == {"idle_timeout": 2, "truncated": 2}
    assert s["errors_by_stage"] == {"timeout": 2, "sse": 2}
    assert s["failed"] == 2
    assert all(r.tokens == 2 for r in run.records)


async def test_mixed_outcomes_give_the_error_rate(backend: LocalBackend) -> None:
    good = target(backend, None, extra_body={"max_tokens": 3})
    bad = target(backend, "status=429;retry_after=1")
    [ok_run] = await run_sweep(good, [QUESTION], [LoadSpec(requests=3, concurrency=1)])
    [bad_run] = await run_sweep(bad, [QUESTION], [LoadSpec(requests=1, concurrency=1)])
    ok_run.records.extend(bad_run.records)
    s = summarize(ok_run)
    assert s["requests"] == 4 and s["ok"] == 3 and s["error_rate"] == 0.25
    assert s["errors_by_code"] == {"rate_limited": 1}


# -- load shapes ---------------------------------------------------------------------


async def test_warmup_is_excluded_and_questions_rotate(backend: LocalBackend) -> None:
    questions = [QUESTION, "What is the travel expenses policy?", "Quelles sont les règles?"]
    run = await run_load(
        target(backend, extra_body={"max_tokens": 2}),
        questions,
        LoadSpec(requests=4, concurrency=1, warmup=2),
    )
    assert [r.index for r in run.records] == [0, 1, 2, 3]
    assert not any(r.warmup for r in run.records)
    assert len(run.warmup_records) == 2 and all(r.warmup for r in run.warmup_records)
    # Measured requests continue the rotation after the warm-up ones.
    assert [r.question for r in run.records] == [2, 0, 1, 2]
    assert summarize(run)["requests"] == 4
    doc = build_results([run], {})
    assert doc["runs"][0]["warmup_requests"] == 2 and len(doc["runs"][0]["requests"]) == 4


async def test_open_loop_fixed_schedule_sends_on_time(backend: LocalBackend) -> None:
    run = await run_load(
        target(backend, extra_body={"max_tokens": 2}),
        [QUESTION],
        LoadSpec(requests=5, concurrency=5, rate=20.0, schedule="fixed"),
    )
    assert [r.scheduled_ms for r in run.records] == pytest.approx([0, 50, 100, 150, 200], abs=0.01)
    for r in run.records:
        assert r.start_ms >= r.scheduled_ms
        assert r.queue_ms == pytest.approx(r.start_ms - r.scheduled_ms, abs=0.002)
    assert run.wall_s >= 0.2


async def test_open_loop_waits_for_a_free_slot(backend: LocalBackend) -> None:
    # 4 requests due at once (very high rate) but only one in flight: each waits for the
    # previous one, which takes at least 100 ms (first_token_delay).
    run = await run_load(
        target(backend, "first_token_delay=0.1", extra_body={"max_tokens": 1}),
        [QUESTION],
        LoadSpec(requests=4, concurrency=1, rate=10_000.0, schedule="fixed"),
    )
    queues = [r.queue_ms for r in run.records]
    assert queues[0] < 50.0
    assert queues[3] >= 300.0
    assert summarize(run)["queue_ms"]["count"] == 4


@given(
    n=st.integers(1, 200),
    rate=st.floats(0.01, 1e4, allow_nan=False),
    seed=st.integers(0, 2**31),
    schedule=st.sampled_from(["poisson", "fixed"]),
)
def test_arrivals_are_a_schedule(n: int, rate: float, seed: int, schedule: Any) -> None:
    load = LoadSpec(requests=n, rate=rate, schedule=schedule, seed=seed)
    times = load.arrivals()
    assert len(times) == n and times[0] == 0.0
    assert all(b >= a for a, b in itertools.pairwise(times))
    assert times == LoadSpec(requests=n, rate=rate, schedule=schedule, seed=seed).arrivals()
    if schedule == "fixed":
        assert times == pytest.approx([i / rate for i in range(n)])


def test_poisson_arrivals_have_the_asked_rate() -> None:
    times = LoadSpec(requests=20_000, rate=50.0, schedule="poisson", seed=7).arrivals()
    mean_gap = times[-1] / (len(times) - 1)
    assert mean_gap == pytest.approx(1 / 50.0, rel=0.03)


def test_load_spec_rejects_nonsense() -> None:
    for kwargs in (
        {"requests": 0},
        {"requests": 1, "concurrency": 0},
        {"requests": 1, "rate": 0.0},
        {"requests": 1, "warmup": -1},
        {"requests": 1, "schedule": "burst"},
    ):
        with pytest.raises(ValueError):
            LoadSpec(**kwargs)


# -- statistics ----------------------------------------------------------------------


def test_distribution_percentiles() -> None:
    d = distribution(float(x) for x in range(1, 101))
    # Linear interpolation between closest ranks: p = 1 + (n - 1) * q.
    assert d == {
        "count": 100,
        "mean": 50.5,
        "std": 28.866,
        "min": 1.0,
        "p50": 50.5,
        "p90": 90.1,
        "p99": 99.01,
        "max": 100.0,
    }
    assert distribution([]) == {
        "count": 0,
        "mean": None,
        "std": None,
        "min": None,
        "p50": None,
        "p90": None,
        "p99": None,
        "max": None,
    }
    assert distribution([7.0])["p99"] == 7.0


# -- results.json --------------------------------------------------------------------

TOP_KEYS = {"schema_version", "tool", "created_at", "config", "versions", "machine", "runs"}
RUN_KEYS = {"load", "started_at", "wall_s", "warmup_requests", "summary", "requests"}
LOAD_KEYS = {
    "requests",
    "concurrency",
    "rate",
    "schedule",
    "warmup",
    "seed",
    # schema 2
    "duration_s",
    "ramp_up_s",
}
DIST = {"count", "mean", "min", "p50", "p90", "p99", "max", "std"}
SUMMARY_KEYS = {
    "requests",
    "ok",
    "failed",
    "error_rate",
    "errors_by_code",
    "errors_by_stage",
    "error_messages",
    "wall_s",
    "throughput_rps",
    "output_tokens_per_s",
    "tokens",
    "ttft_ms",
    "itl_ms",
    "tokens_per_s",
    "citations_ms",
    "sources_ms",
    "grounding_ms",
    "stream_ms",
    "total_ms",
    "queue_ms",
    "client",
    # schema 2
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
    "percentiles",
    "token_count_source",
    "output_tokens_total",
    "input_tokens_total",
    "input_token_count_source",
    "reasoning_token_count_source",
    "total_tokens_per_s",
    "chunks_per_s",
    "offered_rps",
    "achieved_rps",
    "nothing_to_check",
    "warnings",
    "first_claim_ms",  # live claims (additive)
}
REQUEST_KEYS = {
    "index",
    "question",
    "warmup",
    "ok",
    "complete",
    "scheduled_ms",
    "start_ms",
    "queue_ms",
    "ttft_ms",
    "citations_ms",
    "sources_ms",
    "grounding_ms",
    "stream_ms",
    "total_ms",
    "tokens",
    "tokens_per_s",
    "token_ms",
    "finish_reason",
    "citations",
    "citation_refs",
    "sources",
    "support_score",
    "completion_tokens",
    "errors",
    "pipeline",
    # schema 2
    "finish_ms",
    "reasoning_ms",
    "last_reasoning_ms",
    "reasoning_chunks",
    "reasoning_tokens",
    "reasoning_tokens_source",
    "prompt_tokens",
    "input_tokens",
    "input_tokens_source",
    "output_tokens",
    "output_tokens_source",
    "tpot_ms",
    "output_tokens_per_s",
    "e2e_ms",
    "nothing_to_check",
    "first_claim_ms",  # live claims (additive)
}
PIPELINE_KEYS = {
    "ttft_ms",
    "stream_ms",
    "citations_ms",
    "sources_ms",
    "grounding_ms",
    "total_ms",
    "first_claim_ms",
}
VERSION_KEYS = {
    "python",
    "implementation",
    "streamcite",
    "aiohttp",
    "httpx",
    "httpx-sse",
    "orjson",
    "numpy",
    "rich",
    "matplotlib",
}
MACHINE_KEYS = {
    "system",
    "release",
    "machine",
    "cpu_model",
    "cpu_count",
    "cpu_usable",
    "memory_total",
    "loadavg",
}


def check_schema(doc: dict[str, Any]) -> None:
    assert set(doc) == TOP_KEYS
    assert doc["schema_version"] == SCHEMA_VERSION == 2
    assert doc["tool"] == "streamcite bench"
    assert set(doc["versions"]) == VERSION_KEYS
    assert set(doc["machine"]) == MACHINE_KEYS
    for run in doc["runs"]:
        assert set(run) == RUN_KEYS
        assert set(run["load"]) == LOAD_KEYS
        assert set(run["summary"]) == SUMMARY_KEYS
        for key in ("ttft_ms", "itl_ms", "tokens_per_s", "total_ms", "queue_ms"):
            assert set(run["summary"][key]) == DIST
        assert set(run["summary"]["client"]) == {
            "loop_lag_ms",
            "cpu_s",
            "cpu_pct",
            "schedule_lag_ms",  # schema 2
        }
        for req in run["requests"]:
            assert set(req) == REQUEST_KEYS
            assert set(req["pipeline"]) == PIPELINE_KEYS
            for err in req["errors"]:
                assert set(err) == {"code", "stage", "status", "message"}


async def test_results_json_schema_is_stable(backend: LocalBackend, tmp_path: Path) -> None:
    runs = await run_sweep(
        target(backend, "drop_after=4;token_delay=0.01", extra_body={"max_tokens": 6}),
        [QUESTION],
        [LoadSpec(requests=2, concurrency=1), LoadSpec(requests=2, concurrency=2)],
    )
    path = write_results(build_results(runs, {"note": "test"}), tmp_path)
    doc = orjson.loads(path.read_bytes())
    check_schema(doc)
    assert doc["config"] == {"note": "test"}
    assert doc["runs"][0]["requests"][0]["errors"]
    assert load_results(path)["runs"][1]["load"]["concurrency"] == 2
    assert doc["runs"][0]["summary"]["client"]["loop_lag_ms"]["count"] > 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"not json", "not JSON"),
        (b"[]", "expected an object"),
        (b'{"runs": []}', "no schema_version"),
        (b'{"schema_version": 99, "runs": []}', "newer"),
        (b'{"schema_version": 1, "runs": {}}', "runs"),
        (b'{"schema_version": 1, "runs": [{"load": {}, "summary": {}}]}', "requests"),
    ],
)
def test_load_results_rejects_foreign_files(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "results.json"
    path.write_bytes(content)
    with pytest.raises(ResultsFileError, match=message):
        load_results(path)


# -- compare -------------------------------------------------------------------------


def fake_doc(ttft_p50: float, rps: float) -> dict[str, Any]:
    summary = {"ttft_ms": {"p50": ttft_p50, "p99": None}, "throughput_rps": rps, "error_rate": 0.0}
    return {
        "schema_version": 1,
        "runs": [
            {
                "load": {"concurrency": 4, "rate": None, "requests": 10},
                "summary": summary,
                "requests": [],
            }
        ],
    }


def test_compare_rows_give_b_over_a() -> None:
    rows = {
        label: (a, b, ratio)
        for label, a, b, ratio in compare_rows(
            fake_doc(100.0, 2.0)["runs"][0]["summary"], fake_doc(150.0, 1.0)["runs"][0]["summary"]
        )
    }
    assert rows["TTFT p50 (ms)"] == (100.0, 150.0, 1.5)
    assert rows["throughput (ok req/s)"] == (2.0, 1.0, 0.5)
    assert rows["TTFT p99 (ms)"] == (None, None, None)
    assert rows["error rate"] == (0.0, 0.0, None)  # no ratio against zero


def test_cli_compare_prints_ratios(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "results.json").write_bytes(orjson.dumps(fake_doc(100.0, 2.0)))
    (tmp_path / "b" / "results.json").write_bytes(orjson.dumps(fake_doc(125.0, 2.0)))
    result = CliRunner().invoke(
        command,
        ["--compare", str(tmp_path / "a" / "results.json"), str(tmp_path / "b" / "results.json")],
    )
    assert result.exit_code == 0, result.output
    assert "1.25×" in result.output and "B / A" in result.output
    assert f"A = {tmp_path / 'a' / 'results.json'}" in result.output
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    result = CliRunner().invoke(command, ["--compare", str(bad), str(bad)])
    assert result.exit_code != 0 and "schema_version" in result.output


# -- plots ---------------------------------------------------------------------------


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, path
    assert len(data) > 5 * 1024, (path, len(data))


async def test_plots_are_real_pngs(backend: LocalBackend, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from streamcite.bench.plots import write_plots

    runs = await run_sweep(
        target(backend, "token_delay=0.002", extra_body={"max_tokens": 6}),
        [QUESTION],
        [LoadSpec(requests=4, concurrency=1), LoadSpec(requests=4, concurrency=3)],
    )
    written = write_plots(build_results(runs, {}), tmp_path)
    names = {p.name for p in written}
    assert names == {
        "ttft_cdf.png",
        "itl_cdf.png",
        "timeline.png",
        "timeline-1.png",
        "timeline-2.png",
        "latency_vs_concurrency.png",
    }
    for p in written:
        assert_png(p)


# -- the command line ----------------------------------------------------------------


def test_cli_end_to_end_with_the_local_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_TEST_KEY", "sk-very-secret-value")
    questions = tmp_path / "q.txt"
    questions.write_text(f"# questions\n{QUESTION}\n\n" + '{"question": "Travel expenses?"}\n')
    out = tmp_path / "out"
    result = CliRunner().invoke(
        command,
        [
            "--upstream",
            "local",
            "--local-in-process",
            "--questions",
            str(questions),
            "--requests",
            "3",
            "--concurrency",
            "1",
            "--concurrency",
            "2",
            "--warmup",
            "1",
            "--fault",
            "first_token_delay=0.02",
            "--max-tokens",
            "4",
            "--wikit-app",
            "app",
            "--wikit-org",
            "org",
            "--grounding",
            "local",
            "--grounding-facts",
            "both",
            "--api-key-env",
            "BENCH_TEST_KEY",
            "--out",
            str(out),
            "--progress",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "TTFT (ms)" in result.output and "sweep" in result.output
    assert "first claim (ms)" in result.output
    raw = (out / "results.json").read_bytes()
    assert b"sk-very-secret-value" not in raw
    doc = orjson.loads(raw)
    check_schema(doc)
    cfg = doc["config"]
    assert cfg["api_key_env"] == "BENCH_TEST_KEY" and cfg["concurrency"] == [1, 2]
    assert cfg["questions"] == 2 and cfg["fault"] == "first_token_delay=0.02"
    for run in doc["runs"]:
        s = run["summary"]
        assert s["ok"] == 3, s["errors_by_code"]
        assert s["sources_ms"]["count"] == 3 and s["grounding_ms"]["count"] == 3
        assert s["first_claim_ms"]["count"] == 3
        assert s["ttft_ms"]["min"] >= 20.0
        assert all(r["support_score"] is not None and r["sources"] > 0 for r in run["requests"])
    assert cfg["grounding"] == "local" and cfg["grounding_facts"] == "both"
    if _has_matplotlib():
        for name in ("ttft_cdf.png", "itl_cdf.png", "timeline.png", "latency_vs_concurrency.png"):
            assert_png(out / name)


def test_cli_usage_errors() -> None:
    runner = CliRunner()
    cases = [
        (["--question", "q", "--base-url", "http://x/v1", "--upstream", "local"], "not both"),
        (["--question", "q", "--base-url", "http://x/v1"], "--model"),
        (["--upstream", "local"], "--questions"),
        (["--question", "q", "--wikit-app", "a"], "--wikit-org"),
        (["--question", "q", "--api-key-env", "STREAMCITE_SURELY_UNSET"], "not set"),
        (["--question", "q", "--grounding-facts", "sources"], "--grounding local|google"),
        (["--question", "q", "--grounding", "local", "--grounding-facts", "both"], "--wikit-app"),
    ]
    for args, message in cases:
        result = runner.invoke(command, args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, (args, result.output)


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def test_no_plots_never_imports_matplotlib_and_local_runs_in_a_child_process(
    tmp_path: Path,
) -> None:
    # A fresh interpreter: other tests of this session may have imported matplotlib.
    script = (
        "import sys\n"
        "from streamcite.apps.bench import command\n"
        "try:\n"
        "    command(sys.argv[1:], standalone_mode=False)\n"
        "finally:\n"
        "    print('MATPLOTLIB', 'matplotlib' in sys.modules)\n"
    )
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            script,
            "--upstream",
            "local",
            "--question",
            QUESTION,
            "--requests",
            "2",
            "--warmup",
            "0",
            "--max-tokens",
            "3",
            "--out",
            str(out),
            "--no-plots",
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "120"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "MATPLOTLIB False" in proc.stdout
    doc = load_results(out / "results.json")
    assert doc["config"]["local_mode"] == "process"
    assert doc["runs"][0]["summary"]["ok"] == 2
    assert not list(out.glob("*.png"))


async def test_local_upstream_child_process_stops() -> None:
    upstream = LocalUpstream({"first_token_delay": 0.0})
    async with upstream:
        assert upstream.base_url.endswith("/v1")
        proc = upstream._proc
        run = await run_load(
            BenchTarget(upstream.base_url, extra_body={"max_tokens": 2}),
            [QUESTION],
            LoadSpec(requests=2),
        )
        assert summarize(run)["ok"] == 2
    assert proc is not None and not proc.is_alive()
