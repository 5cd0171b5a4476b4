"""Every figure ``streamcite bench`` prints is the quantity its label names (issue 27).

Each summary key gets a value no other key has, so a row that shows the wrong key's
value is caught: ``--compare`` labelled the chunk rate (547k) "tokens/s p50" while the
tokens per second p50 was 4,699; the summary printed an unlabelled throughput next to
"achieved"; ``timeline.png`` drew the first 120 requests of 5,084 (0.45 s of the run)
and did not say so.
"""

from __future__ import annotations

from typing import Any

import pytest
from rich.console import Console

from streamcite.bench.compare import compare_rows, compare_tables
from streamcite.bench.plots import timeline_sample
from streamcite.bench.tables import summary_tables

# label -> (summary key, distribution field or None): the definition of each figure.
_DEFINITIONS: dict[str, tuple[str, str | None]] = {
    "TTFT p50 (ms)": ("ttft_ms", "p50"),
    "TTFT p90 (ms)": ("ttft_ms", "p90"),
    "TTFT p99 (ms)": ("ttft_ms", "p99"),
    "inter-token p50 (ms)": ("itl_ms", "p50"),
    "inter-token p99 (ms)": ("itl_ms", "p99"),
    "TPOT p50 (ms)": ("tpot_ms", "p50"),
    "chunks/s per req p50": ("tokens_per_s", "p50"),
    "tokens/s per req p50": ("output_tokens_per_s_per_request", "p50"),
    "citations p50 (ms)": ("citations_ms", "p50"),
    "citations p99 (ms)": ("citations_ms", "p99"),
    "sources p50 (ms)": ("sources_ms", "p50"),
    "grounding p50 (ms)": ("grounding_ms", "p50"),
    "total p50 (ms)": ("total_ms", "p50"),
    "total p99 (ms)": ("total_ms", "p99"),
    "throughput (ok req/s)": ("throughput_rps", None),
    "goodput (req/s)": ("goodput_rps", None),
    "send rate achieved (req/s)": ("achieved_rps", None),
    "output tokens/s (all req)": ("output_tokens_per_s", None),
    "error rate": ("error_rate", None),
}


def _summary(scale: float) -> dict[str, Any]:
    """A summary whose every figure is distinct (key number × 100 + field number)."""
    s: dict[str, Any] = {"requests": 10, "ok": 9, "errors_by_code": {}, "wall_s": 2.0}
    s["offered_rps"] = 4.0
    s["client"] = {"loop_lag_ms": {}, "cpu_pct": None}
    for i, (key, field) in enumerate(dict.fromkeys(_DEFINITIONS.values()), 1):
        value = (i * 100 + (90 if field == "p90" else 99 if field == "p99" else 50)) * scale
        if field is None:
            s[key] = value / 10_000 if key == "error_rate" else value
        else:
            s.setdefault(key, {"count": 5, "mean": 1.0, "std": 0.0, "max": 1e9})[field] = value
    return s


def _run(scale: float, **load: Any) -> dict[str, Any]:
    base = {"concurrency": 2, "rate": 4.0, "schedule": "poisson", "requests": 10}
    return {"load": {**base, **load}, "summary": _summary(scale), "requests": []}


