"""``ask`` marks a claim right after its sentence while that sentence is what was just
printed; a claim that comes once the text has moved on (checked against the finish
chunk's citations) goes on a line of its own under the answer — never glued to the end
of another sentence as ``…calls.‹✗1›‹✓2›‹✓3›`` (the demo printed that)."""

from __future__ import annotations

import re

import pytest

from streamcite.apps._ask_render import HOLD_S, RenderSettings, RichRenderer
from streamcite.core.models import CitedAnswer
from streamcite.events import ClaimEvent, TokenEvent
from tests._wait import wait_until

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
    r.event(_token(" More text follows here,"))
    r.event(_token(" long enough to leave it behind."))
    r.event(_claim(1, len(FIRST), len(FIRST) + len(SECOND), False))  # the text moved on
    r.finish(CitedAnswer(text=FIRST + SECOND))
    out = capsys.readouterr().out
    # The chunk that showed the sentence complete waited for its mark: right after it.
    assert f"{FIRST}‹✓1› Tuesday is" in out
    assert "‹✗2›" not in out.split("\n")[0]  # not glued to a later sentence
    assert "claims checked after their sentences: ‹✗2›" in out


def _settings(live_claims: bool = True) -> RenderSettings:
    return RenderSettings("q?", None, "http://127.0.0.1:1", None, "superscript",
                          live_claims=live_claims)  # fmt: skip


@pytest.mark.parametrize(
    "chunks",
    [
        ["Employees may work", " remotely [", "1].", " Tuesday", " is a team day."],  # chat
        ["Employees may work", " remotely [1]", ".", " Tuesday is", " a team day."],
        ["Employees may work remotely [1].", "  Tuesday", " is a team day."],
        ["Employees may work remotely.[1]", " Tuesday", " is a team day."],
        ["Employees may work remotely [1].", " ", "Tuesday", " is a team day."],  # anthropic
    ],
)
def test_the_mark_lands_after_its_sentence_however_the_chunks_fall(
    capsys: pytest.CaptureFixture[str], chunks: list[str]
) -> None:
    """The sentence's check runs once a chunk shows it complete (" Tuesday"): that chunk
    waits for the mark, which lands after the sentence, never in the next one
    (``manager¹. Tuesday‹✓1› is`` was printed with --api cohere)."""
    text = "".join(chunks)
    end = len(text[: text.index("Tuesday")].rstrip())  # the sentence and its footnote
    r = RichRenderer(_settings())
    for chunk in chunks:
        r.event(_token(chunk))
        if "Tuesday" in chunk:
            r.event(_claim(0, 0, end, True))
    r.finish(CitedAnswer(text=text))
    line = capsys.readouterr().out.split("\n")[0]
    assert re.search(r"\.(?:\[1\])?‹✓1› +Tuesday is a team day\.", line), line


def test_without_live_claims_nothing_waits(capsys: pytest.CaptureFixture[str]) -> None:
    r = RichRenderer(_settings(live_claims=False))
    r.event(_token("One sentence."))
    r.event(_token(" Two"))
    assert capsys.readouterr().out == "One sentence. Two"


async def test_a_held_chunk_is_printed_when_no_mark_comes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    r = RichRenderer(_settings())
    r.event(_token("One sentence."))
    r.event(_token(" Two"))  # waits for the first sentence's mark
    seen = [capsys.readouterr().out]
    assert seen[0] == "One sentence."

    def printed() -> bool:
        seen.append(capsys.readouterr().out)
        return "".join(seen).endswith(" Two")

    await wait_until(printed, timeout=HOLD_S + 5, what="the held chunk printed")
    r.event(_claim(0, 0, len("One sentence."), True))  # too late to go inline
    r.finish(CitedAnswer(text="One sentence. Two"))
    assert "claims checked after their sentences: ‹✓1›" in capsys.readouterr().out
