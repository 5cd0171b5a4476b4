"""Tokens and content keys of the offline grounding checker.

Fast tokenising (one C-level pass per text), canonical numbers (``1,500`` = ``1.500`` =
1500, ``eleven`` = 11) and months, contractions and elisions (``didn't``,
``l'autorità``, ``n'est``), Hebrew acronyms (``צה"ל``), negation cues, and the
per-language memo :class:`TokenTable`: analysing the same vocabulary twice costs a dict
lookup per token.
"""

from __future__ import annotations

import re
import sys
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import compress

import numpy as np
from numpy.typing import NDArray

from streamcite.grounding.words import (
    _ELISIONS,
    _ELISIONS_ANY,
    _EN_CONTRACTION_TAILS,
    _HE_PROCLITICS,
    _HEBREW_RE,
    _MONTHS,
    _NEG,
    _NEG_ANY,
    _NUMBER_WORDS,
    _ORDINAL_SUFFIX_RE,
    _ORDINAL_WORDS,
    _STOP,
    _STOP_ANY,
    _lang_key,
    _stem_he,
    fold,
    stem,
)

__all__ = [
    "CODE_ENDS",
    "CODE_NEGATION",
    "CODE_PRONOUN",
    "CODE_SHIFT",
    "PRONOUNS",
    "SENTENCE_BREAK",
    "TOKEN_RE",
    "TextFeatures",
    "TokenTable",
    "analyze",
    "char_ngrams",
    "ends_sentence",
    "features",
    "raw_tokens",
    "token_table",
    "word_ngrams",
]


# A number (with thousands/decimal separators) not glued to letters, or a word
# with internal apostrophes / Hebrew gershayim (folded to ' and ").
TOKEN_RE = re.compile(r"\d+(?:[.,]\d+)*(?![^\W_])|[^\W_]+(?:['\"][^\W_]+)*")
_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")
_THOUSANDS_RE = re.compile(r"^\d{1,3}(?:([.,])\d{3})(?:\1\d{3})*$")


def _canonical_number(raw: str) -> str:
    if _THOUSANDS_RE.match(raw):
        return "#" + raw.replace(".", "").replace(",", "")
    if "." in raw and "," in raw:
        # Both separators: the last one is the decimal mark (1,500.5 or 1.500,5).
        decimal = "." if raw.rfind(".") > raw.rfind(",") else ","
        thousands = "," if decimal == "." else "."
        raw = raw.replace(thousands, "")
    value = raw.replace(",", ".")
    if value.count(".") > 1:
        return "#" + value
    if "." in value:
        whole, frac = value.split(".")
        frac = frac.rstrip("0")
        return f"#{int(whole)}.{frac}" if frac else f"#{int(whole)}"
    return f"#{int(value)}"


# Fast tokenising of long texts: lower-case, a few Unicode punctuation marks made
# ASCII, UTF-8 bytes, ASCII punctuation but . , ' " ! ? turned into spaces by one
# bytes.translate, then bytes.split(). Every step is a single C call; each distinct
# token is then analysed once per process (memo keyed by its bytes). A token that
# ends with . ! or ? (possibly before a closing quote) ends a rough sentence.
_PREFOLD = (
    ("’", "'"), ("‘", "'"), ("ʼ", "'"), ("׳", "'"), ("“", '"'), ("”", '"'), ("״", '"'),
    ("«", " "), ("»", " "), ("‹", " "), ("›", " "), ("—", " "), ("–", " "), ("‑", " "),
    ("‐", " "), ("־", " "), ("…", ". "), ("¿", " "), ("¡", " "), ("„", " "), ("׃", ". "),
    ("。", ". "), ("！", "! "), ("？", "? "), ("؟", "? "),
)  # fmt: skip
_BYTE_PUNCT_SRC = b"()[]{};:<>/\\|*#@&+=~^`$%-_\t\r"
_BYTE_PUNCT = bytes.maketrans(_BYTE_PUNCT_SRC, b" " * len(_BYTE_PUNCT_SRC))

SENTENCE_BREAK = b"\x00"
"""A token :func:`raw_tokens` puts where a line ends (a rough sentence break too)."""