def _text(renderable: Any) -> str:
    console = Console(width=220, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text().replace("\u00a0", " ")


@pytest.mark.parametrize("label", list(_DEFINITIONS))
def test_each_compared_figure_is_the_one_its_label_names(label: str) -> None:
    a, b = _summary(1.0), _summary(2.0)
    rows = {row[0]: row for row in compare_rows(a, b)}
    key, field = _DEFINITIONS[label]
    want_a = a[key] if field is None else a[key][field]
    want_b = b[key] if field is None else b[key][field]
    assert rows[label][1:] == (want_a, want_b, pytest.approx(2.0))


def test_every_compared_row_has_a_definition_and_the_chunk_rate_is_not_tokens() -> None:
    labels = [row[0] for row in compare_rows(_summary(1.0), _summary(1.0))]
    assert labels == list(_DEFINITIONS)
    plain = _text(compare_tables({"runs": [_run(1.0)]}, {"runs": [_run(2.0)]}))
    chunk_rate = _summary(1.0)["tokens_per_s"]["p50"]
    tokens_rate = _summary(1.0)["output_tokens_per_s_per_request"]["p50"]
    row = next(line for line in plain.splitlines() if "tokens/s per req p50" in line)
    assert f"{tokens_rate:,.1f}" in row and f"{chunk_rate:,.1f}" not in row
    row = next(line for line in plain.splitlines() if "chunks/s per req p50" in line)
    assert f"{chunk_rate:,.1f}" in row


def test_the_summary_labels_its_one_throughput_and_the_send_rate_apart() -> None:
    plain = _text(summary_tables({"runs": [_run(1.0)]}))
    s = _summary(1.0)
    lines = [line for line in plain.splitlines() if "req/s" in line]
    throughput = f"throughput {s['throughput_rps']:,.2f} req/s"
    assert any(throughput in line for line in lines), lines
    sent = f"sent at {s['achieved_rps']:,.2f} req/s (the send rate achieved)"
    assert any(sent in line for line in lines), lines
    # No other unlabelled "N req/s" on the throughput line (there was "3.65 req/s").
    first = next(line for line in lines if throughput in line)
    assert first.count(" req/s") == 2  # throughput and goodput, each named
    assert "goodput" in first


def test_the_sweep_table_names_its_two_rates() -> None:
    plain = _text(summary_tables({"runs": [_run(1.0), _run(1.0, concurrency=4)]}))
    header = next(line for line in plain.splitlines() if "TTFT p50" in line)
    assert "sent/s" in header and "ok req/s" in header and "achieved" not in header


@pytest.mark.parametrize("n", [1, 119, 120, 121, 500, 5_084])
def test_the_timeline_shows_the_whole_run_and_says_what_it_shows(n: int) -> None:
    rows, note = timeline_sample(n)
    assert len(rows) <= 120
    assert rows[0] == 0
    if n <= 120:
        assert list(rows) == list(range(n)) and note == ""
    else:
        # Evenly over the whole run (the last row is within one step of the end), said.
        assert n - 1 - rows[-1] < rows.step
        assert f"{len(rows):,} of {n:,}" in note and note.startswith("every ")


def test_the_timeline_png_title_carries_the_sample() -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from streamcite.bench.plots import _draw_timeline
    from streamcite.bench.records import RequestRecord

    def record(i: int) -> dict[str, Any]:
        r = RequestRecord(
            index=i, question=0, warmup=False, scheduled_ms=i * 1.0, start_ms=i * 1.0,
            queue_ms=None, ttft_ms=1.0, token_ms=[1.0, 2.0], citations_ms=None,
            sources_ms=None, grounding_ms=None, stream_ms=2.0, total_ms=3.0,
            finish_reason="stop", citations=0, citation_refs=0, sources=0,
            support_score=None, completion_tokens=2, errors=[], pipeline={}, complete=True,
        )  # fmt: skip
        return r.to_dict()

    run = {"load": {"concurrency": 1}, "requests": [record(i) for i in range(1_000)]}
    ax = Figure().add_subplot()
    _draw_timeline(ax, run, "Per-request timeline", legend=False)
    assert "(every 9th request: 112 of 1,000)" in ax.get_title()
    _, last_x = ax.get_xlim()
    assert last_x >= 0.99  # the last request (sent at 0.999 s) is on the plot


# key -> the label of its row in the summary table (streamcite/bench/tables.py).
_TABLE_ROWS = {
    "reasoning_ms": "→ first reasoning (ms)",
    "ttft_ms": "TTFT (ms)",
    "itl_ms": "inter-token (ms)",
    "tpot_ms": "TPOT (ms)",
    "tokens_per_s": "chunks/s (per req)",
    "output_tokens_per_s_per_request": "tokens/s (per req)",
    "citations_ms": "→ citations (ms)",
    "sources_ms": "→ sources (ms)",
    "grounding_ms": "→ grounding (ms)",
    "total_ms": "total (ms)",
    "queue_ms": "queued (ms)",
    "e2e_ms": "total incl. queue (ms)",
}


@pytest.mark.parametrize("key", list(_TABLE_ROWS))
def test_each_summary_row_shows_its_own_distribution(key: str) -> None:
    s: dict[str, Any] = {"requests": 10, "ok": 10, "error_rate": 0.0, "errors_by_code": {}}
    s["client"] = {"loop_lag_ms": {}}
    for i, k in enumerate(_TABLE_ROWS, 1):  # p50 of row i is i × 1,000 + 1: no two alike
        d = {"count": i, "mean": 1.0, "std": 0.0, "p50": i * 1_000 + 1.0}
        s[k] = {**d, "p90": d["p50"], "p99": d["p50"], "max": d["p50"]}
    plain = _text(summary_tables({"runs": [_run(1.0) | {"summary": s}]}))
    row = next(line for line in plain.splitlines() if line.strip().startswith(_TABLE_ROWS[key]))
    p50 = s[key]["p50"]
    assert f"{p50:,.0f}" in row, row  # shown without decimals past 1,000
    assert row.split()[len(_TABLE_ROWS[key].split())] == str(s[key]["count"]), row


def test_a_sweep_overview_of_more_than_six_runs_says_which_it_shows(tmp_path: Any) -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from streamcite.bench import plots

    titles: list[str] = []
    real_suptitle = Figure.suptitle

    def spy(self: Any, t: str, **kw: Any) -> Any:
        titles.append(t)
        return real_suptitle(self, t, **kw)

    runs = [{"load": {"concurrency": c}, "requests": []} for c in range(1, 9)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Figure, "suptitle", spy)
        plots._timeline_overview(runs, tmp_path / "timeline.png")
    assert titles == [
        "Per-request timelines of the sweep (the first 6 of 8 runs; each run has timeline-<n>.png)"
    ]
