"""A Gemini web source quotes nothing: the answer's own segment is never a fact.

Gemini's ``groundingChunks[].web`` carries a URI and a title, no text. The citation shows
the supported segment of the answer as its ``cited_text`` (so a sources list has something
to show), but checking the answer against its own words would report every sentence
supported. The facts a check takes from such an answer are none, so there is no verdict
(``support_score`` null, "not checked"), as for a Responses ``url_citation``.
"""

from __future__ import annotations

from pathlib import Path

from streamcite import iter_events
from streamcite.core.citations import ANSWER_SEGMENT
from streamcite.enrich import LocalGrounding
from streamcite.enrich.facts import passage_facts
from streamcite.events import DoneEvent

RECORDING = Path(__file__).parent / "fixtures" / "dialects" / "gemini__grounding_split_nonascii.sse"


def _answer():  # type: ignore[no-untyped-def]
    done = list(iter_events([RECORDING.read_bytes()], dialect="gemini"))[-1]
    assert isinstance(done, DoneEvent)
    return done.answer


def test_web_citations_show_the_segment_but_mark_it() -> None:
    answer = _answer()
    assert answer.citations and all(c.source_url for c in answer.citations)
    shown = [c for c in answer.citations if c.cited_text]
    assert shown, "the segment is still shown for a web source"
    for c in shown:
        assert c.cited_text in answer.text  # the answer's own words...
        assert c.provider_metadata and c.provider_metadata[ANSWER_SEGMENT] is True


def test_no_fact_from_the_answer_itself_so_no_verdict() -> None:
    answer = _answer()
    assert passage_facts(answer.citations, answer.citation_spans) == []
    result = LocalGrounding().check_sync(
        answer, passage_facts(answer.citations, answer.citation_spans)
    )
    assert result.support_score is None
    assert result.reason