def raw_tokens(text: str) -> list[bytes]:
    """Raw tokens of ``text``: lower-cased UTF-8 bytes, edge punctuation still on, line
    breaks as :data:`SENTENCE_BREAK` tokens. No Python work per character or token."""
    if text.isascii():
        text = text.lower()
    else:
        # The typographic marks made ASCII first: a text then often is ASCII, and
        # lower() takes its fast path (the per-character Unicode path cost ~1 ms at the
        # API limits). The same result: the marks have no case, and no letter lower-cases
        # to one; the one context-dependent mapping (a final Σ, whose context the marks
        # may change) keeps the old order.
        sigma = "Σ" in text
        if sigma:
            text = text.lower()
        for src, dst in _PREFOLD:
            if src in text:
                text = text.replace(src, dst)
        if not sigma:
            text = text.lower()
    if "\n" in text:
        text = text.replace("\n", " \x00 ")
    if ";" in text:  # a clause break: a negation after ";" is not about what precedes
        text = text.replace(";", " \x00 ")
    return text.encode("utf-8", "replace").translate(_BYTE_PUNCT).split()


def ends_sentence(token: bytes) -> bool:
    """Whether a raw token closes a rough sentence (``cameron.``, ``why?"``, line break)."""
    return token == SENTENCE_BREAK or token.rstrip(b"\"')]").endswith((b".", b"!", b"?"))


class TokenTable:
    """Memo of token analyses for one language: raw token -> content key, negation cues.

    A key is a light stem, or starts with ``#`` for a number (``#1500``), a month
    (``#m12``) or a word with digits; ``""`` for a function word. Once the
    vocabulary is known, the keys of a token list cost one dict lookup per token.

    Each key also has an integer id (:attr:`names` ``[id]`` is the key, id 0 is ``""``),
    and each raw token a packed 4-byte *code*: ``id << 3 | pronoun << 2 | negation << 1
    | ends sentence``. :meth:`codes` turns a token list into one ``bytes`` of codes in one C
    pass (a join of memoised 4-byte strings), which numpy reads without copying: the
    facts' BM25 counts, lengths and sentence ends come from array operations.

    Ids are never reused nor dropped: a full table is replaced by a new one
    (:func:`token_table`), so ids stay valid for whoever holds the old one.
    """

    __slots__ = (
        "_lock",
        "_names_array",
        "_names_filled",
        "code",
        "enders",
        "ids",
        "key",
        "lang",
        "names",
        "negations",
    )

    MAX_ENTRIES = 300_000

    def __init__(self, lang: str) -> None:
        self.lang = lang
        self.key: dict[bytes, str] = {SENTENCE_BREAK: ""}
        self.code: dict[bytes, bytes] = {SENTENCE_BREAK: _pack(0, False, True, False)}
        """Raw token -> its packed 4-byte code (a native int32)."""
        self.names: list[str] = [""]
        """Key id -> key."""
        self.ids: dict[str, int] = {"": 0}
        """Key -> key id."""
        self.negations: set[bytes] = set()
        """Raw tokens that are negation cues (``not``, ``didn't``, ``n'est``, ``ולא``)."""
        self.enders: set[bytes] = {SENTENCE_BREAK}
        """Raw tokens that end a rough sentence (``cameron.``, ``why?"``)."""
        self._lock = threading.Lock()
        self._names_array: NDArray[np.object_] = np.empty(0, dtype=object)
        self._names_filled = 0

    def names_array(self) -> NDArray[np.object_]:
        """:attr:`names` as a numpy object array (``array[ids]`` gives the keys of many ids
        in one C call). It has spare room, filled as the vocabulary grows (amortised O(1)
        a key); an array handed out stays valid for the ids known when it was."""
        with self._lock:
            array, filled, n = self._names_array, self._names_filled, len(self.names)
            if filled < n:
                if len(array) < n:
                    grown = np.empty(max(n, 2 * len(array), 1024), dtype=object)
                    grown[:filled] = array[:filled]
                    self._names_array = array = grown
                array[filled:n] = self.names[filled:n]
                self._names_filled = n
        return array

    @property
    def full(self) -> bool:
        return len(self.key) >= self.MAX_ENTRIES

    def keys(self, tokens: list[bytes]) -> list[str]:
        """The key of each raw token, in order (``""`` for function words)."""
        try:  # known tokens: one C-level pass (no scan of the result for misses)
            return list(map(self.key.__getitem__, tokens))
        except KeyError:
            return list(map(self.key_of, tokens))

    def key_of(self, token: bytes) -> str:
        """The key of one raw token: memoised, else learnt."""
        key = self.key.get(token)
        return self.learn(token) if key is None else key

    def codes(self, tokens: list[bytes]) -> bytes:
        """The packed code of each raw token, concatenated (4 bytes a token)."""
        try:
            return b"".join(map(self.code.__getitem__, tokens))
        except KeyError:
            code = self.code
            for token in tokens:
                if token not in code:
                    self.learn(token)
            return b"".join(map(code.__getitem__, tokens))

    def content_keys(self, tokens: list[bytes]) -> list[str]:
        """The non-empty keys of ``tokens``, in order."""
        return list(filter(None, self.keys(tokens)))

    def learn(self, token: bytes) -> str:
        keys: list[str] = []
        negation = False
        for sub in TOKEN_RE.findall(fold(token.decode("utf-8", "replace"))):
            key, neg = _analyse(sub, self.lang)
            negation = negation or neg
            if key:
                keys.append(key)
        # "example.com" or "a.m." make one key, the same on both sides of a check.
        out = ".".join(keys)
        ends = ends_sentence(token)
        with self._lock:  # ids are handed out once, also when threads learn at once
            key_id = self.ids.get(out)
            if key_id is None:
                key_id = self.ids[out] = len(self.names)
                self.names.append(out)
            if negation:
                self.negations.add(token)
            if ends:
                self.enders.add(token)
            self.code[token] = _pack(key_id, negation, ends, token in PRONOUNS)
            self.key[token] = out
        return out

    def sentence_ends(self, tokens: list[bytes]) -> list[int]:
        """Positions of the tokens that end a rough sentence (tokens seen by :meth:`keys`)."""
        return list(compress(range(len(tokens)), map(self.enders.__contains__, tokens)))

    def negated(self, tokens: list[bytes]) -> bool:
        return not self.negations.isdisjoint(tokens)


