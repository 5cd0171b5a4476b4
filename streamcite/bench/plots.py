"""PNG plots of a benchmark (optional extra ``streamcite[plot]``: matplotlib).

matplotlib is imported only inside :func:`write_plots`, so ``streamcite bench``
without plots never loads it. Figures are drawn with the Agg canvas directly
(``matplotlib.figure.Figure``, no pyplot): no GUI backend, no global state.

Plots, from a ``results.json`` document:

* ``ttft_cdf.png`` — distribution (CDF) of time to first token, one line per run;
* ``itl_cdf.png`` — distribution of inter-token latency, one line per run;
* ``timeline.png`` — per request: sent, first token, citations, sources, grounding,
  done (with several runs: one panel per run, and ``timeline-<n>.png`` for each).
  Up to 120 requests are drawn one per row; a longer run is drawn as every k-th
  request over the whole run, and the title says so ("every 43rd request: 119 of
  5,084"); the overview panel shows the first six runs of a sweep and says so;
* ``latency_vs_concurrency.png`` — when runs differ in concurrency.

A plot with nothing to show (a CDF when no request reached its first token) is not
written, rather than drawn empty.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from streamcite.bench.records import RequestRecord
from streamcite.bench.report import records_of

__all__ = ["PlotsUnavailable", "timeline_sample", "write_plots"]

# Enough rows to see the pattern; more would make an unreadable smear. A longer run is
# sampled evenly (every k-th request, so the whole run is shown), and the title says so.
_TIMELINE_MAX = 120
_OVERVIEW_MAX = 6
_DPI = 110


class PlotsUnavailable(RuntimeError):
    """matplotlib is not installed."""


def _label(run: Mapping[str, Any]) -> str:
    load = run["load"]
    text = f"concurrency {load['concurrency']}"
    if load.get("rate") is not None:
        text += f", {load['rate']:g} req/s"
    return text


def _ecdf(ax: Any, values: Sequence[float], label: str) -> None:
    import numpy as np

    if not values:
        return
    xs = np.sort(np.asarray(values, dtype=float))
    ys = np.arange(1, xs.size + 1) / xs.size
    ax.step(xs, ys, where="post", label=f"{label} (n={xs.size})", linewidth=1.6)


def _cdf_figure(
    runs: Sequence[Mapping[str, Any]],
    values_of: Any,
    title: str,
    xlabel: str,
    ylabel: str,
    path: Path,
) -> Path | None:
    from matplotlib.figure import Figure

    series = [(values_of(records_of(run)), _label(run)) for run in runs]
    if not any(values for values, _ in series):
        return None
    fig = Figure(figsize=(7.5, 4.5), dpi=_DPI, layout="constrained")
    ax = fig.add_subplot()
    for values, label in series:
        _ecdf(ax, values, label)
    for q in (0.5, 0.9, 0.99):
        ax.axhline(q, color="0.8", linewidth=0.8, zorder=0)
        ax.text(
            1.0,
            q,
            f" p{round(q * 100)}",
            transform=ax.get_yaxis_transform(),
            va="center",
            fontsize=8,
            color="0.4",
        )
    ax.set_ylim(0, 1.02)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", fontsize=8)
    fig.savefig(path, format="png")
    return path


def _itl(records: Sequence[RequestRecord]) -> list[float]:
    out: list[float] = []
    for r in records:
        out.extend(r.itl_ms())
    return out


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def timeline_sample(n: int, limit: int = _TIMELINE_MAX) -> tuple[range, str]:
    """Which of ``n`` requests (in the order sent) the timeline draws, and the note the
    title carries when that is not all of them: every k-th request, over the whole run."""
    if n <= limit:
        return range(n), ""
    step = -(-n // limit)  # ceil: at most ``limit`` rows
    rows = range(0, n, step)
    return rows, f"every {_ordinal(step)} request: {len(rows):,} of {n:,}"


def _draw_timeline(ax: Any, run: Mapping[str, Any], title: str, legend: bool) -> None:
    from matplotlib.ticker import MaxNLocator

    everything = records_of(run)
    rows, note = timeline_sample(len(everything))
    if note:
        title = f"{title} ({note})"
    records = [everything[i] for i in rows]
    marks: dict[str, tuple[list[float], list[int], str, str]] = {
        "first reasoning": ([], [], "x", "tab:gray"),
        "first token": ([], [], "o", "tab:blue"),
        "citations": ([], [], "^", "tab:orange"),
        "sources": ([], [], "s", "tab:green"),
        "grounding": ([], [], "D", "tab:purple"),
        "done": ([], [], "|", "black"),
    }
    failed = False
    for y, r in zip(rows, records, strict=True):
        start = r.start_ms / 1000.0
        if r.queue_ms:  # waited for a slot: the wait is drawn thin before the send
            ax.hlines(y, start - r.queue_ms / 1000.0, start, color="tab:red", linewidth=0.5)
        last = r.total_ms if r.total_ms is not None else (r.token_ms[-1] if r.token_ms else 0.0)
        end = start + last / 1000.0
        color = "tab:red" if not r.ok else "0.75"
        ax.hlines(y, start, max(end, start), color=color, linewidth=1.2, zorder=1)
        failed = failed or not r.ok
        for name, value in (
            ("first reasoning", r.reasoning_ms),
            ("first token", r.ttft_ms),
            ("citations", r.citations_ms),
            ("sources", r.sources_ms),
            ("grounding", r.grounding_ms),
            ("done", r.total_ms),
        ):
            if value is not None:
                xs, ys, _, _ = marks[name]
                xs.append(start + value / 1000.0)
                ys.append(y)
    for name, (xs, ys, marker, color) in marks.items():
        if xs:
            size = 40 if marker == "|" else 14
            ax.scatter(xs, ys, marker=marker, s=size, color=color, label=name, zorder=2)
    if failed:
        ax.plot([], [], color="tab:red", label="failed request")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    top = rows[-1] + rows.step / 2 if records else 1
    ax.set_ylim(top, -rows.step / 2)  # first request on top
    ax.set_xlim(left=0)
    ax.set_ylabel("request (in order sent)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    if legend and ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)


def _timeline(run: Mapping[str, Any], title: str, path: Path) -> Path:
    from matplotlib.figure import Figure

    n = len(timeline_sample(len(run["requests"]))[0])
    height = min(9.0, 2.0 + 0.09 * n)
    fig = Figure(figsize=(9.0, height), dpi=_DPI, layout="constrained")
    ax = fig.add_subplot()
    _draw_timeline(ax, run, title, legend=True)
    ax.set_xlabel("seconds since the start of the measured phase")
    fig.savefig(path, format="png")
    return path


def _timeline_overview(runs: Sequence[Mapping[str, Any]], path: Path) -> Path:
    """A sweep: one panel per run (at most ``_OVERVIEW_MAX``), same time axis."""
    from matplotlib.figure import Figure

    shown = list(runs)[:_OVERVIEW_MAX]
    more = len(runs) - len(shown)
    title = "Per-request timelines of the sweep"
    if more:
        title += f" (the first {len(shown)} of {len(runs)} runs; each run has timeline-<n>.png)"
    fig = Figure(figsize=(9.0, 1.2 + 2.3 * len(shown)), dpi=_DPI, layout="constrained")
    axes = fig.subplots(len(shown), 1, sharex=True, squeeze=False)[:, 0]
    for i, (ax, run) in enumerate(zip(axes, shown, strict=True)):
        _draw_timeline(ax, run, _label(run), legend=i == 0)
    axes[-1].set_xlabel("seconds since the start of each run's measured phase")
    fig.suptitle(title)
    fig.savefig(path, format="png")
    return path


def _vs_concurrency(runs: Sequence[Mapping[str, Any]], path: Path) -> Path:
    from matplotlib.figure import Figure

    runs = sorted(runs, key=lambda r: r["load"]["concurrency"])
    cs = [r["load"]["concurrency"] for r in runs]

    def series(metric: str, q: str) -> list[float]:
        out: list[float] = []
        for r in runs:
            value = r["summary"].get(metric, {}).get(q)
            out.append(float("nan") if value is None else float(value))
        return out

    fig = Figure(figsize=(10.0, 4.2), dpi=_DPI, layout="constrained")
    left, right = fig.subplots(1, 2)
    for metric, name, color in (("ttft_ms", "TTFT", "tab:blue"), ("total_ms", "total", "tab:red")):
        left.plot(cs, series(metric, "p50"), marker="o", color=color, label=f"{name} p50")
        left.plot(
            cs, series(metric, "p99"), marker="o", linestyle="--", color=color, label=f"{name} p99"
        )
    left.set_xlabel("concurrency")
    left.set_ylabel("ms after the request was sent")
    left.set_title("latency versus concurrency")
    left.grid(True, alpha=0.3)
    left.legend(fontsize=8)
    rps = [float(r["summary"].get("throughput_rps") or 0.0) for r in runs]
    right.plot(cs, rps, marker="o", color="tab:green")
    right.set_xlabel("concurrency")
    right.set_ylabel("successful requests per second")
    right.set_title("throughput versus concurrency")
    right.grid(True, alpha=0.3)
    for ax in (left, right):
        ax.set_xticks(cs)
        ax.set_ylim(bottom=0)
    fig.savefig(path, format="png")
    return path


def write_plots(doc: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    """Write the PNG plots of a ``results.json`` document into ``out_dir``.

    Raises :class:`PlotsUnavailable` when matplotlib is missing
    (``pip install 'streamcite[plot]'``).
    """
    try:
        import matplotlib
    except ImportError as exc:
        raise PlotsUnavailable("plots need matplotlib: pip install 'streamcite[plot]'") from exc
    # Figure + savefig use Agg without touching pyplot; pinning the backend also keeps a
    # later pyplot import (in the same process) headless.
    matplotlib.use("Agg", force=False)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    runs = list(doc["runs"])
    if not runs:
        return []
    cdfs = [
        _cdf_figure(
            runs,
            lambda recs: [r.ttft_ms for r in recs if r.ttft_ms is not None],
            "Time to first token",
            "ms after the request was sent",
            "fraction of requests ≤ x",
            out / "ttft_cdf.png",
        ),
        _cdf_figure(
            runs,
            _itl,
            "Inter-token latency",
            "ms between consecutive tokens",
            "fraction of token gaps ≤ x",
            out / "itl_cdf.png",
        ),
    ]
    written = [p for p in cdfs if p is not None]
    if len(runs) == 1:
        written.append(
            _timeline(runs[0], f"Per-request timeline — {_label(runs[0])}", out / "timeline.png")
        )
    else:
        written.append(_timeline_overview(runs, out / "timeline.png"))
        for i, run in enumerate(runs, 1):
            written.append(
                _timeline(run, f"Per-request timeline — {_label(run)}", out / f"timeline-{i}.png")
            )
    if len({r["load"]["concurrency"] for r in runs}) > 1:
        written.append(_vs_concurrency(runs, out / "latency_vs_concurrency.png"))
    return written
