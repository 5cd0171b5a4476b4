"""Review of the chat-UI adapters: what a long answer costs the server, and the
invisible characters upstream text may carry.

- Every event of a stream redrew the whole message (O(length) each): an answer of n
  characters cost O(n²) on the server's event loop (Gradio, Chainlit) or the script
  thread (Streamlit): 3.7 s for 1,000 tokens (42 KB), 79 s for 4,000 (168 KB), during
  which a Gradio or Chainlit server answers nobody else.
- ``escape_markdown`` kept U+061C (ARABIC LETTER MARK, a bidi control) and the Unicode
  tag characters (U+E0000-E007F, invisible text), and dropped the zero-width joiner and
  non-joiner that Persian words and emoji sequences are written with.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from streamcite.core.models import CitedAnswer
from streamcite.events import DoneEvent, FinishEvent, TokenEvent
from streamcite.ui.render import ChatView, escape_markdown, full_markdown

TOKEN = "The policy says three days [1]. "  # 32 characters


class _Stream:
    """A finished stream's events, as a ChatStream gives them (no network: the cost
    measured is the adapter's own)."""

    def __init__(self, events: list[Any]) -> None:
        self.events = events
        self.closed = False

    async def __aenter__(self) -> _Stream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.closed = True

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._run()

    async def _run(self) -> AsyncIterator[Any]:
        for ev in self.events:
            yield ev


def _long_answer(tokens: int) -> list[Any]:
    events: list[Any] = [TokenEvent(text=TOKEN) for _ in range(tokens)]
    events.append(FinishEvent(index=0, reason="stop"))
    events.append(DoneEvent(answer=CitedAnswer(text=TOKEN * tokens, finish_reason="stop")))
    return events


def test_gradio_redraws_a_long_answer_in_linear_work() -> None:
    pytest.importorskip("gradio")
    from streamcite.ui.gradio import answer_messages

    tokens = 1000
    final = len(full_markdown(_view_of_text(TOKEN * tokens)))

    async def run() -> tuple[int, int, str]:
        drawn = redraws = 0
        last = ""
        async for messages in answer_messages(_Stream(_long_answer(tokens))):  # type: ignore[arg-type]
            redraws += 1
            last = str(messages[-1].content)
            drawn += len(last)
        return drawn, redraws, last

    drawn, redraws, last = asyncio.run(run())
    # Before: every token redrew everything, 1,000 redraws and ~16 M characters
    # (n²/2); now a bounded share of the time: far below 50 times the final message.
    assert drawn <= 50 * final, (drawn, redraws, final)
    assert last == full_markdown(_view_of_text(TOKEN * tokens, done=True))  # the end is drawn


def _view_of_text(text: str, done: bool = False) -> ChatView:
    view = ChatView(text=text)
    if done:
        view.feed(DoneEvent(answer=CitedAnswer(text=text, finish_reason="stop")))
    return view


def test_the_pacer_draws_every_token_of_a_quick_render_and_flushes_what_it_held() -> None:
    from streamcite.ui.render import Pacer

    now = [0.0]
    pacer = Pacer(ratio=4.0, clock=lambda: now[0])
    assert pacer.wants("text")
    t0 = pacer.start()
    now[0] += 0.010  # a 10 ms redraw
    pacer.drawn(t0)
    now[0] += 0.001
    assert not pacer.wants("text")  # within 40 ms of a 10 ms redraw: held back
    assert pacer.pending
    assert pacer.wants("")  # the next event (the finish chunk) draws what was held
    t0 = pacer.start()
    pacer.drawn(t0)  # an instant redraw: the next token is drawn at once
    assert pacer.wants("text")
    assert pacer.wants("sources") and pacer.wants("error") and pacer.wants("done")


@pytest.mark.parametrize(
    "hidden",
    ["\u061c", "\U000e0041\U000e0042", "\U000e0001", "\u180e"],
    ids=["arabic-letter-mark", "tag-letters", "language-tag", "mongolian-vowel-separator"],
)
def test_bidi_controls_and_tag_characters_are_dropped(hidden: str) -> None:
    assert escape_markdown(f"safe{hidden}text") == "safetext"


@pytest.mark.parametrize(
    "word",
    ["\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645", "\U0001f469\u200d\U0001f4bb"],
    ids=["persian-zwnj", "emoji-zwj"],
)
def test_joiners_that_words_are_written_with_are_kept(word: str) -> None:
    assert escape_markdown(word) == word