def _pack(key_id: int, negation: bool, ends: bool, pronoun: bool) -> bytes:
    code = key_id << CODE_SHIFT | pronoun << 2 | negation << 1 | ends
    return code.to_bytes(4, sys.byteorder)  # native: numpy's int32 and memoryview's "i"


CODE_ENDS = 1
"""Bit of a token code: the token ends a rough sentence."""
CODE_NEGATION = 2
"""Bit of a token code: the token is a negation cue."""
CODE_PRONOUN = 4
"""Bit of a token code: the token is one of :data:`PRONOUNS`."""
CODE_SHIFT = 3
"""A token code shifted right by this is its key id."""

# A sentence that opens with a pronoun continues the previous one ("Titanic is a
# film. It was directed by ..."): such a pair is aligned with a claim undiscounted.
PRONOUNS = frozenset(
    w.encode()
    for w in str.split(
        "it he she they this these its his her their "
        "il elle ils elles ce cette celui celle "
        "esso essa lui lei essi esse questo questa "
        "הוא היא הם הן זה זו זאת"
    )
)
"""Raw tokens that, opening a sentence, refer to the one before."""

_TABLES: dict[str, TokenTable] = {}


def token_table(lang: str) -> TokenTable:
    """The process-wide :class:`TokenTable` of ``lang`` (``und`` for unknown languages).

    A table holding :attr:`TokenTable.MAX_ENTRIES` tokens is replaced by an empty one
    (memory stays bounded; a check holds one table from start to end)."""
    lang = _lang_key(lang)
    table = _TABLES.get(lang)
    if table is None or table.full:
        table = _TABLES[lang] = TokenTable(lang)
    return table


def _unquote(word: str, lang: str) -> tuple[str, bool]:
    """A word with an apostrophe or gershayim without it: (word, negation), or
    ("", True) for a negated contraction (``didn't``)."""
    if _HEBREW_RE.match(word):
        return word.replace('"', "").replace("'", ""), False
    head, _, tail = word.partition("'")
    if tail == "t" and head.endswith("n"):  # didn't, can't, isn't
        return "", True
    if tail in _EN_CONTRACTION_TAILS and lang in ("en", "und"):
        return head, False
    if head in _ELISIONS.get(lang, _ELISIONS_ANY):
        return tail.replace("'", ""), head == "n"
    return word.replace("'", "").replace('"', ""), False


