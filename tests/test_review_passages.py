"""Review of passages on spans: nothing bounds what a stream's quoted passages and
provider metadata hold, nor what the AI SDK stream writes of them.

Measured with an Anthropic stream (``citations_delta`` per text block, as Anthropic
sends them), read by the core and encoded by the AI SDK encoder:

- 160 spans, one distinct 64 KiB ``cited_text`` each (10.1 MiB in): 10.0 Mi characters
  of passages kept, no error; the AI SDK stream writes 84 MiB (x8.3 the input: each
  ``data-citation-spans`` part re-sends every ``citedText`` so far, and each source
  part its citation's ``cited_text``).
- 1,024 spans of 16 KiB passages plus a 16 KiB unknown field each (32.6 MiB in): 16 Mi
  of passages and 16 Mi of ``provider_metadata`` kept (37 MiB held), 133 MiB written.
- One span whose ``cited_text`` is 8 MB and an unknown field 4 MB: both kept whole.

Only ``max_event_size`` (16 MiB per SSE event) bounded one passage, and nothing their
total (1,024 spans x 16 MiB). The citation caps of ``core/bounds.py`` that landed
since hold these three tests (10.1 MiB in: 1.9 Mi characters kept, 6.8 MiB written,
``citation_too_large``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson

from streamcite.core.api import ChatStreamParser
from streamcite.core.bounds import DEFAULT_BOUNDS, StreamBounds
from streamcite.core.events import Event
from streamcite.core.models import CitedAnswer
from streamcite.web.uimessage import UIMessageEncoder
from tests._dialect_build_anthropic import AnthropicBlock, anthropic_stream

MiB = 1024 * 1024


def _citation(i: int, size: int, extra: int = 0) -> dict[str, Any]:
    c: dict[str, Any] = {
        "type": "char_location",
        "cited_text": f"{i:06d} " + "p" * size,
        "document_index": i % 4,
        "document_title": f"Doc {i % 4}",
        "start_char_index": 0,
        "end_char_index": size,
    }
    if extra:
        c["extra"] = "m" * extra  # a field streamcite does not know: kept in provider_metadata
    return c


def _read(
    n: int, size: int, extra: int = 0, bounds: StreamBounds = DEFAULT_BOUNDS
) -> tuple[bytes, CitedAnswer, list[Event]]:
    blocks = [
        AnthropicBlock("text", deltas=[f"Claim {i}. "], citations=[_citation(i, size, extra)])
        for i in range(n)
    ]
    data = anthropic_stream(blocks)
    parser = ChatStreamParser("keep", dialect="anthropic", bounds=bounds)
    events: list[Event] = []
    for at in range(0, len(data), 65536):
        events += parser.feed(data[at : at + 65536])
    return data, parser.answer, events


def _passage_chars(answer: CitedAnswer) -> int:
    texts = {s.cited_text for s in answer.citation_spans if s.cited_text}
    texts |= {c.cited_text for c in answer.citations if c.cited_text}
    return sum(len(t) for t in texts)


def test_the_passages_of_an_answer_are_bounded_in_total() -> None:
    _, answer, _ = _read(160, 64 * 1024)
    assert _passage_chars(answer) <= DEFAULT_BOUNDS.max_answer_chars
    assert answer.errors, "a passage cut or dropped is reported"


def test_one_passage_and_one_spans_metadata_are_bounded() -> None:
    # By default a 12 MB event is refused before it is parsed (event_too_large) ...
    _, answer, _ = _read(1, 8_000_000, 4_000_000)
    assert not answer.citation_spans and not answer.complete
    assert any(e.code == "event_too_large" for e in answer.errors)
    # ... and with room for it, its passage and metadata are still cut to their caps.
    roomy = replace(DEFAULT_BOUNDS, max_event_bytes=32 * MiB)
    _, answer, _ = _read(1, 8_000_000, 4_000_000, roomy)
    (span,) = answer.citation_spans
    assert len(span.cited_text or "") <= MiB
    assert len(orjson.dumps(span.provider_metadata)) <= 64 * 1024


def test_the_ai_sdk_stream_writes_passages_a_bounded_number_of_times() -> None:
    data, _, events = _read(160, 64 * 1024)
    encoder = UIMessageEncoder()
    written = len(encoder.start()) + sum(len(encoder.feed(ev)) for ev in events)
    assert written <= 3 * len(data)


# Live claims reading each passage once per stream (not once per citations event) is
# tested in tests/test_hostile_live_claims.py.
