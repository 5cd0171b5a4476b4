"""Raw stamps of one request while it runs, turned into a record after the run.

While a request is in flight the only work per token is one ``time.perf_counter()``
and one ``list.append``; token counting (usage, tokenizer, chunks), milliseconds and
everything else happen in :meth:`Probe.record`, after the run.
"""

from __future__ import annotations

from streamcite.bench.records import ErrorRecord, RequestRecord, message_of
from streamcite.bench.tokens import TokenCounter
from streamcite.core.events import ErrorEvent
from streamcite.core.models import CitedAnswer

__all__ = ["Probe"]


class Probe:
    """Raw perf_counter stamps of one request, converted after the run."""

    __slots__ = (
        "answer",
        "exc",
        "index",
        "n_reasoning",
        "question",
        "scheduled",
        "t_claim",
        "t_done",
        "t_end",
        "t_finish",
        "t_grounding",
        "t_reasoning",
        "t_reasoning_last",
        "t_release",
        "t_sched",
        "t_sources",
        "t_start",
        "tokens",
        "warmup",
    )

    def __init__(
        self, index: int, question: int, warmup: bool, t_sched: float, *, scheduled: bool
    ) -> None:
        self.index = index
        self.question = question
        self.warmup = warmup
        self.scheduled = scheduled
        """Open loop: the request had a due time (``t_sched``); else it went at once."""
        self.t_sched = t_sched
        self.t_release = t_sched
        self.t_start = t_sched
        self.tokens: list[float] = []
        self.t_reasoning: float | None = None
        self.t_reasoning_last: float | None = None
        self.n_reasoning = 0
        self.t_finish: float | None = None
        self.t_sources: float | None = None
        self.t_grounding: float | None = None
        self.t_claim: float | None = None
        self.t_done: float | None = None
        self.t_end: float | None = None
        self.answer: CitedAnswer | None = None
        self.exc: str | None = None

    def record(self, phase_start: float, counter: TokenCounter | None = None) -> RequestRecord:
        t0 = self.t_start

        def ms(t: float | None) -> float | None:
            return None if t is None else round((t - t0) * 1000.0, 3)

        answer = self.answer or CitedAnswer()
        errors = [
            ErrorRecord(e.code, e.stage, e.status, message_of(e.message) if e.message else None)
            for e in answer.errors
            if isinstance(e, ErrorEvent)
        ]
        if self.exc is not None:
            errors.append(ErrorRecord(self.exc, "client"))
        if not answer.complete and not errors:
            errors.append(ErrorRecord("incomplete", "chunk"))
        pipeline = {
            name: (None if value is None else round(float(value), 3))
            for name, value in (
                ("ttft_ms", answer.timings.ttft_ms),
                ("stream_ms", answer.timings.stream_ms),
                ("citations_ms", answer.timings.citations_ms),
                ("sources_ms", answer.timings.sources_ms),
                ("grounding_ms", answer.timings.grounding_ms),
                ("total_ms", answer.timings.total_ms),
                ("first_claim_ms", answer.timings.first_claim_ms),
            )
        }
        usage = answer.usage
        grounding = answer.grounding
        nothing = None if grounding is None else bool(grounding.nothing_to_check)
        rec = RequestRecord(
            index=self.index,
            question=self.question,
            warmup=self.warmup,
            scheduled_ms=round((self.t_sched - phase_start) * 1000.0, 3),
            start_ms=round((t0 - phase_start) * 1000.0, 3),
            queue_ms=round((t0 - self.t_sched) * 1000.0, 3) if self.scheduled else None,
            ttft_ms=ms(self.tokens[0]) if self.tokens else None,
            token_ms=[round((t - t0) * 1000.0, 3) for t in self.tokens],
            citations_ms=ms(self.t_finish) if answer.citations else None,
            sources_ms=ms(self.t_sources) if answer.sources else None,
            grounding_ms=ms(self.t_grounding),
            stream_ms=pipeline["stream_ms"],
            total_ms=ms(self.t_done),
            finish_reason=answer.finish_reason,
            citations=len(answer.citations),
            citation_refs=len(answer.citation_refs),
            sources=len(answer.sources),
            support_score=None if grounding is None or nothing else grounding.support_score,
            completion_tokens=usage.completion_tokens if usage else None,
            errors=errors,
            pipeline=pipeline,
            complete=answer.complete,
            finish_ms=ms(self.t_finish),
            reasoning_ms=ms(self.t_reasoning),
            last_reasoning_ms=ms(self.t_reasoning_last),
            reasoning_chunks=self.n_reasoning,
            prompt_tokens=usage.prompt_tokens if usage else None,
            nothing_to_check=nothing,
            first_claim_ms=ms(self.t_claim),
        )
        _count_tokens(rec, answer, counter)
        return rec


def _count_tokens(rec: RequestRecord, answer: CitedAnswer, counter: TokenCounter | None) -> None:
    """Output and reasoning lengths: usage, else the tokenizer, else the chunks."""
    if counter is not None and answer.reasoning_text:
        rec.reasoning_tokens = counter.count(answer.reasoning_text)
        rec.reasoning_tokens_source = "tokenizer"
    elif rec.reasoning_chunks:
        rec.reasoning_tokens, rec.reasoning_tokens_source = rec.reasoning_chunks, "chunks"
    if rec.completion_tokens is not None:
        rec.output_tokens, rec.output_tokens_source = rec.completion_tokens, "usage"
        if rec.reasoning_tokens and rec.completion_tokens < rec.tokens + rec.reasoning_chunks:
            # Fewer tokens than chunks streamed: this usage leaves the reasoning out
            # (OpenAI's counts it in); add it so TPOT spans the same tokens as the time.
            rec.output_tokens = rec.completion_tokens + rec.reasoning_tokens
    elif counter is not None and (rec.tokens or rec.reasoning_chunks):
        rec.output_tokens = counter.count(answer.text) + (rec.reasoning_tokens or 0)
        rec.output_tokens_source = "tokenizer"
    elif rec.tokens or rec.reasoning_chunks:
        rec.output_tokens = rec.tokens + rec.reasoning_chunks
        rec.output_tokens_source = "chunks"
    if rec.prompt_tokens is not None:
        rec.input_tokens, rec.input_tokens_source = rec.prompt_tokens, "usage"


def count_input(rec: RequestRecord, prompt_text: str, counter: TokenCounter | None) -> None:
    """Input length from the tokenizer when the usage chunk gave none."""
    if rec.input_tokens is None and counter is not None:
        rec.input_tokens, rec.input_tokens_source = counter.count(prompt_text), "tokenizer"
