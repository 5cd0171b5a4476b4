"""The options of ``streamcite bench``, in groups (target, workload, load, enrichers,
output); :func:`bench_options` applies them all to the command."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from streamcite.apps.options import (
    api_key_env_option,
    api_option,
    base_url_option,
    fault_option,
    google_options,
    grounding_facts_option,
    grounding_option,
    model_option,
    verbose_option,
    wikit_options,
)

__all__ = ["LOCAL_MODEL", "bench_options"]

LOCAL_MODEL = "streamcite-local"

_Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

_TARGET: list[_Decorator] = [
    base_url_option(
        "API root of the endpoint, with its version (…/v1; Gemini …/v1beta, Cohere …/v2)."
    ),
    api_option(),
    api_key_env_option(help="Environment variable holding the endpoint's key."),
    model_option(
        f"Model name (default with --upstream local: {LOCAL_MODEL}; with --base-url:"
        " the one model GET …/models lists)."
    ),
    click.option(
        "--upstream",
        type=click.Choice(["local"]),
        help="Benchmark the embedded local backend (the default without --base-url).",
    ),
    click.option(
        "--corpus",
        type=click.Path(file_okay=False, exists=True, path_type=Path),
        help="Corpus folder of the local backend (default: the built-in corpus).",
    ),
    click.option(
        "--local-in-process",
        is_flag=True,
        help="Run the local backend on the client's event loop instead of a child process "
        "(starts faster; client and server then slow each other down).",
    ),
    fault_option(
        "X-Streamcite-Fault sent with every request, Wikit calls included "
        "(e.g. 'first_token_delay=0.1;token_delay=0.02;sources_delay=0.05')."
    ),
    click.option(
        "--header", "headers", multiple=True, metavar="NAME:VALUE", help="Extra request header."
    ),
    click.option(
        "--transport",
        type=click.Choice(["aiohttp", "httpx"]),
        default="aiohttp",
        show_default=True,
        help="HTTP client (one shared for all requests).",
    ),
    click.option(
        "--timeout",
        type=click.FloatRange(min=0, min_open=True),
        default=120.0,
        show_default=True,
        help="Per request: seconds until done (first token: at most 60).",
    ),
]

_WORKLOAD: list[_Decorator] = [
    click.option(
        "--questions",
        "--prompts",
        "questions_file",
        type=click.Path(dir_okay=False, exists=True, path_type=Path),
        help='Prompts, used in turn: one question per line, or JSON Lines with "question", '
        'a request body ("messages", …) or a ShareGPT "conversations"; or a JSON array.',
    ),
    click.option(
        "--question", "question_list", multiple=True, metavar="Q", help="A question (repeatable)."
    ),
    click.option(
        "--synthetic-input",
        metavar="MEAN[:STDDEV]",
        help="Synthetic prompts of MEAN words (normal distribution, seeded by --seed).",
    ),
    click.option(
        "--synthetic-output",
        metavar="MEAN[:STDDEV]",
        help="With --synthetic-input: max_tokens of each prompt drawn the same way.",
    ),
    click.option("--max-tokens", type=click.IntRange(1), help="max_tokens of every request."),
    click.option(
        "--extra-body",
        metavar="JSON",
        help="JSON object merged into every request body, e.g. '{\"temperature\": 0}'.",
    ),
    click.option(
        "--tokenizer",
        metavar="SPEC",
        help="Count tokens when the stream sends no usage: a tokenizer.json or Hugging Face "
        "name (pip install 'streamcite[tokenizer]'), or 'words'.",
    ),
]

_LOAD: list[_Decorator] = [
    click.option(
        "--requests",
        "n_requests",
        type=click.IntRange(1),
        default=None,
        help="Measured requests per run [default: 20; with --duration, no limit].",
    ),
    click.option(
        "--duration",
        type=click.FloatRange(min=0, min_open=True),
        metavar="S",
        help="Measure for S seconds instead of a request count.",
    ),
    click.option(
        "--concurrency",
        type=click.IntRange(1),
        multiple=True,
        help="Requests in flight (repeat for a sweep: one run per value). Default 1.",
    ),
    click.option(
        "--rate",
        type=click.FloatRange(min=0, min_open=True),
        metavar="R",
        help="Open loop: R requests per second (at most --concurrency in flight).",
    ),
    click.option(
        "--rate-sweep",
        metavar="LOW:HIGH[:STEPS]",
        help="Open-loop runs at STEPS (default 6) rates from LOW to HIGH req/s, geometric; "
        "stops once the achieved rate falls behind the offered one.",
    ),
    click.option(
        "--sweep-tolerance",
        type=click.FloatRange(0, 1),
        default=0.1,
        show_default=True,
        help="--rate-sweep: how far (a fraction) achieved may fall behind offered.",
    ),
    click.option(
        "--schedule",
        type=click.Choice(["poisson", "constant", "fixed"]),
        default="poisson",
        show_default=True,
        help="Open-loop arrivals ('fixed' is 'constant').",
    ),
    click.option(
        "--warmup",
        type=click.IntRange(0),
        default=2,
        show_default=True,
        help="Unmeasured requests first, at the same load (no pause before the window).",
    ),
    click.option(
        "--ramp-up",
        type=click.FloatRange(min=0),
        default=0.0,
        metavar="S",
        help="Raise the load over S seconds first (unmeasured).",
    ),
    click.option(
        "--seed", type=int, default=0, show_default=True, help="Seed of the Poisson schedule."
    ),
]

_ENRICHERS: list[_Decorator] = [
    wikit_options(
        app_help="Fetch Wikit quoted sources for this app id.",
        base_url_help="Wikit API root (default: the local backend with --upstream local, "
        "else Wikit's).",
    ),
    grounding_option("none"),
    google_options(token_default=None),
    grounding_facts_option(),
]

_OUTPUT: list[_Decorator] = [
    click.option(
        "--slo",
        "slos",
        multiple=True,
        metavar="[pNN:]METRIC=VALUE",
        help="Objective, e.g. ttft_ms=500 (every request) or p95:itl_ms=50; gives goodput, "
        "and exit code 3 when missed (repeatable).",
    ),
    click.option(
        "--percentiles",
        default="50,90,99",
        show_default=True,
        metavar="LIST",
        help="Percentiles of every distribution (50, 90 and 99 are always included).",
    ),
    click.option(
        "--out",
        type=click.Path(file_okay=False, path_type=Path),
        help="Write results.json, requests.csv and the plots here.",
    ),
    click.option(
        "--plots/--no-plots",
        default=True,
        show_default=True,
        help="With --out: write PNG plots (needs streamcite[plot]).",
    ),
    click.option(
        "--progress/--no-progress",
        default=None,
        help="Progress bar on stderr (default: when stderr is a terminal).",
    ),
    verbose_option("-v: info logs (every request: it costs time), -vv: debug logs (stderr)."),
    click.option(
        "--log-level",
        default=None,
        hidden=True,
        help="streamcite log level (stderr); overrides -v. Kept for older scripts.",
    ),
    click.option(
        "--compare",
        nargs=2,
        type=click.Path(dir_okay=False, exists=True, path_type=Path),
        metavar="A.json B.json",
        help="Compare two results.json files and exit.",
    ),
]


def bench_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Every option of the command, in the order ``--help`` lists them."""
    for group in (_OUTPUT, _ENRICHERS, _LOAD, _WORKLOAD, _TARGET):
        for option in reversed(group):
            f = option(f)
    return f