def _number_or_month(word: str, bare: str, lang: str) -> str | None:
    """``#n`` for a number word, ``#mN`` for a month, else None."""
    number_words = _NUMBER_WORDS.get(lang, {})
    n = number_words.get(word)
    if n is None and bare != word:
        n = number_words.get(bare)
    if n is not None:
        return f"#{n}"
    months = _MONTHS.get(lang, {})
    m = months.get(word) or (months.get(bare) if bare != word else None)
    if m is not None:
        return f"#m{m}"
    if (o := _ORDINAL_WORDS.get(lang, {}).get(word)) is not None:
        return f"#o{o}"
    if word[0].isdigit() and (match := _ORDINAL_SUFFIX_RE.fullmatch(word)):
        return f"#o{int(match.group(1))}"
    return None


def _analyse(word: str, lang: str) -> tuple[str, bool]:
    """(key, is a negation cue) of one folded token."""
    if _NUMBER_RE.fullmatch(word):
        return _canonical_number(word), False
    negation = False
    if "'" in word or '"' in word:
        word, negation = _unquote(word, lang)
    if not word:
        return "", negation
    negs = _NEG.get(lang, _NEG_ANY)
    bare = word
    if lang == "he" or _HEBREW_RE.match(word):
        # Negations and function words often carry a proclitic (ולא, שאין).
        if word in negs or (len(word) > 2 and word[0] in _HE_PROCLITICS and word[1:] in negs):
            return "", True
        bare = _stem_he(word)
    elif word in negs:
        return "", True
    if word in _STOP.get(lang, _STOP_ANY):
        return "", negation
    special = _number_or_month(word, bare, lang)
    if special is not None:
        return special, negation
    if len(word) == 1:
        return "", negation
    key = stem(word, lang)
    if any(c.isdigit() for c in word):
        key = "#" + key
    return key, negation


@dataclass(slots=True)
class TextFeatures:
    """What the checker compares: content keys, numbers, negation, salient terms."""

    stems: list[str] = field(default_factory=list)
    """Content keys in order (numbers as ``#n``, months as ``#mN``)."""
    numbers: set[str] = field(default_factory=set)
    negated: bool = False
    salient: set[str] = field(default_factory=set)
    """Keys written capitalised mid-sentence (names) and numbers."""


def analyze(text: str, lang: str, *, salience: bool = False) -> TextFeatures:
    """Features of ``text`` in ``lang`` (see :data:`LANGUAGES`; anything else is generic).

    With ``salience``, words written with a capital inside the sentence (names) are
    marked salient; that needs the original casing, so it costs a second pass.
    """
    return features(text, raw_tokens(text), token_table(lang), salience=salience)


def features(
    text: str, tokens: list[bytes], table: TokenTable, *, salience: bool = False
) -> TextFeatures:
    """:func:`analyze` of ``text`` whose :func:`raw_tokens` are ``tokens`` (already at hand)."""
    keys = table.content_keys(tokens)
    numbers = {k for k in keys if k[0] == "#"}
    out = TextFeatures(keys, numbers, table.negated(tokens), set(numbers))
    if salience:
        out.salient.update(_capitalised_keys(text, table))
    return out


_CASED_WORD_RE = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
# The same words in an ASCII text, where a letter (not \W, \d or _) is [A-Za-z]: a range
# test per character instead of a Unicode category lookup (a third of the time).
_CASED_ASCII_RE = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)*")


def _capitalised_keys(text: str, table: TokenTable) -> set[str]:
    found = (_CASED_ASCII_RE if text.isascii() else _CASED_WORD_RE).findall(text)
    words = [w for w in found[1:] if len(w) > 1 and w[0].isupper()]
    if not words:
        return set()
    return set(table.content_keys(raw_tokens(" ".join(words))))


def char_ngrams(text: str, n: int = 4) -> set[str]:
    """Character n-grams of each word padded with spaces (words shorter than n whole)."""
    grams: set[str] = set()
    for word in text.split():
        grams.update(word_ngrams(word, n))
    return grams


@lru_cache(maxsize=65_536)
def word_ngrams(word: str, n: int = 4) -> tuple[str, ...]:
    """Character n-grams of `` word `` (padded with spaces); memoised, words recur."""
    padded = f" {word} "
    if len(padded) <= n:
        return (padded,)
    return tuple(dict.fromkeys(padded[i : i + n] for i in range(len(padded) - n + 1)))
