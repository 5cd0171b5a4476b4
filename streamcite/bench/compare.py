"""``streamcite bench --compare A B``: two results side by side, with B / A ratios.

Runs are paired by concurrency and rate (else by position). A pair whose loads or
configurations differ (request count, concurrency, faults, model…) is compared all
the same, under a warning saying what differs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from streamcite.bench.cells import cell as _cell
from streamcite.bench.cells import fmt as _fmt
from streamcite.bench.cells import run_title

__all__ = ["compare_rows", "compare_tables", "pairing_warnings"]

# (label, path into a summary); lower is better unless listed in _HIGHER_IS_BETTER.
# Each label says what its figure is, with the same words as the summary table:
# ``tokens_per_s`` is the decode rate in *chunks* (its historical key), tokens per
# second per request is ``output_tokens_per_s_per_request``; a run has one throughput
# (successful requests over the wall time) and, open loop, the send rate it achieved.
_COMPARED: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("TTFT p50 (ms)", ("ttft_ms", "p50")),
    ("TTFT p90 (ms)", ("ttft_ms", "p90")),
    ("TTFT p99 (ms)", ("ttft_ms", "p99")),
    ("inter-token p50 (ms)", ("itl_ms", "p50")),
    ("inter-token p99 (ms)", ("itl_ms", "p99")),
    ("TPOT p50 (ms)", ("tpot_ms", "p50")),
    ("chunks/s per req p50", ("tokens_per_s", "p50")),
    ("tokens/s per req p50", ("output_tokens_per_s_per_request", "p50")),
    ("citations p50 (ms)", ("citations_ms", "p50")),
    ("citations p99 (ms)", ("citations_ms", "p99")),
    ("sources p50 (ms)", ("sources_ms", "p50")),
    ("grounding p50 (ms)", ("grounding_ms", "p50")),
    ("total p50 (ms)", ("total_ms", "p50")),
    ("total p99 (ms)", ("total_ms", "p99")),
    ("throughput (ok req/s)", ("throughput_rps",)),
    ("goodput (req/s)", ("goodput_rps",)),
    ("send rate achieved (req/s)", ("achieved_rps",)),
    ("output tokens/s (all req)", ("output_tokens_per_s",)),
    ("error rate", ("error_rate",)),
)
_HIGHER_IS_BETTER = frozenset(
    {
        "chunks/s per req p50",
        "tokens/s per req p50",
        "throughput (ok req/s)",
        "goodput (req/s)",
        "send rate achieved (req/s)",
        "output tokens/s (all req)",
    }
)
_CONFIG_KEYS = ("upstream", "base_url", "model", "fault", "max_tokens", "grounding", "wikit")
_LOAD_KEYS = ("requests", "concurrency", "rate", "schedule", "warmup", "duration_s")


def _get(summary: Mapping[str, Any], path: Sequence[str]) -> float | None:
    cur: Any = summary
    for key in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return float(cur) if isinstance(cur, int | float) and not isinstance(cur, bool) else None


def compare_rows(
    a: Mapping[str, Any], b: Mapping[str, Any]
) -> list[tuple[str, float | None, float | None, float | None]]:
    """(metric, value in A, value in B, B / A) for two run summaries."""
    rows: list[tuple[str, float | None, float | None, float | None]] = []
    for label, path in _COMPARED:
        x, y = _get(a, path), _get(b, path)
        ratio = None if x is None or y is None or x == 0 else y / x
        rows.append((label, x, y, ratio))
    return rows


def _pairs(
    a: Mapping[str, Any], b: Mapping[str, Any]
) -> tuple[list[tuple[Mapping[str, Any], Mapping[str, Any]]], bool]:
    """Runs of A and B that measured the same load (same concurrency and rate), else by
    position (then the second value is ``True``)."""

    def key(run: Mapping[str, Any]) -> tuple[Any, Any]:
        return run["load"].get("concurrency"), run["load"].get("rate")

    runs_b = {key(r): r for r in b["runs"]}
    pairs = [(r, runs_b[key(r)]) for r in a["runs"] if key(r) in runs_b]
    if pairs:
        return pairs, False
    return list(zip(a["runs"], b["runs"], strict=False)), True


def pairing_warnings(
    a: Mapping[str, Any], b: Mapping[str, Any], run_a: Mapping[str, Any], run_b: Mapping[str, Any]
) -> list[str]:
    """What differs between two paired runs besides the code under test."""
    out = []
    for k in _LOAD_KEYS:
        x, y = run_a["load"].get(k), run_b["load"].get(k)
        if x != y:
            out.append(f"{k} {_fmt(x)} vs {_fmt(y)}")
    ca, cb = a.get("config") or {}, b.get("config") or {}
    for k in _CONFIG_KEYS:
        if k == "base_url" and ca.get("upstream") == cb.get("upstream") == "local":
            continue  # each run starts its own embedded backend on a free port
        if ca.get(k) != cb.get(k):
            out.append(f"{k} {ca.get(k)!r} vs {cb.get(k)!r}")
    return out


def _ratio_cell(label: str, x: float | None, y: float | None, ratio: float | None) -> Text:
    higher = label in _HIGHER_IS_BETTER
    if ratio is None:
        if x == 0 and y is not None and y > 0:
            # From nothing to something: no ratio, but plainly better or worse.
            text = f"+{100 * y:.1f} pp" if label == "error rate" else "new"
            return Text(text, style="green" if higher else "red")
        return Text("—")
    better = ratio > 1 if higher else ratio < 1
    style = "" if abs(ratio - 1) < 0.05 else ("green" if better else "red")
    return Text(f"{ratio:.2f}×", style=style)


def compare_tables(
    a: Mapping[str, Any], b: Mapping[str, Any], name_a: str = "A", name_b: str = "B"
) -> Group:
    """Side-by-side tables of two results documents, with B/A ratios."""
    items: list[Any] = []
    pairs, by_position = _pairs(a, b)
    if not pairs:
        items.append(Text("nothing to compare: one of the files has no runs"))
    if by_position and pairs:
        items.append(
            Text(
                "warning: no run of B has A's concurrency and rate: paired by position",
                style="yellow",
            )
        )
    for run_a, run_b in pairs:
        title = run_title(run_a["load"])
        if run_title(run_b["load"]) != title:
            title = f"{title}  vs  {run_title(run_b['load'])}"
        items.append(Text(title, style="bold"))
        diffs = pairing_warnings(a, b, run_a, run_b)
        if diffs:
            items.append(
                Text(
                    "warning: the runs differ in more than the code: " + "; ".join(diffs),
                    style="yellow",
                )
            )
        table = Table()
        table.add_column("metric", no_wrap=True)
        table.add_column(name_a, justify="right")
        table.add_column(name_b, justify="right")
        table.add_column(f"{name_b} / {name_a}", justify="right")
        for label, x, y, ratio in compare_rows(run_a["summary"], run_b["summary"]):
            if x is None and y is None:
                continue
            digits = 4 if label == "error rate" else 1
            shown_a, shown_b = _cell(x, digits), _cell(y, digits)
            if shown_a == shown_b == _cell(0.0, digits):
                ratio = None  # both below what the table shows: a ratio would be noise
            table.add_row(label, shown_a, shown_b, _ratio_cell(label, x, y, ratio))
        items.append(table)
    return Group(*items)
