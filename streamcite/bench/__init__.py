"""``streamcite bench``: latency of citation-aware streaming endpoints.

Measures, per request and from the pipeline's own events, time to first token,
inter-token latency, tokens per second, time to citations (finish chunk), to
quoted sources, to the grounding check and to ``done``; token counts from usage, a
tokenizer or the chunks; errors by code. Aggregates percentiles, throughput, goodput
against SLOs and error rate; writes ``results.json``, ``requests.csv`` and PNG plots.

Library use::

    from streamcite.bench import BenchTarget, LoadSpec, run_sweep, build_results
    runs = await run_sweep(BenchTarget(base_url), ["question"], [LoadSpec(50, 4)])
    doc = build_results(runs, config={})
"""

from streamcite.bench.csvout import write_csv
from streamcite.bench.report import (
    SCHEMA_VERSION,
    ResultsFileError,
    build_results,
    compare_tables,
    load_results,
    write_results,
)
from streamcite.bench.runner import (
    BenchTarget,
    ErrorRecord,
    LoadSpec,
    LocalUpstream,
    RequestRecord,
    RunResult,
    load_questions,
    run_load,
    run_rate_sweep,
    run_sweep,
)
from streamcite.bench.slo import EXIT_SLO_MISSED, Objective, parse_slo
from streamcite.bench.stats import distribution, summarize
from streamcite.bench.workload import Prompt, load_prompts, synthetic_prompts

__all__ = [
    "EXIT_SLO_MISSED",
    "SCHEMA_VERSION",
    "BenchTarget",
    "ErrorRecord",
    "LoadSpec",
    "LocalUpstream",
    "Objective",
    "Prompt",
    "RequestRecord",
    "ResultsFileError",
    "RunResult",
    "build_results",
    "compare_tables",
    "distribution",
    "load_prompts",
    "load_questions",
    "load_results",
    "parse_slo",
    "run_load",
    "run_rate_sweep",
    "run_sweep",
    "summarize",
    "synthetic_prompts",
    "write_csv",
    "write_results",
]
