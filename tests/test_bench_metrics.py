"""``streamcite bench`` at the level of the LLM benchmark tools (issue 16): token counts
from usage / a tokenizer / chunks, TPOT, ISL/OSL, reasoning timings, SLOs and goodput,
open-loop honesty, load shapes, workloads, CSV, and runs that must render cleanly.

Against the embedded backend over real loopback HTTP, and a tiny OpenAI-compatible
aiohttp upstream that sends real ``usage`` (and can put a whole answer in one write).
"""

from __future__ import annotations

import csv
import dataclasses
import itertools
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import structlog
from aiohttp import web
from click.testing import CliRunner
from rich.console import Console

from streamcite.apps.bench import command
from streamcite.bench import (
    EXIT_SLO_MISSED,
    BenchTarget,
    LoadSpec,
    Prompt,
    build_results,
    load_prompts,
    parse_slo,
    run_load,
    run_rate_sweep,
    run_sweep,
    summarize,
    synthetic_prompts,
    write_csv,
    write_results,
)
from streamcite.bench.csvout import CSV_COLUMNS
from streamcite.bench.diagnose import SCHEDULE_TOLERANCE
from streamcite.bench.report import compare_tables, summary_tables
from streamcite.bench.tokens import WordCounter
from streamcite.local.profiles import REASONING_TEXT
from streamcite.local.server import BackendConfig, LocalBackend

QUESTION = "How many days of remote work are allowed per week?"
UNANSWERABLE = "What is the capital of Mars?"


@pytest.fixture(autouse=True)
def restore_structlog() -> Iterator[None]:
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


def _config(**kw: Any) -> BackendConfig:
    names = {f.name for f in dataclasses.fields(BackendConfig)}
    if "allow_client_faults" in names:
        kw.setdefault("allow_client_faults", True)
    return BackendConfig(**kw)


@pytest.fixture
async def backend() -> AsyncIterator[LocalBackend]:
    async with LocalBackend(_config(), host="127.0.0.1", port=0) as b:
        yield b


def target(backend: LocalBackend, fault: str | None = None, **kw: Any) -> BenchTarget:
    headers = {"X-Streamcite-Fault": fault} if fault else {}
    return BenchTarget(backend.base_url, headers=headers, **kw)


# -- a tiny OpenAI-compatible upstream ------------------------------------------------


class TinyUpstream:
    """Streams ``chunks`` words ``gap`` s apart (or all in one write), with a usage chunk
    counting ``tokens_per_chunk`` tokens per chunk; records the request bodies."""

    def __init__(
        self, chunks: int = 6, gap: float = 0.01, *, usage: bool = True, one_write: bool = False
    ) -> None:
        self.chunks, self.gap, self.usage, self.one_write = chunks, gap, usage, one_write
        self.tokens_per_chunk = 2
        self.bodies: list[dict[str, Any]] = []
        self.base_url = ""

    def _event(self, obj: dict[str, Any]) -> bytes:
        return b"data: " + orjson.dumps(obj) + b"\n\n"

    async def handle(self, request: web.Request) -> web.StreamResponse:
        import asyncio

        self.bodies.append(await request.json())
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        top = {"id": "c1", "object": "chat.completion.chunk", "model": "tiny"}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            return self._event({**top, "choices": [choice]})

        events = [chunk({"role": "assistant", "content": ""})]
        events += [chunk({"content": f" w{i}"}) for i in range(self.chunks)]
        events.append(chunk({}, "stop"))
        if self.usage:
            n = self.chunks * self.tokens_per_chunk
            usage = {"prompt_tokens": 42, "completion_tokens": n, "total_tokens": 42 + n}
            events.append(self._event({**top, "choices": [], "usage": usage}))
        events.append(b"data: [DONE]\n\n")
        if self.one_write:
            await resp.write(b"".join(events))
        else:
            for ev in events:
                await resp.write(ev)
                await asyncio.sleep(self.gap)
        await resp.write_eof()
        return resp


