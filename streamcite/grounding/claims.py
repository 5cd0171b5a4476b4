"""A claim as the checker reads it: its content keys, weights, names and comparisons."""

from __future__ import annotations

import re

from streamcite.grounding.comparators import Comparison
from streamcite.grounding.config import EngineConfig
from streamcite.grounding.roles import Clause
from streamcite.grounding.rules import number_neighbours
from streamcite.grounding.tokens import TextFeatures, TokenTable, raw_tokens, word_ngrams
from streamcite.grounding.words import fold

__all__ = ["Claim", "question_keys", "structured_claim", "without_enumerators"]


class Claim:
    __slots__ = (
        "antonyms",
        "any_antonym",
        "any_synonym",
        "appositions",
        "comparisons",
        "done",
        "features",
        "grams",
        "keyset",
        "n_grams",
        "names",
        "neighbours",
        "numbers",
        "order",
        "question",
        "roles",
        "synonyms",
        "total",
        "unique",
        "unknown_name",
        "weights",
    )

    def __init__(
        self, features: TextFeatures, cfg: EngineConfig, question: frozenset[str] = frozenset()
    ) -> None:
        self.features = features
        self.question = question
        # The question of a "question: answer" claim frames the topic: its names and
        # numbers need not be in the fact ("Who won best actor in 1969: X").
        self.names = {k for k in features.salient if k[0] != "#"} - question
        self.numbers = features.numbers - question
        self.neighbours = number_neighbours(features.stems) if self.numbers else set()
        """Words next to its numbers (:func:`~.rules.number_neighbours`)."""
        self.comparisons: list[Comparison] = []
        self.done: list[bytes] = []
        """The claim's raw tokens when it states something done (status check)."""
        self.roles: list[tuple[str, str]] = []
        """(name, role) pairs the claim states ("Globex was the buyer"; role check)."""
        self.appositions: list[tuple[str, str]] = []
        """(name, role) pairs the claim states by apposition with a definite article,
        outside its question ("Anna Weber, the treasurer, …"; role-swap check)."""
        self.order: list[Clause] = []
        """Who did what to whom ("Globex bought Acme"; word-order check)."""
        self.unknown_name = False
        self.synonyms: dict[str, frozenset[str]] = {}
        """Claim key -> the keys that share a synset with it (:mod:`~.lexicon`; only
        the keys that have any): a fact holding one holds the claim's word."""
        self.antonyms: dict[str, frozenset[str]] = {}
        self.any_synonym: frozenset[str] = frozenset()
        """All the keys of :attr:`synonyms` (a fact holding none is passed over at once)."""
        self.any_antonym: frozenset[str] = frozenset()
        """All the keys of :attr:`antonyms`."""
        """Claim key -> its antonyms' keys (:mod:`~.lexicon`): a fact window holding one
        where the claim's word is missing says the opposite."""
        """A name of the claim is in no fact at all (set by :func:`evaluate`)."""
        self.unique = unique = list(dict.fromkeys(features.stems))
        self.keyset = set(unique)
        salient, heavy = features.salient, cfg.salient_weight
        self.weights = weights = {k: (heavy if k in salient else 1.0) for k in unique}
        for k in question:
            # A question's words restate the topic in words the fact need not use.
            if k in weights:
                weights[k] *= cfg.question_weight
        self.total = sum(weights.values())
        # Character 4-grams per word: a word matched as such contains all of its own,
        # so only the grams of unmatched words are searched in the window.
        self.grams = (
            dict(zip(unique, map(word_ngrams, unique), strict=True)) if cfg.ngram_weight else {}
        )
        self.n_grams = sum(map(len, self.grams.values()))


_SECTION_NUMBER_RE = re.compile(r"^\s*\d+(?:\.\d+)*[.)]?\s+")
_TABLE_RULE_RE = re.compile(r"^[\s|:\-+]*$")


def structured_claim(text: str) -> bool:
    """A heading or table row is checked when it states a number ("| Meals | 25 € |",
    "Budget 2024"); a section number ("2. Remote work") and a table rule do not count."""
    if _TABLE_RULE_RE.match(text):
        return False
    return any(c.isdigit() for c in _SECTION_NUMBER_RE.sub("", text.lstrip("#| ")))


