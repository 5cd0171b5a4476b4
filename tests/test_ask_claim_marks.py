"""``ask`` marks a claim right after its sentence while that sentence is what was just
printed; a claim that comes once the text has moved on (checked against the finish
chunk's citations) goes on a line of its own under the answer — never glued to the end
of another sentence as ``…calls.‹✗1›‹✓2›‹✓3›`` (the demo printed that)."""

from __future__ import annotations

import pytest

from streamcite.apps._ask_render import RenderSettings, RichRenderer
from streamcite.core.models import CitedAnswer
from streamcite.events import ClaimEvent, TokenEvent

FIRST = "Remote work is allowed three days a week."
SECOND = " Tuesday is a team day in the office for everyone."


def _token(text: str) -> TokenEvent:
    return TokenEvent(index=0, text=text, display=text)


def _claim(index: int, start: int, end: int, supported: bool) -> ClaimEvent:
    return ClaimEvent(index=index, start=start, end=end, supported=supported, score=0.9)


def test_a_claim_is_marked_after_its_sentence_and_a_late_one_under_the_answer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    r = RichRenderer(RenderSettings("q?", None, "http://127.0.0.1:1", None, "keep"))
    r.event(_token(FIRST))
    r.event(_token(" Tuesday"))  # the chunk that shows the first sentence is complete
    r.event(_claim(0, 0, len(FIRST), True))  # just behind the text: marked in it
    r.event(_token(SECOND[len(" Tuesday") :]))
    r.event(_token(" More text follows here, long enough to leave it behind."))
    r.event(_claim(1, len(FIRST), len(FIRST) + len(SECOND), False))  # the text moved on
    r.finish(CitedAnswer(text=FIRST + SECOND))
    out = capsys.readouterr().out
    assert f"{FIRST} Tuesday‹✓1› is" in out  # where the text had got to: one chunk on
    assert "‹✗2›" not in out.split("\n")[0]  # not glued to a later sentence
    assert "claims checked after their sentences: ‹✗2›" in out
