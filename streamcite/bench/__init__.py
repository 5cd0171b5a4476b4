"""``streamcite bench``: latency of citation-aware streaming endpoints.

Measures, per request and from the pipeline's own events, time to first token,
inter-token latency, tokens per second, time to citations (finish chunk), to
quoted sources, to the grounding check and to ``done``; errors by code. Aggregates
p50/p90/p99/max, throughput and error rate; writes ``results.json`` and PNG plots.

Library use::

    from streamcite.bench import BenchTarget, LoadSpec, run_sweep, build_results
    runs = await run_sweep(BenchTarget(base_url), ["question"], [LoadSpec(50, 4)])
    doc = build_results(runs, config={})
"""

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
    run_sweep,
)
from streamcite.bench.stats import distribution, summarize

__all__ = [
    "SCHEMA_VERSION",
    "BenchTarget",
    "ErrorRecord",
    "LoadSpec",
    "LocalUpstream",
    "RequestRecord",
    "ResultsFileError",
    "RunResult",
    "build_results",
    "compare_tables",
    "distribution",
    "load_questions",
    "load_results",
    "run_load",
    "run_sweep",
    "summarize",
    "write_results",
]