@pytest.fixture
async def tiny() -> AsyncIterator[TinyUpstream]:
    up = TinyUpstream()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", up.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    up.base_url = f"http://127.0.0.1:{port}/v1"
    try:
        yield up
    finally:
        await runner.cleanup()


# -- token counts, TPOT, ISL/OSL --------------------------------------------------------


async def test_usage_gives_the_output_length_and_tpot(tiny: TinyUpstream) -> None:
    run = await run_load(
        BenchTarget(tiny.base_url, model="tiny"), [QUESTION], LoadSpec(requests=3, concurrency=1)
    )
    s = summarize(run)
    assert s["ok"] == 3 and s["token_count_source"] == "usage"
    for r in run.records:
        # 6 chunks, 12 tokens by the provider's count: usage wins over chunks.
        assert r.tokens == 6 and r.output_tokens == 12 and r.output_tokens_source == "usage"
        assert r.input_tokens == 42 and r.input_tokens_source == "usage"
        # 5 gaps of >= 10 ms between first and last chunk, spread over 11 tokens (the
        # gaps are sleeps: a loaded machine stretches them, so the exact figure is checked
        # against the record's own chunk times, not a wall-clock upper bound).
        assert r.tpot_ms is not None and r.tpot_ms >= 50.0 / 11
        assert r.tpot_ms == pytest.approx((r.token_ms[-1] - r.token_ms[0]) / 11, rel=1e-9)
        assert r.output_tps is not None and r.output_tps == pytest.approx(
            12 / (r.token_ms[-1] / 1000.0), rel=1e-6
        )
    assert s["output_tokens"]["p50"] == 12 and s["input_tokens"]["p50"] == 42
    assert s["output_tokens_total"] == 36
    assert s["output_tokens_per_s"] == pytest.approx(36 / run.wall_s, rel=1e-2)
    assert s["tpot_ms"]["count"] == 3 and s["tpot_ms"]["min"] >= 50.0 / 11


async def test_without_usage_a_tokenizer_or_the_chunks_count(tiny: TinyUpstream) -> None:
    tiny.usage = False
    [by_chunks] = await run_sweep(
        BenchTarget(tiny.base_url, model="tiny"), [QUESTION], [LoadSpec(requests=2)]
    )
    assert summarize(by_chunks)["token_count_source"] == "chunks"
    assert all(r.output_tokens == 6 and r.input_tokens is None for r in by_chunks.records)
    words = BenchTarget(tiny.base_url, model="tiny", tokenizer=WordCounter())
    [by_words] = await run_sweep(words, ["one two three"], [LoadSpec(requests=2)])
    assert summarize(by_words)["token_count_source"] == "tokenizer"
    for r in by_words.records:
        assert r.output_tokens == 6 and r.output_tokens_source == "tokenizer"
        assert r.input_tokens == 3 and r.input_tokens_source == "tokenizer"