# "Who directed Titanic: James Cameron." — a question and its answer in one claim (the
# shape of FAQ-style answers). Interrogatives folded, per language.
_INTERROGATIVES = (
    "who|whom|whose|what|when|where|which|how|why|"
    "qui|que|quoi|quand|ou|quel|quelle|quels|quelles|comment|pourquoi|combien|"
    "chi|cosa|quando|dove|quale|quali|come|perche|quanto|quanta|quanti|quante|"
    "מי|מה|מתי|איפה|היכנ|איזה|איזו|כמה|למה|מדוע|איכ"
)
_QUESTION_RE = re.compile(rf"^\W*(?:{fold(_INTERROGATIVES)})\b[^:]{{3,200}}:\s+\S")


def question_keys(text: str, table: TokenTable) -> frozenset[str]:
    """Keys of a "question: answer" claim's question that its answer does not repeat."""
    folded = fold(text)
    if ":" not in folded or not _QUESTION_RE.match(folded):
        return frozenset()
    question, _, answer = text.partition(":")
    asked = set(table.content_keys(raw_tokens(question)))
    return frozenset(asked - set(table.content_keys(raw_tokens(answer))))


# A list enumerator at an item's start: "1.", "2)", "(a)", "iv." — at the claim's start
# ("2. Save the file.", an inline list cut after each item), or after ":", ";" or ","
# inside it ("Steps: 1) open the form, 2) save it."). Lower-case letters only: "A." is
# an initial ("A. Smith").
_ENUMERATOR_RE = re.compile(
    r"(?:^|(?<=[:;,]))\s*(\(?(\d{1,2}|[a-z]|[ivx]{2,4})[.)]|\((\d{1,2}|[a-zA-Z]|[ivx]{2,4})\))(?=\s|$)"
)
_ROMAN = {r: n for n, r in enumerate(str.split("i ii iii iv v vi vii viii ix x xi xii"), 1)}


def _ordinals(item: str) -> set[tuple[str, int]]:
    """The ways an enumerator counts: ("n", 2) for "2", ("a", 2) for "b", ("r", 4) for "iv"
    ("i", "v" and "x" are letters and Roman numerals)."""
    if item.isdigit():
        return {("n", int(item))}
    low = item.lower()
    out = {("a", ord(low) - 96)} if len(low) == 1 else set()
    if low in _ROMAN:
        out.add(("r", _ROMAN[low]))
    return out


def without_enumerators(text: str) -> str:
    """The claim without its list enumerators, which are not numbers of the claim: the
    number veto read the "2." of "2. Save the file." as a number the fact lacks.

    One at the claim's start is always an enumerator (what else could "2. Save" or
    "(a) Open" be); one inside the claim only when it continues the count of the one
    before it ("…, 2) save") or opens one after a colon ("Steps: 1) open"): "aged 7, 5."
    keeps its 5. Never one glued to the colon or comma before it ("won 2:1."), nor one that
    would open a list with nothing after it ("was: 1." keeps its number)."""
    if "." not in text and ")" not in text:
        return text
    cut: list[tuple[int, int]] = []
    before: set[tuple[str, int]] = set()
    for m in _ENUMERATOR_RE.finditer(text):
        ways = _ordinals(m.group(2) or m.group(3))
        # Inside a claim an enumerator has a blank before it ("2:1." is a score), and one
        # that starts a list has words after it ("was: 1." is the claim's number).
        blank = m.start() == 0 or m.start(1) > m.start()
        words = bool(text[m.end(1) :].strip())
        at_start = m.start() == 0 and words
        opens = text[m.start() - 1 : m.start()] == ":" and words and any(v == 1 for _, v in ways)
        follows = any((kind, v - 1) in before for kind, v in ways)
        if blank and (at_start or opens or follows):
            end = m.end(1)
            while end < len(text) and text[end].isspace():
                end += 1
            cut.append((m.start(1), end))
            before = ways
        else:
            before = set()
    if not cut:
        return text
    out, pos = [], 0
    for a, b in cut:
        out.append(text[pos:a])
        pos = b
    out.append(text[pos:])
    return "".join(out).strip()
