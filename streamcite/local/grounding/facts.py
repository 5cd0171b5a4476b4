"""A fact as the checker reads it: raw tokens, content keys, rough sentences."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from streamcite.local.grounding.tokens import TokenTable, raw_tokens

__all__ = ["Fact"]


# A sentence that opens with a pronoun continues the previous one ("Titanic is a
# film. It was directed by ..."): such a pair is aligned with a claim undiscounted.
_PRONOUNS = frozenset(
    w.encode()
    for w in str.split(
        "it he she they this these its his her their "
        "il elle ils elles ce cette celui celle "
        "esso essa lui lei essi esse questo questa "
        "הוא היא הם הן זה זו זאת"
    )
)


class Fact:
    """One fact as raw tokens and content keys, cut lazily into rough sentences.

    Only the fact-level key counts (for BM25) are computed up front, in C-level
    passes; the sentences' key sets and negation flags are built when the fact is a
    candidate for some claim.
    """

    __slots__ = (
        "_grams",
        "_negs",
        "_sentences",
        "_sets",
        "counts",
        "keys",
        "length",
        "table",
        "tokens",
    )

    def __init__(self, text: str, table: TokenTable) -> None:
        self.table = table
        self.tokens = raw_tokens(text)
        self.keys = table.keys(self.tokens)
        self.counts: Counter[str] = Counter(self.keys)
        self.length = len(self.keys) - self.counts.pop("", 0)
        self._sentences: list[tuple[int, int]] | None = None
        self._sets: list[set[str]] | None = None
        self._negs: dict[int, bool] | None = None
        self._grams: dict[int, str] = {}

    def sentences(self) -> list[tuple[int, int]]:
        """Token ranges of the rough sentences."""
        if self._sentences is None:
            out: list[tuple[int, int]] = []
            start = 0
            for end in self.table.sentence_ends(self.tokens):
                out.append((start, end + 1))
                start = end + 1
            if len(self.tokens) > start:
                out.append((start, len(self.tokens)))
            self._sentences = out
        return self._sentences

    @property
    def n_sentences(self) -> int:
        return len(self.sentences())

    def sets(self) -> list[set[str]]:
        if self._sets is None:
            keys = self.keys
            self._sets = [set(keys[a:b]) for a, b in self.sentences()]
            for keys_of_sentence in self._sets:
                keys_of_sentence.discard("")
        return self._sets

    def continues(self, i: int) -> bool:
        """Whether rough sentence ``i`` opens with a pronoun (refers to the one before)."""
        a, b = self.sentences()[i]
        return b > a and self.tokens[a] in _PRONOUNS

    def negated(self, i: int) -> bool:
        """Whether rough sentence ``i`` holds a negation cue."""
        if self._negs is None:
            self._negs = {}
        neg = self._negs.get(i)
        if neg is None:
            a, b = self.sentences()[i]
            neg = self._negs[i] = self.table.negated(self.tokens[a:b])
        return neg

    def gram_text(self, i: int) -> str:
        """Keys of sentence ``i`` space-separated and padded: n-gram containment by substring."""
        g = self._grams.get(i)
        if g is None:
            g = self._grams[i] = " " + " ".join(self.sets()[i]) + " "
        return g

    def window_keys(self, window: Sequence[int]) -> list[str]:
        """Content keys of the window's sentences, in order."""
        spans = self.sentences()
        a, b = spans[window[0]][0], spans[window[-1]][1]
        return [k for k in self.keys[a:b] if k]

    def numbers(self, window: Sequence[int]) -> set[str]:
        sets = self.sets()
        out: set[str] = set()
        for i in window:
            out.update(k for k in sets[i] if k[0] == "#")
        return out
