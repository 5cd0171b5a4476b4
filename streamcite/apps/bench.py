"""``streamcite bench``: latency benchmark of a citation-aware streaming endpoint.

Runs the real pipeline against an endpoint (``--base-url``) or the embedded local
backend (``--upstream local``, in a child process so it does not share the event
loop with the client being measured), prints a summary table and, with ``--out``,
writes ``results.json``, ``requests.csv`` and PNG plots. ``--compare A.json B.json``
prints two earlier results side by side with ratios.

Exit codes: 0 done, 1 error (no request succeeded, or the local backend did not start),
2 usage error, 3 an ``--slo`` objective was missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import click
import orjson
from rich.console import Console
from rich.markup import escape

from streamcite.apps._bench_exit import exit_on_missed_slo, exit_when_nothing_succeeded
from streamcite.apps._enrichers import EnricherOptions, build_enrichers
from streamcite.apps._terminal import pipe_console
from streamcite.apps.bench_options import LOCAL_MODEL, bench_options
from streamcite.apps.options import env_secret, log_level
from streamcite.bench.csvout import write_csv
from streamcite.bench.report import (
    ResultsFileError,
    build_results,
    compare_tables,
    load_results,
    summary_tables,
    write_results,
)
from streamcite.bench.runner import (
    BenchTarget,
    LoadSpec,
    LocalUpstream,
    RunResult,
    run_rate_sweep,
    run_sweep,
)
from streamcite.bench.schedule import MAX_REQUESTS
from streamcite.bench.slo import Objective, parse_slo
from streamcite.bench.tokens import TokenizerUnavailable, load_tokenizer
from streamcite.bench.workload import Prompt, load_prompts, synthetic_prompts
from streamcite.enrich.base import Enricher
from streamcite.pipeline import Timeouts
from streamcite.pipeline.apis import api_root, check_api

__all__ = ["command"]

_OPEN_LOOP_IN_FLIGHT = 64
"""Most requests in flight of an open loop when no --concurrency is given."""


def _public_url(url: str) -> str:
    """The URL without credentials or query string, for results.json."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc = f"{netloc}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


@click.command("bench")
@bench_options
def command(**kw: Any) -> None:
    """Measure time to first token (and first reasoning token), inter-token latency,
    TPOT, time to citations, sources and grounding, and total time, at a given
    concurrency or rate, with token counts, goodput against SLOs and errors by code.

    \b
    Examples:
      streamcite bench --upstream local --question "Remote work rules?" \\
          --requests 100 --concurrency 1 --concurrency 8 --out bench-out
      streamcite bench --base-url https://api.example/v1 --api-key-env EXAMPLE_KEY \\
          --model m --questions prompts.jsonl --rate-sweep 1:32 --concurrency 64 \\
          --slo p95:ttft_ms=800 --out sweep
      streamcite bench --compare before/results.json after/results.json

    Exit codes: 0 done, 1 error (no request succeeded, or the local backend did not
    start), 2 usage error, 3 an --slo objective was missed.
    """
    console = pipe_console()
    if kw["compare"]:
        _compare(console, kw["compare"])
        return
    local = _check_usage(kw)
    prompts = _workload(kw)
    slos = _objectives(kw["slos"])
    percentiles = _percentiles(kw["percentiles"])
    loads, sweep = _loads(kw)
    target = _target(kw, local)
    options = _enricher_options(kw)
    from streamcite.logs import configure_logging

    configure_logging(log_level(kw["verbose"], kw["log_level"]))
    err = Console(stderr=True)
    show_progress = err.is_terminal if kw["progress"] is None else kw["progress"]
    job = _Job(target, prompts, loads, options, local, kw, sweep)
    try:
        runs = asyncio.run(_bench(job, err if show_progress else None))
    except RuntimeError as exc:  # the local backend failed to start
        raise click.ClickException(str(exc)) from exc
    config = _config(kw, target, local, loads, len(prompts))
    doc = build_results(runs, config, percentiles=percentiles, slos=slos)
    console.print(summary_tables(doc))
    sys.stdout.flush()
    if kw["out"] is not None:
        _write_outputs(doc, kw["out"], kw["plots"], err)
    exit_when_nothing_succeeded(doc, err)
    exit_on_missed_slo(doc, err)