async def test_hugging_face_tokenizer_file(tiny: TinyUpstream, tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    from streamcite.bench.tokens import load_tokenizer

    vocab = {"[UNK]": 0, **{f"w{i}": i + 1 for i in range(6)}}
    tok = tokenizers.Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    tok.save(str(tmp_path / "tokenizer.json"))
    counter = load_tokenizer(str(tmp_path / "tokenizer.json"))
    assert counter.count("w0 w1 hello") == 3
    tiny.usage = False
    run = await run_load(
        BenchTarget(tiny.base_url, model="tiny", tokenizer=counter), [QUESTION], LoadSpec(1)
    )
    assert run.records[0].output_tokens == 6
    assert run.records[0].output_tokens_source == "tokenizer"


async def test_reasoning_and_answer_are_timed_apart(backend: LocalBackend) -> None:
    run = await run_load(
        target(
            backend,
            "profile=reasoning;first_token_delay=0.05;token_delay=0.01",
            extra_body={"max_tokens": 4},
        ),
        [QUESTION],
        LoadSpec(requests=3, concurrency=1),
    )
    s = summarize(run)
    n_reasoning = len(REASONING_TEXT.split(" "))
    assert s["ok"] == 3
    for r in run.records:
        assert r.reasoning_ms is not None and r.ttft_ms is not None
        assert r.reasoning_ms >= 50.0  # the first-token delay comes before any output
        # Every reasoning chunk comes 10 ms apart before the first answer token.
        assert r.ttft_ms >= r.reasoning_ms + 10.0 * n_reasoning
        assert r.reasoning_chunks == n_reasoning == r.reasoning_tokens
        assert r.reasoning_tokens_source == "chunks"
        # The backend's usage counts the 4 answer tokens only: the reasoning is added.
        assert r.completion_tokens == 4 and r.output_tokens == 4 + n_reasoning
        assert r.tpot_ms is not None and 10.0 <= r.tpot_ms <= 25.0
    assert s["reasoning_ms"]["count"] == 3 and s["reasoning_ms"]["min"] >= 50.0
    assert s["reasoning_tokens"]["p50"] == n_reasoning


# -- open loop honesty -----------------------------------------------------------------


async def test_an_unkeepable_rate_is_reported(backend: LocalBackend) -> None:
    run = await run_load(
        target(backend, "first_token_delay=0.05", extra_body={"max_tokens": 2}),
        [QUESTION],
        LoadSpec(requests=8, concurrency=1, rate=100.0, schedule="constant"),
    )
    doc = build_results([run], {})
    s = doc["runs"][0]["summary"]
    assert s["offered_rps"] == 100.0
    assert s["achieved_rps"] is not None and s["achieved_rps"] < 25.0  # one slot, >= 50 ms each
    assert any("could not keep the schedule" in w for w in s["warnings"])
    for r in run.records:
        assert r.queue_ms is not None and r.e2e_ms is not None and r.total_ms is not None
        assert r.e2e_ms == pytest.approx(r.total_ms + r.queue_ms, abs=0.01)
    assert s["e2e_ms"]["p50"] > s["total_ms"]["p50"]
    text = _render(doc)
    assert "warning: the client could not keep the schedule" in text
    assert "total incl. queue" in text and "achieved" in text


async def test_a_kept_schedule_gives_no_warning_and_closed_loop_has_no_queue(
    backend: LocalBackend,
) -> None:
    [open_run] = await run_sweep(
        target(backend, "token_delay=0.002", extra_body={"max_tokens": 2}),
        [QUESTION],
        [LoadSpec(requests=5, concurrency=4, rate=20.0, schedule="constant")],
    )
    s = build_results([open_run], {})["runs"][0]["summary"]
    # A quiet machine keeps 20 req/s; a loaded one may not, and the run then says so. The
    # warning is checked against the run's own figures, not against the machine's load.
    queued = (s.get("queue_ms") or {}).get("p50") or 0.0
    kept = s["achieved_rps"] >= 20.0 * (1 - SCHEDULE_TOLERANCE) and queued <= 10.0
    assert s["achieved_rps"] <= 20.0 * (1 + SCHEDULE_TOLERANCE), s["achieved_rps"]
    assert kept == (not any("schedule" in w for w in s["warnings"])), (s, kept)
    [closed] = await run_sweep(
        target(backend, extra_body={"max_tokens": 2}), [QUESTION], [LoadSpec(requests=2)]
    )
    doc = build_results([closed], {})
    assert all(r["queue_ms"] is None for r in doc["runs"][0]["requests"])
    assert doc["runs"][0]["summary"]["e2e_ms"]["count"] == 0


# -- SLOs and goodput ------------------------------------------------------------------


def test_slo_parsing() -> None:
    assert parse_slo("ttft_ms=500").percentile is None
    o = parse_slo("p95:itl_ms=50")
    assert (o.metric, o.threshold, o.percentile, o.spec) == ("itl_ms", 50.0, 95.0, "p95:itl_ms=50")
    for bad in ("ttft=5", "p95:ttft_ms", "p0:ttft_ms=1", "p95:error_rate=0.1", "ttft_ms=-1"):
        with pytest.raises(ValueError):
            parse_slo(bad)


async def test_slo_pass_miss_and_goodput(backend: LocalBackend) -> None:
    run = await run_load(
        target(backend, "first_token_delay=0.03", extra_body={"max_tokens": 3}),
        [QUESTION],
        LoadSpec(requests=4, concurrency=2),
    )
    slos = [parse_slo(x) for x in ("p50:ttft_ms=10000", "total_ms=10000", "error_rate=0")]
    s = build_results([run], {}, slos=slos)["runs"][0]["summary"]
    assert s["slo"]["passed"] and s["slo"]["good_requests"] == 4
    assert s["goodput_rps"] == s["throughput_rps"]
    strict = [parse_slo("ttft_ms=30"), parse_slo("p99:ttft_ms=10")]
    s = build_results([run], {}, slos=strict)["runs"][0]["summary"]
    # Never below the injected 30 ms: no request is good, both objectives missed.
    assert not s["slo"]["passed"] and s["slo"]["good_requests"] == 0 and s["goodput_rps"] == 0
    assert [c["passed"] for c in s["slo"]["objectives"]] == [False, False]
    p95 = build_results([run], {}, slos=[parse_slo("p95:ttft_ms=1")])["runs"][0]["summary"]
    assert "p95" in p95["ttft_ms"]  # an SLO's percentile is always computed


def test_cli_slo_miss_exits_with_the_documented_code() -> None:
    args = ["--upstream", "local", "--local-in-process", "--question", QUESTION]
    args += ["--requests", "2", "--warmup", "0", "--max-tokens", "2"]
    args += ["--fault", "first_token_delay=0.02"]
    missed = CliRunner().invoke(command, [*args, "--slo", "p50:ttft_ms=1"])
    assert missed.exit_code == EXIT_SLO_MISSED == 3, missed.output
    assert "SLO missed" in missed.output and "SLO ✗ p50:ttft_ms=1" in missed.output
    met = CliRunner().invoke(command, [*args, "--slo", "ttft_ms=60000"])
    assert met.exit_code == 0, met.output
    assert "goodput" in met.output and "SLO ✓ ttft_ms=60000" in met.output
    usage = CliRunner().invoke(command, [*args, "--slo", "nope=1"])
    assert usage.exit_code == 2 and "unknown metric" in usage.output


# -- load shapes ------------------------------------------------------------------------


async def test_duration_bounds_the_measured_window(backend: LocalBackend) -> None:
    run = await run_load(
        target(backend, "first_token_delay=0.02", extra_body={"max_tokens": 2}),
        [QUESTION],
        LoadSpec(requests=10_000, concurrency=2, duration_s=0.3),
    )
    assert 2 <= len(run.records) < 100
    # Every request was released inside the window (its send may follow on a loaded loop).
    assert all(r.scheduled_ms < 300.0 for r in run.records)
    assert run.wall_s >= 0.3


async def test_warmup_runs_into_the_window_without_a_barrier(backend: LocalBackend) -> None:
    run = await run_load(
        target(backend, "first_token_delay=0.03;token_delay=0.01", extra_body={"max_tokens": 3}),
        [QUESTION],
        LoadSpec(requests=4, concurrency=3, warmup=4, ramp_up_s=0.06),
    )
    # Warm-up requests were sent before the window opened (negative start) and some
    # were still in flight when it did: no pause, no burst of 3 released at once.
    warm = run.warmup_records
    assert len(warm) >= 4 and all(r.start_ms < 0 for r in warm)
    assert any(r.start_ms + (r.total_ms or 0.0) > 0 for r in warm)
    firsts = sorted(r.start_ms for r in run.records)[:3]
    assert firsts[-1] - firsts[0] >= 5.0


def test_ramp_up_raises_the_rate_linearly() -> None:
    load = LoadSpec(requests=20, rate=10.0, schedule="constant", ramp_up_s=2.0)
    plan = list(load.plan())
    warm = [t for t, w in plan if w]
    measured = [t for t, w in plan if not w]
    # A linear ramp to 10/s over 2 s holds about 10 arrivals, ever closer together.
    assert 9 <= len(warm) <= 11
    gaps = [b - a for a, b in itertools.pairwise(warm)]
    assert gaps == sorted(gaps, reverse=True)
    assert measured[0] >= 2.0 and len(measured) == 20
    assert [b - a for a, b in itertools.pairwise(measured)] == pytest.approx([0.1] * 19)
    assert LoadSpec(requests=5, rate=10.0, duration_s=0.25).arrivals()[-1] < 0.25


async def test_rate_sweep_stops_past_saturation(backend: LocalBackend) -> None:
    loads = [
        LoadSpec(requests=4, concurrency=1, rate=r, schedule="constant")
        for r in (400.0, 2.0, 1000.0)
    ]
    runs = await run_rate_sweep(
        target(backend, "first_token_delay=0.03", extra_body={"max_tokens": 2}), [QUESTION], loads
    )
    # Sorted by rate; 2/s is kept, 400/s is not (one slot, >= 30 ms each): stop there.
    assert [r.load.rate for r in runs] == [2.0, 400.0]


# -- workloads -------------------------------------------------------------------------


async def test_jsonl_bodies_sharegpt_and_extra_body_reach_the_server(
    tiny: TinyUpstream, tmp_path: Path
) -> None:
    path = tmp_path / "prompts.jsonl"
    lines = [
        {"question": "plain?"},
        {"messages": [{"role": "user", "content": "body?"}], "temperature": 0.5},
        {"conversations": [{"from": "system", "value": "be brief"},
                           {"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"},
                           {"from": "human", "value": "again?"}, {"from": "gpt", "value": "x"}]},
    ]  # fmt: skip
    path.write_text("\n".join(orjson.dumps(x).decode() for x in lines) + "\nraw question\n")
    prompts = load_prompts(path)
    assert len(prompts) == 4
    extra = {"ignore_eos": True, "temperature": 0.0}
    await run_load(BenchTarget(tiny.base_url, model="tiny", extra_body=extra), prompts, LoadSpec(4))
    bodies = tiny.bodies
    assert [b["messages"][-1]["content"] for b in bodies] == [
        "plain?",
        "body?",
        "again?",
        "raw question",
    ]
    assert [m["role"] for m in bodies[2]["messages"]] == ["system", "user", "assistant", "user"]
    assert all(b["ignore_eos"] is True and b["temperature"] == 0.0 for b in bodies)
    assert all(b["stream"] is True and b["model"] == "tiny" for b in bodies)
    array = tmp_path / "sharegpt.json"
    array.write_bytes(orjson.dumps([lines[2], lines[0]]))
    assert [p.messages[-1]["content"] for p in load_prompts(array)] == ["again?", "plain?"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"foo": 1}\n')
    with pytest.raises(ValueError, match="conversations"):
        load_prompts(bad)


def test_synthetic_prompts_follow_the_length_distribution() -> None:
    prompts = synthetic_prompts(400, 50.0, 10.0, seed=3)
    lengths = [len(p.text.split()) for p in prompts]
    assert sum(lengths) / len(lengths) == pytest.approx(50.0, rel=0.05)
    assert min(lengths) >= 1 and len({p.text for p in prompts}) == 400
    assert synthetic_prompts(5, 8.0, seed=1) == synthetic_prompts(5, 8.0, seed=1)
    assert all(len(p.text.split()) == 8 for p in synthetic_prompts(5, 8.0))
    assert isinstance(prompts[0], Prompt)


# -- outputs -----------------------------------------------------------------------------


async def test_csv_and_json_agree(backend: LocalBackend, tmp_path: Path) -> None:
    runs = await run_sweep(
        target(backend, "drop_after=3;token_delay=0.005", extra_body={"max_tokens": 5}),
        [QUESTION],
        [LoadSpec(requests=2), LoadSpec(requests=2, concurrency=2, rate=50.0)],
    )
    runs += await run_sweep(
        target(backend, extra_body={"max_tokens": 4}), [QUESTION], [LoadSpec(requests=2)]
    )
    doc = orjson.loads(write_results(build_results(runs, {}), tmp_path).read_bytes())
    with write_csv(doc, tmp_path).open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == list(CSV_COLUMNS)
    reqs = [(n, run, r) for n, run in enumerate(doc["runs"], 1) for r in run["requests"]]
    assert len(rows) == len(reqs) == 6
    for row, (n, run, req) in zip(rows, reqs, strict=True):
        assert row["run"] == str(n) and row["concurrency"] == str(run["load"]["concurrency"])
        for col in CSV_COLUMNS[3:]:
            if col == "error_message":  # the first error's message, as recorded
                first = next((e["message"] for e in req["errors"] if e["message"]), "")
                assert row[col] == first, col
                continue
            value = req[col]
            if col == "errors":
                assert row[col] == ";".join(f"{e['code']}@{e['stage']}" for e in value)
            elif value is None:
                assert row[col] == "", col
            elif isinstance(value, bool):
                assert row[col] == str(value).lower(), col
            elif isinstance(value, float):
                assert float(row[col]) == value, col
            else:
                assert row[col] == str(value), col


async def test_nothing_to_check_and_no_citations_are_not_scores(backend: LocalBackend) -> None:
    from streamcite.grounding.checker import LocalGrounding

    run = await run_load(
        target(backend, extra_body={"max_tokens": 40}),
        [UNANSWERABLE],
        LoadSpec(requests=2),
        enrichers=[LocalGrounding()],
    )
    doc = build_results([run], {})
    s = doc["runs"][0]["summary"]
    for r in run.records:
        assert r.ok and r.citations == 0 and r.citations_ms is None and r.finish_ms is not None
        assert r.nothing_to_check is True and r.support_score is None
    assert s["citations_ms"]["count"] == 0 and s["support_score"]["count"] == 0
    assert s["nothing_to_check"] == 2
    text = _render(doc)
    assert "→ citations" not in text and "→ sources" not in text
    assert "nothing to check ×2" in text and "support score" not in text


async def test_all_failed_run_renders_cleanly(backend: LocalBackend, tmp_path: Path) -> None:
    run = await run_load(target(backend, "status=503"), [QUESTION], LoadSpec(requests=3))
    doc = build_results([run], {})
    s = doc["runs"][0]["summary"]
    assert s["output_tokens_per_s"] == 0.0 and s["throughput_rps"] == 0.0
    text = _render(doc)
    assert "┏" not in text and "metric" not in text  # no headers without rows
    assert "CPU" not in text and "tokens/s" not in text
    assert "no request succeeded" in text
    assert "— ms" not in text  # no "loop lag p99 — ms"
    pytest.importorskip("matplotlib")
    from streamcite.bench.plots import write_plots

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a matplotlib warning fails the test
        written = {p.name for p in write_plots(doc, tmp_path)}
    assert written == {"timeline.png"}  # no empty CDFs


async def test_chunks_in_one_write_raise_a_warning(tiny: TinyUpstream) -> None:
    tiny.one_write = True
    run = await run_load(BenchTarget(tiny.base_url, model="tiny"), [QUESTION], LoadSpec(2))
    s = build_results([run], {})["runs"][0]["summary"]
    assert any("arrived in one write" in w for w in s["warnings"]), s["warnings"]


async def test_no_token_delay_is_labelled(backend: LocalBackend) -> None:
    run = await run_load(target(backend, extra_body={"max_tokens": 20}), [QUESTION], LoadSpec(3))
    s = build_results([run], {})["runs"][0]["summary"]
    assert any("token_delay" in w or "one write" in w for w in s["warnings"]), s["warnings"]


def _render(doc: dict[str, Any], width: int = 160) -> str:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(summary_tables(doc))
    return console.export_text()


def _fake_run(stage_p50: dict[str, float], **load: Any) -> dict[str, Any]:
    d = {"count": 1, "mean": 1.0, "std": 0.0, "min": 1.0, "p90": 1.0, "p99": 1.0, "max": 1.0}
    summary: dict[str, Any] = {
        "requests": 1, "ok": 1, "error_rate": 0.0, "wall_s": 0.01, "errors_by_code": {},
        "ttft_ms": {**d, "p50": 1.0}, "itl_ms": {"count": 0}, "total_ms": {**d, "p50": 9.0},
        "client": {"loop_lag_ms": {}, "cpu_pct": 50.0},
    }  # fmt: skip
    for k, v in stage_p50.items():
        summary[k] = {**d, "p50": v}
    base = {"concurrency": 4, "rate": None, "requests": 10, "warmup": 0}
    return {"load": {**base, **load}, "summary": summary, "requests": []}


def test_stage_rows_in_the_order_they_finished_and_titles_keep_phrases() -> None:
    doc = {"runs": [_fake_run({"citations_ms": 5.0, "sources_ms": 8.0, "grounding_ms": 6.0})]}
    text = _render(doc)
    assert text.index("→ citations") < text.index("→ grounding") < text.index("→ sources")
    assert "CPU" not in text  # a 10 ms run: its CPU share means nothing
    narrow = _render(doc, width=30)
    for line in narrow.splitlines():
        assert not line.rstrip().endswith(("concurrency", "closed")), narrow


def test_compare_colours_zero_to_all_errors_and_warns_on_different_runs() -> None:
    a = {"config": {"fault": None}, "runs": [_fake_run({})]}
    b = {"config": {"fault": "status=503"}, "runs": [_fake_run({}, requests=20)]}
    b["runs"][0]["summary"]["error_rate"] = 1.0
    console = Console(width=200, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(compare_tables(a, b))
    text = console.export_text(styles=True, clear=False)
    plain = console.export_text()
    assert "+100.0 pp" in plain
    assert "\x1b[31m+100.0 pp" in text  # red
    assert "requests 10 vs 20" in plain and "fault None vs 'status=503'" in plain
    c = {"config": {}, "runs": [_fake_run({}, concurrency=8)]}
    console.print(compare_tables(a, c))
    assert "paired by position" in console.export_text()


def test_compare_ignores_local_ports_and_gives_no_ratio_of_noise() -> None:
    """Two local runs differ in their backend's port, not their config; ITLs both shown as
    0.0 have no meaningful ratio (it said 0.00× and 0.71×)."""
    a = {"config": {"upstream": "local", "base_url": "http://127.0.0.1:4001/v1"},
         "runs": [_fake_run({})]}  # fmt: skip
    b = {"config": {"upstream": "local", "base_url": "http://127.0.0.1:4002/v1"},
         "runs": [_fake_run({})]}  # fmt: skip
    for doc, itl in ((a, 0.01), (b, 0.007)):
        doc["runs"][0]["summary"]["itl_ms"] = {"count": 5, "p50": itl, "p99": itl}
    console = Console(width=200, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(compare_tables(a, b))
    plain = console.export_text()
    assert "base_url" not in plain and "differ" not in plain
    row = next(line for line in plain.splitlines() if "inter-token p50" in line)
    assert "×" not in row and "—" in row
    a["config"]["upstream"] = b["config"]["upstream"] = "openai"
    console.print(compare_tables(a, b))
    assert "base_url" in console.export_text()  # two real endpoints: say so


# -- the command line -------------------------------------------------------------------


def test_cli_fault_reaches_wikit_csv_and_percentiles(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        command,
        ["--upstream", "local", "--local-in-process", "--question", QUESTION,
         "--requests", "2", "--warmup", "0", "--max-tokens", "3",
         "--fault", "sources_delay=0.06", "--wikit-app", "a", "--wikit-org", "o",
         "--percentiles", "50,95", "--out", str(out), "--no-plots"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = orjson.loads((out / "results.json").read_bytes())
    assert doc["schema_version"] == 2 and (out / "requests.csv").is_file()
    for r in doc["runs"][0]["requests"]:
        assert r["sources"] > 0 and r["sources_ms"] >= r["finish_ms"] + 60.0
    assert "p95" in doc["runs"][0]["summary"]["ttft_ms"] and "p95" in result.output


def test_cli_without_matplotlib_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import streamcite.bench.plots as plots

    def unavailable(*_: Any) -> list[Path]:
        raise plots.PlotsUnavailable("plots need matplotlib: pip install 'streamcite[plot]'")

    monkeypatch.setattr(plots, "write_plots", unavailable)
    result = CliRunner().invoke(
        command,
        ["--upstream", "local", "--local-in-process", "--question", QUESTION,
         "--requests", "1", "--warmup", "0", "--max-tokens", "2", "--out", str(tmp_path)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "pip install 'streamcite[plot]'" in result.output


def test_cli_load_options(tmp_path: Path) -> None:
    out = tmp_path / "o"
    base = ["--upstream", "local", "--local-in-process", "--warmup", "0", "--max-tokens", "2"]
    result = CliRunner().invoke(
        command,
        [*base, "--synthetic-input", "12:2", "--synthetic-output", "3", "--rate-sweep", "5:10:2",
         "--concurrency", "4", "--requests", "3", "--schedule", "constant",
         "--extra-body", '{"temperature": 0}', "--tokenizer", "words", "--out", str(out),
         "--no-plots"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = orjson.loads((out / "results.json").read_bytes())
    assert [r["load"]["rate"] for r in doc["runs"]] == [5.0, 10.0]
    assert doc["config"]["extra_body_keys"] == ["max_tokens", "temperature"]
    assert "achieved" in result.output
    for args, message in (
        ([*base, "--question", "q", "--rate", "1", "--rate-sweep", "1:2"], "not both"),
        ([*base, "--question", "q", "--rate-sweep", "3:1"], "LOW < HIGH"),
        ([*base, "--question", "q", "--extra-body", "[1]"], "JSON object"),
        ([*base, "--synthetic-output", "3"], "--synthetic-input"),
        ([*base, "--question", "q", "--percentiles", "50,x"], "--percentiles"),
    ):
        bad = CliRunner().invoke(command, args)
        assert bad.exit_code == 2 and message in bad.output, (args, bad.output)


async def test_sweep_timeline_is_not_a_copy_of_the_first_run(
    backend: LocalBackend, tmp_path: Path
) -> None:
    pytest.importorskip("matplotlib")
    from streamcite.bench.plots import write_plots

    runs = await run_sweep(
        target(backend, "token_delay=0.002", extra_body={"max_tokens": 3}),
        [QUESTION],
        [LoadSpec(requests=3, concurrency=1), LoadSpec(requests=3, concurrency=3)],
    )
    write_plots(build_results(runs, {}), tmp_path)
    assert (tmp_path / "timeline.png").read_bytes() != (tmp_path / "timeline-1.png").read_bytes()


def test_an_80_column_table_never_cuts_a_number() -> None:
    """A local run with no token delay gives six-figure chunk rates: shortened, not cut."""
    from io import StringIO

    from rich.console import Console

    from streamcite.bench.tables import _table

    d = {"count": 20, "mean": 625_412.3, "std": 115_000.0, "p50": 672_001.0,
         "p90": 742_000.0, "p99": 766_000.0, "max": 10_769_200.0}  # fmt: skip
    out = StringIO()
    Console(file=out, width=80, color_system=None).print(
        _table({"tokens_per_s": d, "ttft_ms": dict(d, mean=8.8)}, {})
    )
    text = out.getvalue()
    assert "…" not in text
    assert "625k" in text and "10.8M" in text
