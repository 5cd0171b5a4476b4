"""``streamcite bench``: latency benchmark of a citation-aware streaming endpoint.

Runs the real pipeline against an endpoint (``--base-url``) or the embedded local
backend (``--upstream local``, in a child process so it does not share the event
loop with the client being measured), prints a summary table and, with ``--out``,
writes ``results.json`` and PNG plots. ``--compare A.json B.json`` prints two earlier
results side by side with ratios.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import click
from rich.console import Console

from streamcite.apps._enrichers import EnricherOptions, build_enrichers
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
    load_questions,
    run_sweep,
)
from streamcite.enrich.base import Enricher
from streamcite.pipeline import Timeouts

__all__ = ["command"]

_LOCAL_MODEL = "streamcite-local"


def _env_secret(name: str | None, what: str) -> str | None:
    if not name:
        return None
    value = os.environ.get(name)
    if not value:
        raise click.UsageError(f"{what}: environment variable {name} is not set or empty")
    return value


def _public_url(url: str) -> str:
    """The URL without credentials or query string, for results.json."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc = f"{netloc}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


@click.command("bench")
@click.option("--base-url", metavar="URL", help="API root of the endpoint (…/v1).")
@click.option(
    "--api-key-env", metavar="NAME", help="Environment variable holding the endpoint's API key."
)
@click.option(
    "--model", metavar="M", help=f"Model name (default with --upstream local: {_LOCAL_MODEL})."
)
@click.option(
    "--upstream",
    type=click.Choice(["local"]),
    help="Benchmark the embedded local backend (the default without --base-url).",
)
@click.option(
    "--corpus",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="Corpus folder of the local backend (default: the built-in corpus).",
)
@click.option(
    "--local-in-process",
    is_flag=True,
    help="Run the local backend on the client's event loop instead of a child process "
    "(starts faster; client and server then slow each other down).",
)
@click.option(
    "--questions",
    "questions_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help='Questions, one per line (or JSON Lines with "question"); used in turn.',
)
@click.option(
    "--question", "question_list", multiple=True, metavar="Q", help="A question (repeatable)."
)
@click.option(
    "--requests",
    "n_requests",
    type=click.IntRange(1),
    default=20,
    show_default=True,
    help="Measured requests per run.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(1),
    multiple=True,
    help="Requests in flight (repeat for a sweep: one run per value). Default 1.",
)
@click.option(
    "--rate",
    type=click.FloatRange(min=0, min_open=True),
    metavar="R",
    help="Open loop: R requests per second (at most --concurrency in flight).",
)
@click.option(
    "--schedule",
    type=click.Choice(["poisson", "fixed"]),
    default="poisson",
    show_default=True,
    help="Open-loop arrivals.",
)
@click.option(
    "--warmup",
    type=click.IntRange(0),
    default=2,
    show_default=True,
    help="Unmeasured requests before each run.",
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed of the Poisson schedule."
)
@click.option("--wikit-app", metavar="ID", help="Fetch Wikit quoted sources for this app id.")
@click.option("--wikit-org", metavar="ID", help="Wikit organization id.")
@click.option(
    "--wikit-key-env", metavar="NAME", help="Environment variable holding the Wikit API key."
)
@click.option(
    "--wikit-base-url",
    metavar="URL",
    help="Wikit API root (default: the local backend with --upstream local, else Wikit's).",
)
@click.option(
    "--grounding",
    type=click.Choice(["none", "local", "google"]),
    default="none",
    show_default=True,
    help="Grounding check after each answer.",
)
@click.option(
    "--google-config",
    metavar="NAME",
    help="projects/P/locations/global/groundingConfigs/G (Google grounding).",
)
@click.option(
    "--google-endpoint",
    metavar="URL",
    help="Google Discovery Engine root (default: the local backend with --upstream local).",
)
@click.option(
    "--google-token-env",
    metavar="NAME",
    help="Environment variable holding an OAuth access token (else ADC).",
)
@click.option(
    "--grounding-facts",
    type=click.Choice(["citations", "sources", "both"]),
    default="citations",
    show_default=True,
    help="Facts of the grounding check: the answer's citations, the Wikit sources, or both.",
)
@click.option(
    "--fault",
    metavar="SPEC",
    help="X-Streamcite-Fault sent with every request (e.g. 'first_token_delay=0.1').",
)
@click.option(
    "--header", "headers", multiple=True, metavar="NAME:VALUE", help="Extra request header."
)
@click.option("--max-tokens", type=click.IntRange(1), help="max_tokens of every request.")
@click.option(
    "--transport",
    type=click.Choice(["aiohttp", "httpx"]),
    default="aiohttp",
    show_default=True,
    help="HTTP client (one shared for all requests).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=120.0,
    show_default=True,
    help="Per request: seconds until done (first token: at most 60).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write results.json and the plots here.",
)
@click.option(
    "--plots/--no-plots",
    default=True,
    show_default=True,
    help="With --out: write PNG plots (needs streamcite[plot]).",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress bar on stderr (default: when stderr is a terminal).",
)
@click.option(
    "--log-level",
    default="WARNING",
    show_default=True,
    help="streamcite log level (stderr). INFO logs every request: it costs time.",
)
@click.option(
    "--compare",
    nargs=2,
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    metavar="A.json B.json",
    help="Compare two results.json files and exit.",
)
def command(
    base_url: str | None,
    api_key_env: str | None,
    model: str | None,
    upstream: str | None,
    corpus: Path | None,
    local_in_process: bool,
    questions_file: Path | None,
    question_list: tuple[str, ...],
    n_requests: int,
    concurrency: tuple[int, ...],
    rate: float | None,
    schedule: str,
    warmup: int,
    seed: int,
    wikit_app: str | None,
    wikit_org: str | None,
    wikit_key_env: str | None,
    wikit_base_url: str | None,
    grounding: str,
    google_config: str | None,
    google_endpoint: str | None,
    google_token_env: str | None,
    grounding_facts: str,
    fault: str | None,
    headers: tuple[str, ...],
    max_tokens: int | None,
    transport: str,
    timeout: float,
    out: Path | None,
    plots: bool,
    progress: bool | None,
    log_level: str,
    compare: tuple[Path, Path] | None,
) -> None:
    """Measure time to first token, inter-token latency, time to citations, sources and
    grounding, and total time, at a given concurrency (or rate), with errors by code.

    \b
    Examples:
      streamcite bench --upstream local --question "Remote work rules?" \\
          --requests 100 --concurrency 1 --concurrency 8 --out bench-out
      streamcite bench --base-url https://api.example/v1 --api-key-env EXAMPLE_KEY \\
          --model m --questions questions.txt --requests 50 --rate 2
      streamcite bench --compare before/results.json after/results.json
    """
    console = Console()
    if compare:
        try:
            doc_a, doc_b = load_results(compare[0]), load_results(compare[1])
        except ResultsFileError as exc:
            raise click.ClickException(exc.message) from exc
        console.print(
            f"A = {compare[0]} ({doc_a.get('created_at')})\n"
            f"B = {compare[1]} ({doc_b.get('created_at')})",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        console.print(compare_tables(doc_a, doc_b))
        return

    if base_url and upstream:
        raise click.UsageError("give --base-url or --upstream local, not both")
    local = not base_url
    if not local and (corpus or local_in_process):
        raise click.UsageError("--corpus and --local-in-process go with --upstream local")
    if not local and not model:
        raise click.UsageError("--model is required with --base-url")
    if bool(wikit_app) != bool(wikit_org):
        raise click.UsageError("--wikit-app and --wikit-org go together")
    if grounding == "google" and not local and not google_config:
        raise click.UsageError("--grounding google needs --google-config")
    if grounding_facts != "citations" and grounding == "none":
        raise click.UsageError("--grounding-facts goes with --grounding local|google")
    if grounding_facts != "citations" and not wikit_app:
        raise click.UsageError(f"--grounding-facts {grounding_facts} needs --wikit-app/--wikit-org")
    questions: list[str] = list(question_list)
    if questions_file is not None:
        try:
            questions.extend(load_questions(questions_file))
        except (OSError, ValueError) as exc:
            raise click.UsageError(str(exc)) from exc
    if not questions:
        raise click.UsageError("give --questions FILE or --question Q")
    extra_headers: dict[str, str] = {}
    for item in headers:
        name, sep, value = item.partition(":")
        if not sep or not name.strip():
            raise click.UsageError(f"--header {item!r}: expected NAME:VALUE")
        extra_headers[name.strip()] = value.strip()
    if fault:
        extra_headers["X-Streamcite-Fault"] = fault
    api_key = _env_secret(api_key_env, "--api-key-env")
    wikit_key = _env_secret(wikit_key_env, "--wikit-key-env")
    google_token = _env_secret(google_token_env, "--google-token-env")

    from streamcite.logs import configure_logging

    configure_logging(log_level)

    concurrencies = list(dict.fromkeys(concurrency)) or [1]
    loads = [
        LoadSpec(n_requests, c, rate, schedule, warmup, seed)  # type: ignore[arg-type]
        for c in concurrencies
    ]
    target = BenchTarget(
        base_url=base_url or "",
        model=model or _LOCAL_MODEL,
        api_key=api_key,
        transport=transport,  # type: ignore[arg-type]
        headers=extra_headers,
        timeouts=Timeouts(connect=10.0, first_token=min(60.0, timeout), idle=30.0, total=timeout),
        extra_body={"max_tokens": max_tokens} if max_tokens else {},
    )
    config: dict[str, Any] = {
        "upstream": "local" if local else "remote",
        "base_url": None if local else _public_url(target.base_url),
        "model": target.model,
        "api_key_env": api_key_env,
        "local_mode": ("inline" if local_in_process else "process") if local else None,
        "corpus": str(corpus) if corpus else None,
        "questions_file": str(questions_file) if questions_file else None,
        "questions": len(questions),
        "requests": n_requests,
        "concurrency": concurrencies,
        "rate": rate,
        "schedule": schedule if rate else None,
        "warmup": warmup,
        "seed": seed,
        "fault": fault,
        "max_tokens": max_tokens,
        "transport": transport,
        "timeout_s": timeout,
        "wikit": {
            "app_id": wikit_app,
            "organization_id": wikit_org,
            "base_url": _public_url(wikit_base_url) if wikit_base_url else None,
        }
        if wikit_app
        else None,
        "grounding": grounding,
        "grounding_facts": grounding_facts if grounding != "none" else None,
        "google": {"config": google_config} if grounding == "google" else None,
    }
    err = Console(stderr=True)
    show_progress = err.is_terminal if progress is None else progress
    options = EnricherOptions(
        sources=bool(wikit_app and wikit_org),
        wikit_app=wikit_app,
        wikit_org=wikit_org,
        wikit_api_key=wikit_key,
        wikit_base_url=wikit_base_url,
        grounding=grounding,
        grounding_facts=grounding_facts,
        google_config=google_config,
        google_endpoint=google_endpoint,
        google_token=google_token,
    )
    try:
        runs = asyncio.run(
            _bench(
                target,
                questions,
                loads,
                options,
                local,
                corpus,
                local_in_process,
                err if show_progress else None,
            )
        )
    except RuntimeError as exc:  # the local backend failed to start
        raise click.ClickException(str(exc)) from exc

    if local:
        config["base_url"] = _public_url(target.base_url)
    doc = build_results(runs, config)
    console.print(summary_tables(doc))
    sys.stdout.flush()
    if out is not None:
        path = write_results(doc, out)
        err.print(f"wrote {path}")
        if plots:
            from streamcite.bench.plots import PlotsUnavailable, write_plots

            try:
                for png in write_plots(doc, out):
                    err.print(f"wrote {png}")
            except PlotsUnavailable as exc:
                err.print(f"[yellow]no plots:[/yellow] {exc}")


async def _make_enrichers(
    opts: EnricherOptions, stack: contextlib.AsyncExitStack, local_root: str | None
) -> list[Enricher]:
    """The enrichers asked for, each kept open (one connection pool) for the whole run."""
    enrichers = build_enrichers(opts, local_root)
    for e in enrichers:
        if hasattr(e, "__aenter__"):
            await stack.enter_async_context(e)  # type: ignore[arg-type]
    return enrichers


async def _bench(
    target: BenchTarget,
    questions: Sequence[str],
    loads: Sequence[LoadSpec],
    opts: EnricherOptions,
    local: bool,
    corpus: Path | None,
    in_process: bool,
    progress_console: Console | None,
) -> list[RunResult]:
    async with contextlib.AsyncExitStack() as stack:
        local_root: str | None = None
        if local:
            backend_config: dict[str, Any] = {"corpus_dir": corpus} if corpus else {}
            upstream = LocalUpstream(backend_config, mode="inline" if in_process else "process")
            await stack.enter_async_context(upstream)
            target.base_url = upstream.base_url
            local_root = upstream.root_url
        enrichers = await _make_enrichers(opts, stack, local_root)
        if progress_console is None:
            return await run_sweep(target, questions, loads, enrichers=enrichers)
        return await _with_progress(target, questions, loads, enrichers, progress_console)


async def _with_progress(
    target: BenchTarget,
    questions: Sequence[str],
    loads: Sequence[LoadSpec],
    enrichers: Sequence[Enricher],
    console: Console,
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
        state["task"] = progress.add_task(what, total=load.warmup + load.requests, failed=0)

    def on_done(warmup: bool, ok: bool) -> None:
        if not ok and not warmup:
            state["failed"] += 1
        progress.update(state["task"], advance=1, failed=state["failed"])

    with progress:
        return await run_sweep(
            target,
            questions,
            loads,
            enrichers=enrichers,
            on_done=on_done,
            on_run_start=on_run_start,
        )


if __name__ == "__main__":  # pragma: no cover
    command(sys.argv[1:])