def _compare(console: Console, paths: tuple[Path, Path]) -> None:
    try:
        doc_a, doc_b = load_results(paths[0]), load_results(paths[1])
    except ResultsFileError as exc:
        raise click.ClickException(exc.message) from exc
    console.print(
        f"A = {paths[0]} ({doc_a.get('created_at')})\nB = {paths[1]} ({doc_b.get('created_at')})",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    console.print(compare_tables(doc_a, doc_b))


def _check_usage(kw: Mapping[str, Any]) -> bool:
    """Options that do not go together; returns whether the upstream is local."""
    if kw["base_url"] and kw["upstream"]:
        raise click.UsageError("give --base-url or --upstream local, not both")
    local = not kw["base_url"]
    if not local and (kw["corpus"] or kw["local_in_process"]):
        raise click.UsageError("--corpus and --local-in-process go with --upstream local")
    if not local and not kw["model"]:
        raise click.UsageError("--model is required with --base-url")
    if bool(kw["wikit_app"]) != bool(kw["wikit_org"]):
        raise click.UsageError("--wikit-app and --wikit-org go together")
    if kw["grounding"] == "google" and not local and not kw["google_config"]:
        raise click.UsageError("--grounding google needs --google-config")
    facts = kw["grounding_facts"]
    if facts != "citations" and kw["grounding"] == "none":
        raise click.UsageError("--grounding-facts goes with --grounding local|google")
    if facts != "citations" and not kw["wikit_app"]:
        raise click.UsageError(f"--grounding-facts {facts} needs --wikit-app/--wikit-org")
    if kw["rate"] and kw["rate_sweep"]:
        raise click.UsageError("give --rate or --rate-sweep, not both")
    if kw["rate_sweep"] and len(kw["concurrency"]) > 1:
        raise click.UsageError("--rate-sweep takes one --concurrency (the most in flight)")
    if kw["synthetic_output"] and not kw["synthetic_input"]:
        raise click.UsageError("--synthetic-output goes with --synthetic-input")
    return local


def _mean_std(text: str, option: str) -> tuple[float, float]:
    mean, _, std = text.partition(":")
    try:
        m, s = float(mean), float(std or 0.0)
    except ValueError:
        raise click.UsageError(f"{option} {text!r}: expected MEAN[:STDDEV]") from None
    if not (m >= 1 and s >= 0 and math.isfinite(m) and math.isfinite(s)):
        raise click.UsageError(f"{option} {text!r}: MEAN must be >= 1 and STDDEV >= 0")
    return m, s


def _workload(kw: Mapping[str, Any]) -> list[str | Prompt]:
    prompts: list[str | Prompt] = list(kw["question_list"])
    if kw["questions_file"] is not None:
        try:
            prompts.extend(load_prompts(kw["questions_file"]))
        except (OSError, ValueError) as exc:
            raise click.UsageError(str(exc)) from exc
    if kw["synthetic_input"]:
        mean, std = _mean_std(kw["synthetic_input"], "--synthetic-input")
        count = min(1000, (kw["n_requests"] or 20) + kw["warmup"])
        synth = synthetic_prompts(count, mean, std, seed=kw["seed"])
        if kw["synthetic_output"]:
            out_mean, out_std = _mean_std(kw["synthetic_output"], "--synthetic-output")
            lengths = synthetic_prompts(count, out_mean, out_std, seed=kw["seed"] + 1)
            synth = [
                Prompt(p.messages, {"max_tokens": len(q.text.split())})
                for p, q in zip(synth, lengths, strict=True)
            ]
        prompts.extend(synth)
    if not prompts:
        raise click.UsageError("give --questions FILE, --question Q or --synthetic-input N")
    return prompts


def _objectives(specs: Sequence[str]) -> list[Objective]:
    try:
        return [parse_slo(s) for s in specs]
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc


def _percentiles(text: str) -> list[float]:
    try:
        qs = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise click.UsageError(f"--percentiles {text!r}: expected numbers, e.g. 50,95,99") from None
    if not all(0 < q <= 100 for q in qs):
        raise click.UsageError("--percentiles: each must be in (0, 100]")
    return qs


def _sweep_rates(text: str) -> list[float]:
    parts = text.split(":")
    try:
        low, high = float(parts[0]), float(parts[1])
        steps = int(parts[2]) if len(parts) > 2 else 6
    except (ValueError, IndexError):
        raise click.UsageError(f"--rate-sweep {text!r}: expected LOW:HIGH[:STEPS]") from None
    if len(parts) > 3 or not 0 < low < high or not math.isfinite(high) or not 2 <= steps <= 50:
        raise click.UsageError("--rate-sweep: 0 < LOW < HIGH and 2 <= STEPS <= 50")
    ratio = (high / low) ** (1 / (steps - 1))
    return [round(low * ratio**i, 6) for i in range(steps)]


def _loads(kw: Mapping[str, Any]) -> tuple[list[LoadSpec], bool]:
    """The runs to make, and whether they form a rate sweep."""
    open_loop = bool(kw["rate"] or kw["rate_sweep"])
    default_c = _OPEN_LOOP_IN_FLIGHT if open_loop else 1
    concurrencies = list(dict.fromkeys(kw["concurrency"])) or [default_c]
    requests = kw["n_requests"] or (MAX_REQUESTS if kw["duration"] else 20)
    common: dict[str, Any] = {
        "schedule": kw["schedule"],
        "warmup": kw["warmup"],
        "seed": kw["seed"],
        "duration_s": kw["duration"],
        "ramp_up_s": kw["ramp_up"],
    }
    if kw["rate_sweep"]:
        rates = _sweep_rates(kw["rate_sweep"])
        return [LoadSpec(requests, concurrencies[0], r, **common) for r in rates], True
    return [LoadSpec(requests, c, kw["rate"], **common) for c in concurrencies], False


def _target(kw: Mapping[str, Any], local: bool) -> BenchTarget:
    headers: dict[str, str] = {}
    for item in kw["headers"]:
        name, sep, value = item.partition(":")
        if not sep or not name.strip():
            raise click.UsageError(f"--header {item!r}: expected NAME:VALUE")
        headers[name.strip()] = value.strip()
    if kw["fault"]:
        headers["X-Streamcite-Fault"] = kw["fault"]
    extra: dict[str, Any] = {}
    if kw["extra_body"]:
        try:
            extra = orjson.loads(kw["extra_body"])
        except orjson.JSONDecodeError as exc:
            raise click.UsageError(f"--extra-body: not valid JSON: {exc}") from exc
        if not isinstance(extra, dict):
            raise click.UsageError("--extra-body: expected a JSON object")
    if kw["max_tokens"]:
        extra["max_tokens"] = kw["max_tokens"]
    tokenizer = None
    if kw["tokenizer"]:
        try:
            tokenizer = load_tokenizer(kw["tokenizer"])
        except TokenizerUnavailable as exc:
            raise click.UsageError(str(exc)) from exc
    timeout = kw["timeout"]
    return BenchTarget(
        base_url=kw["base_url"] or "",
        model=kw["model"] or LOCAL_MODEL,
        api=check_api(kw.get("api") or "chat"),
        api_key=env_secret(kw["api_key_env"], "--api-key-env"),
        transport=kw["transport"],
        headers=headers,
        timeouts=Timeouts(connect=10.0, first_token=min(60.0, timeout), idle=30.0, total=timeout),
        extra_body=extra,
        tokenizer=tokenizer,
    )


def _enricher_options(kw: Mapping[str, Any]) -> EnricherOptions:
    return EnricherOptions(
        sources=bool(kw["wikit_app"] and kw["wikit_org"]),
        wikit_app=kw["wikit_app"],
        wikit_org=kw["wikit_org"],
        wikit_api_key=env_secret(kw["wikit_api_key_env"], "--wikit-api-key-env"),
        wikit_base_url=kw["wikit_base_url"],
        grounding=kw["grounding"],
        grounding_facts=kw["grounding_facts"],
        google_config=kw["google_config"],
        google_endpoint=kw["google_endpoint"],
        google_token=env_secret(kw["google_token_env"], "--google-token-env"),
        # The fault spec reaches the Wikit calls too (sources_delay, sources_404_until).
        wikit_headers={"X-Streamcite-Fault": kw["fault"]} if kw["fault"] else None,
    )


def _config(
    kw: Mapping[str, Any], target: BenchTarget, local: bool, loads: Sequence[LoadSpec], n: int
) -> dict[str, Any]:
    """The ``config`` of results.json: what was asked, never a secret."""
    grounding = kw["grounding"]
    wikit_url = kw["wikit_base_url"]
    return {
        "upstream": "local" if local else "remote",
        "base_url": _public_url(target.base_url),
        "model": target.model,
        "api": target.api,
        "api_key_env": kw["api_key_env"],
        "local_mode": ("inline" if kw["local_in_process"] else "process") if local else None,
        "corpus": str(kw["corpus"]) if kw["corpus"] else None,
        "questions_file": str(kw["questions_file"]) if kw["questions_file"] else None,
        "questions": n,
        "requests": loads[0].requests,
        "concurrency": list(dict.fromkeys(ld.concurrency for ld in loads)),
        "rate": kw["rate"],
        "schedule": kw["schedule"] if kw["rate"] or kw["rate_sweep"] else None,
        "warmup": kw["warmup"],
        "seed": kw["seed"],
        "fault": kw["fault"],
        "max_tokens": kw["max_tokens"],
        "transport": kw["transport"],
        "timeout_s": kw["timeout"],
        "wikit": {
            "app_id": kw["wikit_app"],
            "organization_id": kw["wikit_org"],
            "base_url": _public_url(wikit_url) if wikit_url else None,
        }
        if kw["wikit_app"]
        else None,
        "grounding": grounding,
        "grounding_facts": kw["grounding_facts"] if grounding != "none" else None,
        "google": {"config": kw["google_config"]} if grounding == "google" else None,
        # schema 2
        "duration_s": kw["duration"],
        "rate_sweep": kw["rate_sweep"],
        "ramp_up_s": kw["ramp_up"],
        "synthetic_input": kw["synthetic_input"],
        "synthetic_output": kw["synthetic_output"],
        "extra_body_keys": sorted(target.extra_body),
        "tokenizer": kw["tokenizer"],
        "slo": list(kw["slos"]),
        "percentiles": kw["percentiles"],
    }


def _write_outputs(doc: Mapping[str, Any], out: Path, plots: bool, err: Console) -> None:
    err.print(f"wrote {escape(str(write_results(doc, out)))}")
    err.print(f"wrote {escape(str(write_csv(doc, out)))}")
    if not plots:
        return
    from streamcite.bench.plots import PlotsUnavailable, write_plots

    try:
        for png in write_plots(doc, out):
            err.print(f"wrote {escape(str(png))}")
    except PlotsUnavailable as exc:
        # escape(): rich would take "[plot]" of the install hint for markup and drop it.
        err.print(f"[yellow]no plots:[/yellow] {escape(str(exc))}")


class _Job:
    """Everything one benchmark needs once the options are read."""

    def __init__(
        self,
        target: BenchTarget,
        prompts: Sequence[str | Prompt],
        loads: Sequence[LoadSpec],
        options: EnricherOptions,
        local: bool,
        kw: Mapping[str, Any],
        sweep: bool,
    ) -> None:
        self.target = target
        self.prompts = prompts
        self.loads = loads
        self.options = options
        self.local = local
        self.corpus: Path | None = kw["corpus"]
        self.in_process: bool = kw["local_in_process"]
        self.rate_sweep = sweep
        self.tolerance: float = kw["sweep_tolerance"]


async def _make_enrichers(
    opts: EnricherOptions, stack: contextlib.AsyncExitStack, local_root: str | None
) -> list[Enricher]:
    """The enrichers asked for, each kept open (one connection pool) for the whole run."""
    enrichers = build_enrichers(opts, local_root)
    for e in enrichers:
        if hasattr(e, "__aenter__"):
            await stack.enter_async_context(e)  # type: ignore[arg-type]
    return enrichers


async def _bench(job: _Job, progress_console: Console | None) -> list[RunResult]:
    async with contextlib.AsyncExitStack() as stack:
        local_root: str | None = None
        if job.local:
            # LocalUpstream allows client fault injection on the backend it starts.
            backend_config: dict[str, Any] = {"corpus_dir": job.corpus} if job.corpus else {}
            upstream = LocalUpstream(backend_config, mode="inline" if job.in_process else "process")
            await stack.enter_async_context(upstream)
            job.target.base_url = api_root(upstream.root_url, job.target.api)
            local_root = upstream.root_url
        enrichers = await _make_enrichers(job.options, stack, local_root)
        if progress_console is None:
            return await _run(job, enrichers)
        return await _with_progress(job, enrichers, progress_console)


async def _run(job: _Job, enrichers: Sequence[Enricher], **kwargs: Any) -> list[RunResult]:
    if job.rate_sweep:
        return await run_rate_sweep(
            job.target,
            job.prompts,
            job.loads,
            tolerance=job.tolerance,
            enrichers=enrichers,
            **kwargs,
        )
    return await run_sweep(job.target, job.prompts, job.loads, enrichers=enrichers, **kwargs)


async def _with_progress(
    job: _Job, enrichers: Sequence[Enricher], console: Console
) -> list[RunResult]:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    # Rich redraws from its own thread (refresh_per_second); the loop only bumps
    # counters, once per request, never per token.
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("failed {task.fields[failed]}"),
        TimeElapsedColumn(),
        console=console,
        refresh_per_second=4,
    )
    state: dict[str, Any] = {"task": None, "failed": 0}

    def on_run_start(load: LoadSpec) -> None:
        state["failed"] = 0
        what = f"concurrency {load.concurrency}" + (f", {load.rate:g}/s" if load.rate else "")
        total = None if load.duration_s else load.warmup + load.requests
        state["task"] = progress.add_task(what, total=total, failed=0)

    def on_done(warmup: bool, ok: bool) -> None:
        if not ok and not warmup:
            state["failed"] += 1
        progress.update(state["task"], advance=1, failed=state["failed"])

    with progress:
        return await _run(job, enrichers, on_done=on_done, on_run_start=on_run_start)


if __name__ == "__main__":  # pragma: no cover
    command(sys.argv[1:])
