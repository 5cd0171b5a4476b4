"""A fact as the checker reads it: raw tokens, token codes, content keys, rough sentences;
and all the facts of a check as one array of token codes."""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from streamcite.local.grounding.tokens import (
    CODE_ENDS,
    CODE_NEGATION,
    CODE_PRONOUN,
    CODE_SHIFT,
    PRONOUNS,
    TokenTable,
    raw_tokens,
)

__all__ = ["Fact", "Facts"]


_PRONOUNS = PRONOUNS  # the old name


class Fact:
    """One fact as packed token codes (:meth:`TokenTable.codes`), cut lazily into rough
    sentences.

    Only the codes are computed up front (one C-level pass; :class:`Facts` reads the
    BM25 counts and lengths of all facts from them with numpy, and the raw tokens are
    dropped). The content keys, their counts, the sentences' key sets and negation flags
    are built when the fact is a candidate for some claim; the raw tokens again only
    when a rule reads them.
    """

    __slots__ = (
        "_arr",
        "_counts",
        "_grams",
        "_keys",
        "_negs",
        "_sentences",
        "_sets",
        "_tokens",
        "table",
        "text",
    )

    def __init__(self, text: str, table: TokenTable) -> None:
        self._setup(text, np.frombuffer(table.codes(raw_tokens(text)), dtype="<i4"), table)

    def _setup(self, text: str, arr: NDArray[np.int32], table: TokenTable) -> None:
        self.text = text
        self.table = table
        self._arr = arr
        self._tokens: list[bytes] | None = None
        self._keys: list[str] | None = None
        self._counts: Counter[str] | None = None
        self._sentences: list[tuple[int, int]] | None = None
        self._sets: list[set[str]] | None = None
        self._negs: list[int] | None = None
        self._grams: dict[int, str] = {}

    @classmethod
    def _of(cls, text: str, arr: NDArray[np.int32], table: TokenTable) -> Fact:
        fact = cls.__new__(cls)
        fact._setup(text, arr, table)
        return fact

    @property
    def tokens(self) -> list[bytes]:
        """The raw tokens (:func:`raw_tokens`; positions as in the codes)."""
        if self._tokens is None:
            self._tokens = raw_tokens(self.text)
        return self._tokens

    @property
    def keys(self) -> list[str]:
        """The key of each raw token, in order (``""`` for function words)."""
        if self._keys is None:
            self._keys = self.table.names_array()[self._arr >> CODE_SHIFT].tolist()
        return self._keys

    @property
    def counts(self) -> Counter[str]:
        """How often each content key occurs (no ``""``)."""
        if self._counts is None:
            self._counts = Counter(self.keys)
            self._counts.pop("", None)
        return self._counts

    @property
    def length(self) -> int:
        """Number of content keys."""
        return int(np.count_nonzero(self._arr >> CODE_SHIFT))

    def sentences(self) -> list[tuple[int, int]]:
        """Token ranges of the rough sentences."""
        if self._sentences is None:
            out: list[tuple[int, int]] = []
            start = 0
            for end in np.flatnonzero(self._arr & CODE_ENDS).tolist():
                out.append((start, end + 1))
                start = end + 1
            if len(self._arr) > start:
                out.append((start, len(self._arr)))
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
        return b > a and bool(self._arr[a] & CODE_PRONOUN)

    def negated(self, i: int) -> bool:
        """Whether rough sentence ``i`` holds a negation cue."""
        if self._negs is None:
            self._negs = np.flatnonzero(self._arr & CODE_NEGATION).tolist()
        if not self._negs:
            return False
        a, b = self.sentences()[i]
        at = bisect_left(self._negs, a)
        return at < len(self._negs) and self._negs[at] < b

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
        return list(filter(None, self.keys[a:b]))

    def numbers(self, window: Sequence[int]) -> set[str]:
        sets = self.sets()
        out: set[str] = set()
        for i in window:
            out.update(k for k in sets[i] if k[0] == "#")
        return out


class Facts:
    """All the facts of a check, their token codes in one array (BM25 and names read it).

    ``ids[t]`` is the key id of token ``t`` of all facts in order, ``owner[t]`` its
    fact, ``lengths[j]`` the number of content keys of fact ``j``.
    """

    __slots__ = ("_present", "facts", "ids", "lengths", "owner", "table")

    def __init__(self, texts: Sequence[str], table: TokenTable) -> None:
        self.table = table
        # The raw tokens of each fact live only until their codes are read.
        packed = [table.codes(raw_tokens(t)) for t in texts]
        codes = np.frombuffer(b"".join(packed), dtype="<i4")
        sizes = np.fromiter(map(len, packed), dtype=np.int64, count=len(packed)) // 4
        bounds = [0, *np.cumsum(sizes).tolist()]
        self.facts = [
            Fact._of(text, codes[a:b], table)
            for text, a, b in zip(texts, bounds, bounds[1:], strict=False)
        ]
        self.ids = codes >> CODE_SHIFT
        self.owner = np.repeat(np.arange(len(packed), dtype=np.int64), sizes)
        content = self.ids != 0
        self.lengths = np.bincount(self.owner[content], minlength=len(packed))
        self._present: NDArray[np.bool_] | None = None

    def __len__(self) -> int:
        return len(self.facts)

    def known(self, keys: set[str]) -> set[str]:
        """The keys that occur in some fact."""
        if self._present is None:
            self._present = np.zeros(len(self.table.names), dtype=np.bool_)
            self._present[self.ids] = True
        present, ids = self._present, self.table.ids
        return {
            k for k in keys if (i := ids.get(k)) is not None and i < len(present) and present[i]
        }
