"""What one benchmark run records: one :class:`RequestRecord` per request.

Every time in a record is milliseconds after that request was sent, except
``scheduled_ms`` / ``start_ms`` (after the start of the measured phase). Records are
built after the run from raw ``perf_counter`` stamps; nothing here runs while
requests are in flight.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from streamcite.bench.schedule import LoadSpec

__all__ = ["MAX_MESSAGE", "ErrorRecord", "RequestRecord", "RunResult", "TokenSource", "message_of"]

MAX_MESSAGE = 200
"""Characters of an error's message kept in a record (the rest is counted)."""


def message_of(text: str) -> str:
    """An error message for results.json, requests.csv and the summary: one line, no
    control characters or escape sequences, at most :data:`MAX_MESSAGE` characters."""
    from streamcite.core.bounds import clip_message
    from streamcite.core.terminal import one_line

    return clip_message(one_line(" ".join(text.split())), MAX_MESSAGE)


TokenSource = str
"""Where a token count comes from: ``usage`` (the stream's usage chunk), ``tokenizer``
(``--tokenizer`` over the text) or ``chunks`` (one per streamed chunk)."""


@dataclass(slots=True, frozen=True)
class ErrorRecord:
    """One error of one request."""

    code: str
    stage: str
    status: int | None = None
    message: str | None = None
    """What the upstream (or the client) said, on one line, made inert and clipped to
    :data:`MAX_MESSAGE` characters (serve-local's "start it with --allow-client-faults")."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "stage": self.stage,
            "status": self.status,
            "message": self.message,
        }


@dataclass(slots=True)
class RequestRecord:
    """Timings of one request. Times are milliseconds after the request was sent."""

    index: int
    """Position in the run (warm-up requests have their own numbering)."""
    question: int
    """Index of the prompt used."""
    warmup: bool
    scheduled_ms: float
    """When the request was due, after the start of its phase."""
    start_ms: float
    """When it was actually sent, after the start of its phase."""
    queue_ms: float | None
    """Open loop: ``start_ms - scheduled_ms`` (waiting for a free slot, or a client that
    fell behind its schedule). ``None`` in a closed loop, where nothing is scheduled."""
    ttft_ms: float | None
    """First answer token of choice 0 as seen by the pipeline's consumer."""
    token_ms: list[float]
    """Arrival of every answer chunk of choice 0; inter-token latencies are its
    differences."""
    citations_ms: float | None
    """Finish chunk of choice 0, when it brought at least one citation."""
    sources_ms: float | None
    """Sources event received, when it held at least one source."""
    grounding_ms: float | None
    """Grounding event received."""
    stream_ms: float | None
    """End of the upstream stream (pipeline timing)."""
    total_ms: float | None
    """``done`` received."""
    finish_reason: str | None
    citations: int
    citation_refs: int
    sources: int
    support_score: float | None
    """The grounding check's score; ``None`` when it had nothing to check."""
    completion_tokens: int | None
    """From the usage chunk, when the upstream sent one."""
    errors: list[ErrorRecord]
    pipeline: dict[str, float | None]
    """``answer.timings`` as the pipeline measured them (its ``sources_ms`` and
    ``grounding_ms`` are durations, not times since the request was sent)."""
    complete: bool
    # -- added in schema 2 --------------------------------------------------------
    finish_ms: float | None = None
    """Finish chunk of choice 0, with or without citations."""
    reasoning_ms: float | None = None
    """First reasoning token (``reasoning_content`` / thinking part) of choice 0."""
    last_reasoning_ms: float | None = None
    reasoning_chunks: int = 0
    reasoning_tokens: int | None = None
    """Reasoning tokens: the tokenizer's count when one is set, else the chunks."""
    reasoning_tokens_source: TokenSource | None = None
    prompt_tokens: int | None = None
    """From the usage chunk."""
    input_tokens: int | None = None
    """Input sequence length: usage ``prompt_tokens``, else the tokenizer's count."""
    input_tokens_source: TokenSource | None = None
    output_tokens: int | None = None
    """Output sequence length: usage ``completion_tokens``, else the tokenizer's count
    of the answer (and reasoning), else the number of chunks."""
    output_tokens_source: TokenSource | None = None
    nothing_to_check: bool | None = None
    """The grounding check found no claim to check (its score says nothing then)."""
    first_claim_ms: float | None = None
    """First ``claim`` event received (a sentence checked while the answer streams, or
    a cloud checker's claims after it)."""

    @property
    def ok(self) -> bool:
        """Completed with no error of any stage."""
        return self.complete and not self.errors

    @property
    def tokens(self) -> int:
        """Answer chunks received."""
        return len(self.token_ms)

    def itl_ms(self) -> list[float]:
        """Inter-token latencies (ms): gaps between consecutive answer chunks."""
        t = self.token_ms
        return [b - a for a, b in itertools.pairwise(t)]

    @property
    def tokens_per_s(self) -> float | None:
        """Decode rate in chunks: chunks after the first, over first to last chunk."""
        t = self.token_ms
        if len(t) < 2 or t[-1] <= t[0]:
            return None
        return (len(t) - 1) / ((t[-1] - t[0]) / 1000.0)

    @property
    def first_output_ms(self) -> float | None:
        """First output of any kind (reasoning or answer)."""
        times = [t for t in (self.reasoning_ms, self.ttft_ms) if t is not None]
        return min(times) if times else None

    @property
    def last_output_ms(self) -> float | None:
        times = [t for t in (self.last_reasoning_ms, self.token_ms[-1] if self.token_ms else None)]
        present = [t for t in times if t is not None]
        return max(present) if present else None

    @property
    def tpot_ms(self) -> float | None:
        """Time per output token after the first: (last − first output) / (tokens − 1)."""
        first, last, n = self.first_output_ms, self.last_output_ms, self.output_tokens
        if first is None or last is None or n is None or n < 2 or last <= first:
            return None
        return (last - first) / (n - 1)

    @property
    def output_tps(self) -> float | None:
        """Output tokens per second of this request: tokens over send → last output."""
        last, n = self.last_output_ms, self.output_tokens
        if last is None or not n or last <= 0:
            return None
        return n / (last / 1000.0)

    @property
    def e2e_ms(self) -> float | None:
        """Latency including the queue: from when the request was due to ``done``."""
        if self.total_ms is None:
            return None
        return self.total_ms + (self.queue_ms or 0.0)

    @property
    def max_itl_ms(self) -> float | None:
        gaps = self.itl_ms()
        return max(gaps) if gaps else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "question": self.question,
            "warmup": self.warmup,
            "ok": self.ok,
            "complete": self.complete,
            "scheduled_ms": self.scheduled_ms,
            "start_ms": self.start_ms,
            "queue_ms": self.queue_ms,
            "ttft_ms": self.ttft_ms,
            "citations_ms": self.citations_ms,
            "sources_ms": self.sources_ms,
            "grounding_ms": self.grounding_ms,
            "stream_ms": self.stream_ms,
            "total_ms": self.total_ms,
            "tokens": self.tokens,
            "tokens_per_s": _r(self.tokens_per_s),
            "token_ms": self.token_ms,
            "finish_reason": self.finish_reason,
            "citations": self.citations,
            "citation_refs": self.citation_refs,
            "sources": self.sources,
            "support_score": self.support_score,
            "completion_tokens": self.completion_tokens,
            "errors": [e.to_dict() for e in self.errors],
            "pipeline": self.pipeline,
            "finish_ms": self.finish_ms,
            "reasoning_ms": self.reasoning_ms,
            "last_reasoning_ms": self.last_reasoning_ms,
            "reasoning_chunks": self.reasoning_chunks,
            "reasoning_tokens": self.reasoning_tokens,
            "reasoning_tokens_source": self.reasoning_tokens_source,
            "prompt_tokens": self.prompt_tokens,
            "input_tokens": self.input_tokens,
            "input_tokens_source": self.input_tokens_source,
            "output_tokens": self.output_tokens,
            "output_tokens_source": self.output_tokens_source,
            "tpot_ms": _r(self.tpot_ms),
            "output_tokens_per_s": _r(self.output_tps),
            "e2e_ms": _r(self.e2e_ms),
            "nothing_to_check": self.nothing_to_check,
            "first_claim_ms": self.first_claim_ms,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RequestRecord:
        """Inverse of :meth:`to_dict` (for ``--compare`` and re-plotting); reads schema 1
        records too (the fields added later take their defaults)."""
        return cls(
            index=int(d["index"]),
            question=int(d["question"]),
            warmup=bool(d["warmup"]),
            scheduled_ms=float(d["scheduled_ms"]),
            start_ms=float(d["start_ms"]),
            queue_ms=_opt(d["queue_ms"]),
            ttft_ms=_opt(d["ttft_ms"]),
            token_ms=[float(x) for x in d["token_ms"]],
            citations_ms=_opt(d["citations_ms"]),
            sources_ms=_opt(d["sources_ms"]),
            grounding_ms=_opt(d["grounding_ms"]),
            stream_ms=_opt(d["stream_ms"]),
            total_ms=_opt(d["total_ms"]),
            finish_reason=d["finish_reason"],
            citations=int(d["citations"]),
            citation_refs=int(d["citation_refs"]),
            sources=int(d["sources"]),
            support_score=_opt(d["support_score"]),
            completion_tokens=d["completion_tokens"],
            errors=[
                ErrorRecord(e["code"], e["stage"], e.get("status"), e.get("message"))
                for e in d["errors"]
            ],
            pipeline={k: _opt(v) for k, v in d["pipeline"].items()},
            complete=bool(d["complete"]),
            finish_ms=_opt(d.get("finish_ms")),
            reasoning_ms=_opt(d.get("reasoning_ms")),
            last_reasoning_ms=_opt(d.get("last_reasoning_ms")),
            reasoning_chunks=int(d.get("reasoning_chunks") or 0),
            reasoning_tokens=d.get("reasoning_tokens"),
            reasoning_tokens_source=d.get("reasoning_tokens_source"),
            prompt_tokens=d.get("prompt_tokens"),
            input_tokens=d.get("input_tokens"),
            input_tokens_source=d.get("input_tokens_source"),
            output_tokens=d.get("output_tokens"),
            output_tokens_source=d.get("output_tokens_source"),
            nothing_to_check=d.get("nothing_to_check"),
            first_claim_ms=_opt(d.get("first_claim_ms")),
        )


@dataclass(slots=True)
class RunResult:
    """One run: a load spec, its measured requests and the client's own health."""

    load: LoadSpec
    records: list[RequestRecord]
    """Measured requests only, in the order they were sent."""
    wall_s: float
    """Measured phase: from its start to the last ``done``."""
    started_at: float
    """Unix time the measured phase started."""
    warmup_records: list[RequestRecord] = field(default_factory=list)
    loop_lag_ms: list[float] = field(default_factory=list)
    """Oversleep of a 10 ms timer during the measured phase: how busy the loop was."""
    cpu_s: float = 0.0
    """CPU time of this process during the measured phase."""
    send_span_s: float | None = None
    """Open loop: from the first due time to the last actual send (achieved rate)."""
    release_lag_ms: list[float] = field(default_factory=list)
    """Open loop: how late the client released each measured request after its due
    time (before waiting for a slot): the client's own share of the queueing."""


def _opt(v: Any) -> float | None:
    return None if v is None else float(v)


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 3)
