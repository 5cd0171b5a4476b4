"""A fact as the checker reads it: raw tokens, token codes, content keys, rough sentences;
and all the facts of a check as one array of token codes."""

from __future__ import annotations

import sys
from bisect import bisect_left
from collections.abc import Sequence
from itertools import compress, repeat
from operator import countOf, rshift

import numpy as np
from numpy.typing import NDArray

from streamcite.grounding.lexicon import root
from streamcite.grounding.roles import fact_bindings, fact_roles
from streamcite.grounding.tokens import (
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
_SHIFT = repeat(CODE_SHIFT)
_NUMPY_TOKENS = 200
"""Above this many tokens, a fact's keys are read with numpy (its fixed cost then pays)."""
_FLAGS = 0 if sys.byteorder == "little" else 3
"""Offset in a packed 4-byte code of its low byte, which holds the three flag bits:
``packed[_FLAGS::4]`` is one byte a token (a C-level slice, no list of ints)."""
_HAS_BIT = {
    bit: bytes(1 if b & bit else 0 for b in range(256))
    for bit in (CODE_ENDS, CODE_NEGATION, CODE_PRONOUN)
}
"""``translate`` tables: a flag byte -> 1 when it has the bit, else 0 (selectors of
``compress``)."""


class Fact:
    """One fact, cut lazily into rough sentences: read the plain way (its raw tokens and
    their keys) in a check of a few facts, or as packed token codes
    (:meth:`TokenTable.codes`) in a larger one.

    Packed, only the codes are computed up front (one C-level pass; the raw tokens are
    dropped, and :class:`Facts` reads the BM25 counts and lengths of all facts from the
    codes with numpy). The content keys, their set, the sentences, their key sets and
    negation flags are built when the fact is a candidate for some claim (C-level passes
    over the codes); the raw tokens again only when a rule reads them. Both readings
    give the same answers (``tests/test_grounding_fast_paths.py``).
    """

    __slots__ = (
        "_bindings",
        "_codes",
        "_grams",
        "_keys",
        "_keyset",
        "_negs",
        "_packed",
        "_plain",
        "_roles",
        "_rooted",
        "_sentences",
        "_sets",
        "_tokens",
        "table",
        "text",
    )

    def __init__(self, text: str, table: TokenTable) -> None:
        self._setup(text, table, None, raw_tokens(text))

    def _setup(
        self, text: str, table: TokenTable, packed: bytes | None, tokens: list[bytes] | None
    ) -> None:
        self.text = text
        self.table = table
        self._packed = packed
        self._tokens = tokens
        self._plain = packed is None
        """Read from its raw tokens (a check of a few facts), not from its codes."""
        self._codes: list[int] | None = None
        self._keys: list[str] | None = None
        self._keyset: set[str] | None = None
        self._sentences: list[tuple[int, int]] | None = None
        self._sets: list[set[str]] | None = None
        self._negs: list[int] | None = None
        self._grams: dict[int, str] | None = None  # built when asked: most facts never are
        self._roles: dict[str, str] | None = None
        self._rooted: dict[str, list[str]] | None = None
        self._bindings: dict[str, str] | None = None

    @classmethod
    def _of(
        cls, text: str, table: TokenTable, packed: bytes | None, tokens: list[bytes] | None
    ) -> Fact:
        fact = cls.__new__(cls)
        fact._setup(text, table, packed, tokens)
        return fact

    @property
    def tokens(self) -> list[bytes]:
        """The raw tokens (:func:`raw_tokens`; positions as in the codes)."""
        if self._tokens is None:
            self._tokens = raw_tokens(self.text)
        return self._tokens

    @property
    def packed(self) -> bytes:
        """The token codes, 4 bytes each in native order (:meth:`TokenTable.codes`)."""
        if self._packed is None:
            self._packed = self.table.codes(self.tokens)
        return self._packed

    @property
    def codes(self) -> list[int]:
        """The code of each token (key id, pronoun, negation and sentence-end bits)."""
        if self._codes is None:
            self._codes = memoryview(self.packed).cast("i").tolist()
        return self._codes

    def _positions(self, bit: int) -> list[int]:
        if self._plain:
            self.keys  # noqa: B018  # learns every token: the table's sets are complete
            tokens = self.tokens  # (only sentence ends are asked of a plain fact)
            return list(compress(range(len(tokens)), map(self.table.enders.__contains__, tokens)))
        # One slice and one translate (C-level) instead of a Python int per token.
        flags = self.packed[_FLAGS::4].translate(_HAS_BIT[bit])
        return list(compress(range(len(flags)), flags))

    @property
    def keys(self) -> list[str]:
        """The key of each raw token, in order (``""`` for function words)."""
        if self._keys is None:
            if self._plain:
                self._keys = self.table.keys(self.tokens)
            elif len(self.packed) > 4 * _NUMPY_TOKENS:  # one numpy take beats two maps
                ids = np.frombuffer(self.packed, dtype=np.int32) >> CODE_SHIFT
                self._keys = self.table.names_array()[ids].tolist()
            else:
                names = self.table.names
                self._keys = list(map(names.__getitem__, map(rshift, self.codes, _SHIFT)))
        return self._keys

    @property
    def keyset(self) -> set[str]:
        """Its distinct content keys (what the alignment asks of a candidate)."""
        if self._keyset is None:
            self._keyset = set(self.keys)
            self._keyset.discard("")
        return self._keyset

    @property
    def length(self) -> int:
        """Number of content keys."""
        return len(self.keys) - countOf(self.keys, "")

    def sentences(self) -> list[tuple[int, int]]:
        """Token ranges of the rough sentences."""
        if self._sentences is None:
            out: list[tuple[int, int]] = []
            start = 0
            for end in self._positions(CODE_ENDS):
                out.append((start, end + 1))
                start = end + 1
            n = len(self.tokens) if self._plain else len(self.packed) // 4
            if n > start:
                out.append((start, n))
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
        if self._plain:
            return b > a and self.tokens[a] in PRONOUNS
        return b > a and bool(self.packed[4 * a + _FLAGS] & CODE_PRONOUN)

    def negated(self, i: int) -> bool:
        """Whether rough sentence ``i`` holds a negation cue."""
        if self._plain:  # one set test of the sentence's tokens (most facts: few asked)
            a, b = self.sentences()[i]
            return self.table.negated(self.tokens[a:b])
        if self._negs is None:
            self._negs = self._positions(CODE_NEGATION)
        if not self._negs:
            return False
        a, b = self.sentences()[i]
        at = bisect_left(self._negs, a)
        return at < len(self._negs) and self._negs[at] < b

    def gram_text(self, i: int) -> str:
        """Keys of sentence ``i`` space-separated and padded: n-gram containment by substring."""
        if self._grams is None:
            self._grams = {}
        g = self._grams.get(i)
        if g is None:
            g = self._grams[i] = " " + " ".join(self.sets()[i]) + " "
        return g

    def roles(self) -> dict[str, str]:
        """Its names bound to roles (:func:`~.roles.fact_roles`), read once per check: a
        fact is the candidate of many claims that state a role."""
        if self._roles is None:
            self._roles = fact_roles(self.tokens, self.table.lang)
        return self._roles

    def bindings(self) -> dict[str, str]:
        """Its names bound to roles by apposition or by a copula
        (:func:`~.roles.fact_bindings`), read once per check and only for a claim's
        apposition whose name it holds."""
        if self._bindings is None:
            self._bindings = fact_bindings(self.tokens, self.table.lang)
        return self._bindings

    def rooted(self) -> dict[str, list[str]]:
        """Its keys by their root (:func:`~.lexicon.root`: French and Italian verbs'
        endings off, so that "vendu" meets the lemma "vendre"), built when a claim with
        synonyms asks, once per check."""
        if self._rooted is None:
            lang = self.table.lang
            out: dict[str, list[str]] = {}
            for k in self.keyset:
                out.setdefault(root(k, lang), []).append(k)
            self._rooted = out
        return self._rooted

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
    """All the facts of a check; their token codes as one array, for BM25 and names.

    ``ids[t]`` is the key id of token ``t`` of all facts in order, ``owner[t]`` its
    fact, ``lengths[j]`` the number of content keys of fact ``j`` (numpy arrays, built
    on first use: a check of a handful of facts needs none of them).
    """

    __slots__ = ("_arrays", "_present", "facts", "table")

    FEW = 8
    """Up to this many facts, each is read the plain way and :meth:`known` reads their key
    sets (each fact is then a candidate of some claim: its keys are needed anyway); the
    packed codes pay for themselves beyond."""

    def __init__(self, texts: Sequence[str], table: TokenTable) -> None:
        self.table = table
        if len(texts) <= self.FEW:  # each fact is a candidate: read the plain way
            self.facts = [Fact._of(t, table, None, raw_tokens(t)) for t in texts]
        else:  # the raw tokens of each fact live only until their codes are read
            self.facts = [Fact._of(t, table, table.codes(raw_tokens(t)), None) for t in texts]
        self._arrays: tuple[NDArray[np.int32], NDArray[np.int32], NDArray[np.int64]] | None
        self._arrays = None
        self._present: NDArray[np.bool_] | None = None

    def __len__(self) -> int:
        return len(self.facts)

    def _built(self) -> tuple[NDArray[np.int32], NDArray[np.int32], NDArray[np.int64]]:
        if self._arrays is None:
            packed = [f.packed for f in self.facts]
            ids = np.frombuffer(b"".join(packed), dtype=np.int32) >> CODE_SHIFT
            sizes = np.fromiter(map(len, packed), dtype=np.int64, count=len(packed)) // 4
            # int32 (≤ 200 facts): half the fresh pages of int64 (large arrays are mmapped
            # anew in each check, and their page faults are system time)
            owner = np.repeat(np.arange(len(packed), dtype=np.int32), sizes)
            lengths = np.bincount(owner[ids != 0], minlength=len(packed))
            self._arrays = (ids, owner, lengths)
        return self._arrays

    @property
    def ids(self) -> NDArray[np.int32]:
        return self._built()[0]

    @property
    def owner(self) -> NDArray[np.int32]:
        return self._built()[1]

    @property
    def lengths(self) -> NDArray[np.int64]:
        return self._built()[2]

    def known(self, keys: set[str]) -> set[str]:
        """The keys that occur in some fact."""
        if len(self.facts) <= self.FEW:
            return set().union(*(f.keyset & keys for f in self.facts))
        ids = self.table.ids
        if self._present is None:
            token_ids = self.ids  # first: reading the codes may learn tokens (new key ids)
            self._present = np.zeros(len(self.table.names), dtype=np.bool_)
            self._present[token_ids] = True
        found = self._present
        return {k for k in keys if (i := ids.get(k)) is not None and i < len(found) and found[i]}
