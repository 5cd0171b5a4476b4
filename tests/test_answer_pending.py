"""What a builder holds uncompacted, and its size, are what its parts say under any mix of
text, reasoning, refusal and tool-argument parts and compactions; the parser's per-read
check (written inline, a relay calls it per upstream read) compacts a stream fed one
event per read; the short-answer snapshot and the citation budget made at first use are
invisible to the answer's readers."""

from __future__ import annotations

import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

from streamcite.core.answer import COMPACT_EVERY, AnswerBuilder
from streamcite.core.api import ChatStreamParser
from streamcite.core.dialects import make_interpreter
from streamcite.core.events import ToolCallEvent
from streamcite.core.models import Citation, CitedAnswer

OP = st.one_of(
    st.tuples(st.sampled_from(["text", "reasoning", "refusal"]), st.text(max_size=5)),
    st.tuples(st.just("args"), st.integers(0, 2), st.text(max_size=5)),
    st.tuples(st.just("compact")),
)


@settings(max_examples=300, deadline=None)
@given(ops=st.lists(OP, max_size=60))
def test_uncompacted_and_size_follow_the_parts(ops: list[tuple[object, ...]]) -> None:
    b = AnswerBuilder()
    pending = 0
    chars = {"text": 0, "reasoning": 0, "refusal": 0, "args": 0}
    for op in ops:
        if op[0] == "compact":
            b.compact()
            pending = 0
        elif op[0] == "args":
            _, tidx, text = op
            assert isinstance(tidx, int) and isinstance(text, str)
            b.tool_call(ToolCallEvent(0, tidx, None, None, text))
            pending += bool(text)
            chars["args"] += len(text)
        else:
            kind, text = op
            assert isinstance(kind, str) and isinstance(text, str)
            getattr(b, kind + "_parts").append(text)
            pending += 1
            chars[kind] += len(text)
        old_sum = len(b.text_parts) + len(b.reasoning_parts) + len(b.refusal_parts) + b.arg_pending
        assert b.uncompacted == old_sum == pending
    assert b.answer_chars() == sum(chars.values())
    assert b.uncompacted == 0
    a = b.snapshot()
    assert len(a.text) == chars["text"] and len(a.reasoning_text) == chars["reasoning"]
    assert sum(len(tc.arguments) for tc in a.tool_calls) == chars["args"]


def _chat(delta: str) -> bytes:
    return b'data: {"choices":[{"index":0,"delta":{' + delta.encode() + b"}}]}\n\n"


def test_a_stream_fed_one_event_per_read_is_compacted() -> None:
    """Fails if the parser's check never fires: the parts would pile up uncompacted."""
    for delta in ('"content":"ab"', '"reasoning_content":"ab"'):
        p = ChatStreamParser(dialect="chat")
        most = 0
        for _ in range(5 * COMPACT_EVERY):
            p.feed(_chat(delta))
            most = max(most, p.builder.uncompacted)
            assert p.builder.uncompacted <= COMPACT_EVERY
        assert most == COMPACT_EVERY  # it grew to the bound, then was compacted
        a = p.answer
        assert len(a.text) + len(a.reasoning_text) == 10 * COMPACT_EVERY


def test_the_short_answer_snapshot_is_the_general_one() -> None:
    """An answer without citations, sources or refs skips the refs passes: the same
    answer as one built eagerly, to every reader."""
    p = ChatStreamParser(dialect="chat")
    p.feed(_chat('"content":"Hi"') + b"data: [DONE]\n\n")
    p.close()
    a = p.done_event().answer
    fields = {f: getattr(a, f) for f in CitedAnswer.__dataclass_fields__}
    want = CitedAnswer(**fields)
    assert a == want and repr(a) == repr(want) and a.to_dict() == want.to_dict()
    assert pickle.loads(pickle.dumps(a)) == want
    assert a.text == "Hi" and a.citation_refs == [] and a.uncited_documents == []
    b = AnswerBuilder()
    b.citations = [Citation(document_index=2), Citation(document_index=0)]
    assert b.snapshot().uncited_documents == [0, 2]  # citations: the passes run


def test_a_stream_without_citations_makes_no_citation_budget() -> None:
    for dialect in ("responses", "anthropic", "gemini", "cohere"):
        it = make_interpreter(dialect, AnswerBuilder())  # type: ignore[arg-type]
        assert it._cit_budget is None  # type: ignore[attr-defined]
        assert it._budget() is it._budget()  # type: ignore[attr-defined]  (made once)
