"""The spec suite's toolkit (``tests/test_dialect_spec_*.py``): the hand-written stream builders
of the four non-chat dialects (one module each, ``tests/_dialect_build_*.py``, re-exported
here), SSE framing (``tests/_dialect_sse.py``), and the spec's invariants checked on every run.

The builders never read the implementation: each writes what the API itself sends (OpenAI
Responses SSE, Anthropic Messages SSE, Gemini ``streamGenerateContent?alt=sse``, Cohere v2
chat SSE) and the API's non-streaming JSON body of the same answer, so that a test can compare
a stream and a body. ``tests/test_dialect_spec_builders.py`` validates them against the vendor
SDKs' own types. Provenance of the shapes: tests/fixtures/dialect_spec/SOURCES.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tests._dialect_build_anthropic import (
    AnthropicBlock,
    anthropic_body,
    anthropic_error,
    anthropic_stream,
)
from tests._dialect_build_cohere import CohereCitation, cohere_body, cohere_stream
from tests._dialect_build_gemini import GeminiSupport, gemini_body, gemini_chunk, gemini_stream
from tests._dialect_build_responses import ResponsesItem, responses_body, responses_stream
from tests._dialect_sse import Obj, byte_span, split_at, sse, utf16_len

__all__ = [
    "AnthropicBlock",
    "CohereCitation",
    "GeminiSupport",
    "ResponsesItem",
    "anchored",
    "anthropic_body",
    "anthropic_error",
    "anthropic_stream",
    "byte_span",
    "check_run",
    "check_spans",
    "cohere_body",
    "cohere_stream",
    "collect",
    "flat_values",
    "gemini_body",
    "gemini_chunk",
    "gemini_stream",
    "responses_body",
    "responses_stream",
    "run",
    "split_at",
    "sse",
    "utf16_len",
    "wire",
]


def collect(events: Iterable[Any]) -> dict[str, list[Any]]:
    """Events grouped by ``type``."""
    out: dict[str, list[Any]] = {}
    for e in events:
        out.setdefault(e.type, []).append(e)
    return out


# ---------------------------------------------------------------------------------------------
# running a stream and the spec's invariants
# ---------------------------------------------------------------------------------------------


def run(data: bytes | Sequence[bytes], dialect: str = "auto") -> list[Any]:
    """Every event of ``data`` (one chunk or a list of chunks) through ``iter_events``."""
    from streamcite import iter_events

    chunks = [data] if isinstance(data, bytes) else list(data)
    return list(iter_events(chunks, dialect=dialect))  # type: ignore[call-arg]


def wire(events: Iterable[Any]) -> list[Obj]:
    """Wire dicts, the done answer's wall-clock timings removed (two runs compare equal)."""
    out = []
    for e in events:
        d = e.to_dict()
        if d.get("type") == "done":
            d["answer"].pop("timings", None)
        out.append(d)
    return out


def check_run(events: Sequence[Any]) -> Any:
    """The invariants of every run: ``done`` last and once, text = tokens of choice 0 joined;
    every span slices the text and its UTF-16 offsets agree. Returns the answer."""
    assert events, "no event at all"
    assert events[-1].type == "done"
    assert [e.type for e in events].count("done") == 1
    answer = events[-1].answer
    assert answer.text == "".join(e.text for e in events if e.type == "token" and e.index == 0)
    check_spans(answer)
    return answer


def check_spans(answer: Any) -> None:
    """Each span: characters within the text, UTF-16 offsets those of the same characters,
    document index into ``answer.citations``."""
    text = answer.text
    for s in answer.citation_spans:
        assert s.start is not None and s.end is not None, s
        assert 0 <= s.start <= s.end <= len(text), (s, len(text))
        assert s.start_utf16 == utf16_len(text[: s.start]), s
        assert s.end_utf16 == utf16_len(text[: s.end]), s
        assert s.document_index is not None and 0 <= s.document_index < len(answer.citations), s


def anchored(answer: Any) -> list[tuple[str, Any]]:
    """``(sliced text, cited source's URL or title)`` of every span, in order."""
    out = []
    for s in answer.citation_spans:
        c = answer.citations[s.document_index]
        out.append((answer.text[s.start : s.end], c.source_url or c.document_title))
    return out


def flat_values(obj: Any) -> list[Any]:
    """All scalar values found in a nested dict/list (to look for a provider field)."""
    if isinstance(obj, dict):
        return [v for x in obj.values() for v in flat_values(x)]
    if isinstance(obj, list):
        return [v for x in obj for v in flat_values(x)]
    return [obj]
