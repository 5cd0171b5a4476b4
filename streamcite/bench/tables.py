"""The summary tables of a ``results.json`` document (rich renderables)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from streamcite.bench.cells import cell as _cell
from streamcite.bench.cells import fmt as _fmt
from streamcite.bench.cells import nowrap, run_title
from streamcite.bench.stats import pct_key
from streamcite.core.terminal import one_line

__all__ = ["compare_rows", "compare_tables", "print_summary", "run_title", "summary_tables"]

# (key, label). The three stage rows are shown in the order the stages finished.
_HEAD_ROWS: tuple[tuple[str, str], ...] = (
    ("reasoning_ms", "→ first reasoning (ms)"),
    ("ttft_ms", "TTFT (ms)"),
    ("itl_ms", "inter-token (ms)"),
    ("tpot_ms", "TPOT (ms)"),
    ("tokens_per_s", "chunks/s (per req)"),
    ("output_tokens_per_s_per_request", "tokens/s (per req)"),
)
_STAGE_ROWS: tuple[tuple[str, str], ...] = (
    ("citations_ms", "→ citations (ms)"),
    ("sources_ms", "→ sources (ms)"),
    ("grounding_ms", "→ grounding (ms)"),
    ("first_claim_ms", "→ first claim (ms)"),
)
_TAIL_ROWS: tuple[tuple[str, str], ...] = (
    ("total_ms", "total (ms)"),
    ("queue_ms", "queued (ms)"),
    ("e2e_ms", "total incl. queue (ms)"),
    ("input_tokens", "input tokens"),
    ("output_tokens", "output tokens"),
    ("reasoning_tokens", "reasoning tokens"),
)


def _rows(s: Mapping[str, Any], load: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    def present(rows: Sequence[tuple[str, str]]) -> list[tuple[str, Mapping[str, Any]]]:
        return [(label, s[k]) for k, label in rows if (s.get(k) or {}).get("count")]

    stages = present(_STAGE_ROWS)
    stages.sort(key=lambda row: row[1].get("p50") or 0.0)
    tail = present(_TAIL_ROWS)
    source = s.get("token_count_source")
    out = present(_HEAD_ROWS) + stages
    for label, d in tail:
        if label == "queued (ms)" and load.get("rate") is None:
            continue
        if label == "output tokens" and source:
            label = f"output tokens ({source})"
        if label == "input tokens" and s.get("input_token_count_source"):
            label = f"input tokens ({s['input_token_count_source']})"
        if label == "reasoning tokens" and s.get("reasoning_token_count_source"):
            label = f"reasoning tokens ({s['reasoning_token_count_source']})"
        out.append((label, d))
    return out


def _table(s: Mapping[str, Any], load: Mapping[str, Any]) -> Table | Text:
    rows = _rows(s, load)
    if not rows:
        return Text("no request reached its first token: nothing to tabulate", style="red")
    qs = [pct_key(q) for q in s.get("percentiles") or (50, 90, 99)]
    # No vertical rules, and only the label column may wrap: figures are never cut
    # down to "625,…" in an 80-column terminal (a label wraps onto a second line).
    table = Table(expand=False, box=box.SIMPLE_HEAD)
    table.add_column("metric")
    for col in ("n", "mean", "std", *qs, "max"):
        table.add_column(col, justify="right", no_wrap=True)
    for label, d in rows:
        digits = 0 if label.endswith("tokens") or "tokens (" in label else 1
        cells = (_cell(d.get(k), digits) for k in ("mean", "std", *qs, "max"))
        table.add_row(label, str(d["count"]), *cells)
    return table


def _lines(s: Mapping[str, Any]) -> Text:
    # Error codes may come from the provider (an in-stream error's code): made inert.
    errors = (
        ", ".join(f"{one_line(str(k))}×{n}" for k, n in s.get("errors_by_code", {}).items())
        or "none"
    )
    source = s.get("token_count_source")
    parts = [
        f"ok {s['ok']}/{s['requests']}",
        f"error rate {100 * s['error_rate']:.1f}%",
        f"throughput {_fmt(s.get('throughput_rps'), 2)} req/s",
    ]
    if s.get("goodput_rps") is not None:
        parts.append(f"goodput {_fmt(s['goodput_rps'], 2)} req/s")
    if s.get("ok"):
        tps = f"{_fmt(s.get('output_tokens_per_s'), 0)} output tokens/s"
        parts.append(f"{tps} ({source})" if source else tps)
    parts.append(f"errors: {errors}")
    text = Text(" · ".join(nowrap(p) for p in parts) + "\n")
    for code, message in (s.get("error_messages") or {}).items():
        # As recorded: one line, inert, clipped (streamcite.bench.records.message_of).
        text.append(f"  {one_line(str(code))}: {one_line(str(message))}\n")
    if s.get("offered_rps") is not None:
        achieved = s.get("achieved_rps")
        # The open loop's arrival rate (sends over the send span), not a second throughput.
        text.append(
            f"offered {s['offered_rps']:g} req/s · sent at {_fmt(achieved, 2)} req/s "
            "(the send rate achieved)\n"
        )
    text.append(_answers_line(s))
    client = s.get("client", {})
    lag = client.get("loop_lag_ms", {})
    if lag.get("p99") is None:
        line = "client: loop lag not measured (the run was too short)"
    else:
        line = f"client: loop lag p99 {_fmt(lag['p99'], 2)} ms, max {_fmt(lag.get('max'), 2)} ms"
    if (s.get("wall_s") or 0.0) >= 1.0 and client.get("cpu_pct") is not None:
        line += f" · CPU {_fmt(client.get('cpu_pct'), 0)}%"
    text.append(line + "\n")
    for check in (s.get("slo") or {}).get("objectives", []):
        mark, style = ("✓", "green") if check["passed"] else ("✗", "red")
        where = f"p{check['percentile']:g}" if check["percentile"] is not None else "worst"
        if check["metric"] == "error_rate":
            where = "measured"
        text.append(f"SLO {mark} {check['spec']} ({where} {_fmt(check['value'], 3)})\n", style)
    for w in s.get("warnings", []):
        text.append(f"warning: {w}\n", style="yellow")
    return text


def _answers_line(s: Mapping[str, Any]) -> str:
    parts = []
    cites = s.get("citations_per_answer") or {}
    if cites.get("count"):
        parts.append(f"citations/answer mean {_fmt(cites.get('mean'), 1)}")
    sources = s.get("sources_per_answer") or {}
    if sources.get("count"):
        parts.append(f"sources/answer mean {_fmt(sources.get('mean'), 1)}")
    score = s.get("support_score") or {}
    nothing = s.get("nothing_to_check") or 0
    if score.get("count"):
        parts.append(f"support score p50 {_fmt(score.get('p50'), 2)} (n={score['count']})")
    if nothing:
        parts.append(f"grounding: nothing to check ×{nothing}")
    return ("answers: " + " · ".join(parts) + "\n") if parts else ""


def _sweep(runs: Sequence[Mapping[str, Any]]) -> Table:
    has_slo = any("goodput_rps" in r["summary"] for r in runs)
    has_rate = any(r["load"].get("rate") is not None for r in runs)
    cols = ["C", "rate"] + (["sent/s"] if has_rate else []) + ["ok req/s"]
    cols += (["goodput"] if has_slo else []) + ["TTFT p50", "TTFT p99", "ITL p50"]
    cols += ["total p50", "total p99", "errors"]
    sweep = Table(title="sweep", title_justify="left")
    for col in cols:
        sweep.add_column(col, justify="right")
    for run in runs:
        s = run["summary"]
        row = [str(run["load"]["concurrency"]), _fmt(run["load"].get("rate"))]
        if has_rate:
            row.append(_fmt(s.get("achieved_rps"), 2))
        row.append(_fmt(s.get("throughput_rps"), 2))
        if has_slo:
            row.append(_fmt(s.get("goodput_rps"), 2))
        row += [_fmt(s["ttft_ms"].get("p50")), _fmt(s["ttft_ms"].get("p99"))]
        row += [_fmt(s["itl_ms"].get("p50")), _fmt(s["total_ms"].get("p50"))]
        row += [_fmt(s["total_ms"].get("p99")), f"{100 * s['error_rate']:.1f}%"]
        sweep.add_row(*row)
    return sweep


def summary_tables(doc: Mapping[str, Any]) -> Group:
    """One table per run, and a sweep table when there are several runs."""
    items: list[Any] = []
    runs = doc.get("runs", [])
    for run in runs:
        s = run["summary"]
        items.append(Text(run_title(run["load"]), style="bold"))
        items.append(_table(s, run["load"]))
        items.append(_lines(s))
    if len(runs) > 1:
        items.append(_sweep(runs))
    return Group(*items)


def print_summary(doc: Mapping[str, Any], console: Console | None = None) -> None:
    """Print :func:`summary_tables` (to stdout by default)."""
    (console or Console()).print(summary_tables(doc))


from streamcite.bench.compare import compare_rows, compare_tables  # noqa: E402
