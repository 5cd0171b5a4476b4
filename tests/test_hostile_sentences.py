"""Splitting a streamed answer into sentences is linear for every script, also where no
blank follows a sentence end (docs/security.md, "Nested, oversized and flooding
upstream events"). Bounds far above the fixed figures (~0.03 s) and far below the old
ones (each token re-split its whole line: seconds)."""

from __future__ import annotations

import random
import time

import pytest

from streamcite.grounding.sentence_stream import SentenceStream
from streamcite.grounding.sentences import split_sentences


def _feed(text: str, tok: int = 3) -> tuple[float, list[tuple[int, int, str]]]:
    s = SentenceStream()
    got = []
    t0 = time.process_time()  # CPU time: what a loaded machine does not stretch
    for i in range(0, len(text), tok):
        got += [(x.start, x.end, x.text) for x in s.feed(text[i : i + tok])]
    got += [(x.start, x.end, x.text) for x in s.close()]
    return time.process_time() - t0, got


@pytest.mark.parametrize(
    "text",
    [
        ("北京是中国的首都。" * 2000)[:16000],  # old: ~2 s
        ("東京は日本の首都です。" * 1000)[:12000],
        ("wait… " * 2000)[:10000],  # old: ~2 s
        ("Claim." * 2000)[:10000],
        ("v1.2.3 " * 2000)[:10000],
    ],
    ids=["chinese", "japanese", "ellipsis", "no-space", "versions"],
)
def test_sentence_splitting_is_linear(text: str) -> None:
    took, got = _feed(text)
    assert took < 0.4
    assert got == [(x.start, x.end, x.text) for x in split_sentences(text)]


def test_streamed_split_is_the_whole_split_for_mixed_scripts() -> None:
    frags = [
        "Claim.",
        "。",
        "你好",
        "wait…",
        " ",
        "v1.2.3",
        "[1]",
        " [2]",
        "\n",
        "- ",
        "e.g.",
        "Mr. Smith",
        "」",
        "3.5",
        "!",
        "U.S.",
        "… ",
        "| a |",
        "1. ",
        "b c",
    ]
    rng = random.Random(7)
    for _ in range(400):
        text = "".join(rng.choice(frags) for _ in range(rng.randint(1, 40)))
        _, got = _feed(text, rng.randint(1, 6))
        assert got == [(x.start, x.end, x.text) for x in split_sentences(text)], text
