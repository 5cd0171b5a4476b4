"""BM25 retrieval over the corpus chunks (bm25s), analysed per language.

Chunks are indexed in their document's language and questions in theirs
(:mod:`streamcite.local.analysis`: stopwords, light words, stemmers, Hebrew prefixes,
synonyms, phrases). :class:`Retriever` scores chunks by BM25 (heading counted twice) and
tells, per chunk, which question terms its text, heading or document title covers.

:func:`tokenize` is the older language-neutral tokeniser (one stemmer shared by the Latin
languages, every stopword list at once), kept for callers that do not know the language.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

import bm25s
import numpy as np

from streamcite.local.analysis import (
    LIGHT_WEIGHT,
    QueryTerm,
    analyze_query,
    detect_language,
    index_terms,
)
from streamcite.local.corpus import Chunk, Corpus

__all__ = ["STOPWORDS", "Hit", "Query", "Retriever", "fold", "tokenize"]

_WORD = re.compile(r"\w+")
_HEBREW_PREFIXES = frozenset("והבלמשכ")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS: frozenset[str] = (
    _words(  # English
        "a an the and or but if of to in on at by for with from as is are was were be been being "
        "do does did have has had i you he she it we they me my your our their its this that these "
        "those there here what which who whom whose when where why how can could may might must "
        "shall should will would not no nor so than too very just about into over under up down out "
        "any all each every some such only own same other more most much many also per please tell "
        "know get got am us them him her his hers ours yours theirs let does don"
    )
    | _words(  # words that ask rather than say what is asked about
        "apply applies rule rules regarding concerning say says explain need want use used using"
        " happen happens take spend"
    )
    | _words(  # the same, in French, Italian and Hebrew (folded: no accents)
        "regle regles faut fonctionne passe faire utiliser concernant ai fourni fournis"
        " qual e chi si posso devo entro mio mia come cosa prevede"
        " האם צריך איזה איזו אילו הכללים כללים"
    )
    | _words(  # French
        "le la les l un une des du de d et ou mais donc or ni car a au aux en dans par pour sur "
        "avec sans sous chez ce cet cette ces c qui que quoi qu dont est sont etre etait ai as "
        "avons avez ont il elle ils elles on nous vous je tu me te se s y ne pas plus moins tres "
        "son sa ses leur leurs mon ma mes ton ta tes notre nos votre vos quel quelle quels quelles "
        "comment combien pourquoi quand peut peuvent puis"
    )
    | _words(  # Italian
        "il lo la i gli le un uno una di a da in con su per tra fra e ed o ma che chi cui non "
        "del dello della dei degli delle al allo alla ai agli alle dal dallo dalla dai dagli dalle "
        "nel nello nella nei negli nelle sul sullo sulla sui sugli sulle si ci mi ti vi ne sono "
        "sei siamo siete essere ha hanno ho hai come quanto quanti quante quale quali quando dove "
        "perche cosa questo questa questi queste quello quella posso puo possono sta"
    )
    | _words(  # Hebrew (without points; prefixed forms are reduced by the prefix rule)
        "של את על עם אל גם לא כן אם או כי זה זו זאת אלה הוא היא הם הן אני אתה אנחנו אתם "
        "מה מי איך כמה למה מתי איפה יש אין היה היו יהיה כל רק עוד"
    )
)


def fold(text: str) -> str:
    """Lower-case ``text`` and remove accents and Hebrew points (combining marks)."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _is_hebrew(word: str) -> bool:
    return "\u0590" <= word[0] <= "\u05ff"


@lru_cache(maxsize=65536)
def _stem_latin(word: str) -> str:
    """A light suffix stemmer shared by English, French and Italian.

    It only needs to make inflected forms of the same word meet (``days``/``day``,
    ``giorni``/``giorno``, ``remotely``/``remote``); it does not need to be linguistic.
    """
    if len(word) <= 4 or word.isdigit():
        return word
    if word.endswith("ies"):
        word = word[:-3] + "y"
    elif word.endswith("ing") and len(word) > 5:
        word = word[:-3]
        if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
            word = word[:-1]  # "planning" -> "plan"
        elif word.endswith("ll"):
            word = word[:-1]  # "travelling" -> "travel"
    elif word.endswith("ed") and len(word) > 5:
        word = word[:-2]  # "reported" -> "report", "required" -> "requir" (= "require")
    elif word.endswith("ly") and len(word) > 5:
        word = word[:-2]
    if len(word) > 4 and word.endswith(("s", "x")):
        word = word[:-1]
    if len(word) > 4 and word[-1] in "aeiouy":
        word = word[:-1]
    return word


def _hebrew_forms(word: str) -> list[str]:
    """The word and the word without up to two one-letter prefixes (ו, ה, ב, ל, מ, ש, כ)."""
    forms = [word]
    stem = word
    for _ in range(2):
        if len(stem) >= 4 and stem[0] in _HEBREW_PREFIXES:
            stem = stem[1:]
            forms.append(stem)
        else:
            break
    for form in list(forms):  # plural and final-letter variants meet: סיסמאות / סיסמה
        bare = form[:-2] if len(form) >= 5 and form.endswith(("ות", "ים")) else form
        bare = bare[:-1] if len(bare) >= 4 and bare[-1] in "הא" else bare
        if bare != form and bare not in forms:
            forms.append(bare)
    return forms


# Words people ask with, mapped to the word the documents use (after stemming).
_SYNONYMS: dict[str, str] = {
    "fly": "flight",
    "flie": "flight",
    "plane": "flight",
    "hotel": "accommodation",
    "pays": "pay",
    "sick": "sick",
    "ill": "sick",
    "laptop": "device",
    "lose": "lost",
    "dejeuner": "restaurant",
    "manger": "restaurant",
}


def tokenize(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Language-neutral index terms of ``text`` (folded, stemmed, stopwords removed; Hebrew
    prefix variants added). Retrieval itself uses :func:`~streamcite.local.analysis.index_terms`."""
    out: list[str] = []
    for word in _WORD.findall(fold(text)):
        if word.isdigit():
            out.append(word)
            continue
        if len(word) < 2 or (not keep_stopwords and word in STOPWORDS):
            continue
        if _is_hebrew(word):
            out.extend(f for f in _hebrew_forms(word) if f not in STOPWORDS)
        else:
            stemmed = _stem_latin(word.replace("_", ""))
            out.append(_SYNONYMS.get(stemmed, stemmed))
    return out


@dataclass(slots=True)
class Query:
    """A question analysed for retrieval: its language, terms and their weights."""

    text: str
    language: str
    terms: list[QueryTerm]
    weights: list[float]
    """IDF weight of each term (light words at :data:`LIGHT_WEIGHT` of it)."""

    @property
    def total(self) -> float:
        return sum(self.weights)

    def clauses(self) -> list[list[int]]:
        """Indices of the terms of each part of the question, in order."""
        out: dict[int, list[int]] = {}
        for i, term in enumerate(self.terms):
            out.setdefault(term.clause, []).append(i)
        return list(out.values())


@dataclass(slots=True)
class Hit:
    """A chunk retrieved for a query."""

    chunk: Chunk
    score: float
    """BM25 score (unbounded, larger is better)."""
    coverage: float
    """Share of the query's weight whose terms the section speaks about (0..1): in its text,
    its heading or its document's title."""
    covered: frozenset[int] = frozenset()
    """Indices of the query terms covered."""
    index: int = 0
    """Position of the chunk in the corpus."""
    in_heading: frozenset[int] = frozenset()
    """Indices of the query terms the heading itself covers."""
    named: frozenset[int] = frozenset()
    """Indices of the query terms the heading or the document title covers: what the
    section is about, as opposed to what it mentions."""


class Retriever:
    """BM25 (bm25s, Lucene variant) over the chunks of a corpus, analysed per language.

    Each chunk is indexed with its heading (twice: a heading says what the section is about),
    so a question naming a section finds it. A chunk *covers* a query term when its text, its
    heading or its document's title holds one of the term's alternatives; ``coverage``
    tells how much of the question a chunk speaks about, and the answerer refuses below
    a threshold rather than answer off topic.
    """

    __slots__ = (
        "_bm25",
        "_df",
        "_heading",
        "_n",
        "_text",
        "_title",
        "_unknown",
        "corpus",
        "languages",
    )

    def __init__(self, corpus: Corpus):
        self.corpus = corpus
        self.languages: dict[str, str] = {
            d.id: (d.language or detect_language(d.body[:2000])).lower()[:2]
            for d in corpus.documents
        }
        self._title = {
            d.id: frozenset(index_terms(d.title, self.languages[d.id])) for d in corpus.documents
        }
        token_lists: list[list[str]] = []
        self._heading: list[frozenset[str]] = []
        self._text: list[frozenset[str]] = []
        for chunk in corpus.chunks:
            lang = self.languages[chunk.document_id]
            heading = index_terms(chunk.heading or "", lang)
            text = index_terms(chunk.text, lang)
            self._heading.append(frozenset(heading))
            self._text.append(frozenset(text))
            token_lists.append(heading + heading + text)
        self._n = len(token_lists)
        self._df: Counter[str] = Counter()
        for i in range(self._n):
            self._df.update(self._heading[i] | self._text[i])
        self._unknown = math.log(1.0 + (self._n - 0.5) / 1.5)
        self._bm25 = bm25s.BM25(method="lucene")
        self._bm25.index(token_lists, show_progress=False)

    def language(self, chunk: Chunk) -> str:
        """The language of a chunk's document."""
        return self.languages.get(chunk.document_id, "")

    def idf(self, term: str) -> float:
        """Lucene BM25 IDF; a term the corpus never uses gets the highest weight."""
        df = self._df.get(term, 0)
        return math.log(1.0 + (self._n - df + 0.5) / (df + 0.5))

    def _term_weight(self, term: QueryTerm) -> float:
        # A word the corpus never uses weighs as much as its rarest word (Lucene's df=0
        # smoothing would make it weigh more than any word the corpus could match).
        weight = self._unknown
        for alt in term.alternatives:
            if alt and all(self._df.get(t, 0) for t in alt):
                weight = max(self.idf(t) for t in alt)
                break
        return weight * (LIGHT_WEIGHT if term.light else 1.0)

    def query(self, question: str, language: str | None = None) -> Query:
        """Analyse ``question`` (in ``language``, detected when not given)."""
        language = language or detect_language(question)
        terms = analyze_query(question, language)
        return Query(question, language, terms, [self._term_weight(t) for t in terms])

    def query_terms(self, question: str) -> list[str]:
        """The words of a question that retrieval weighs, in order."""
        return [t.word for t in self.query(question).terms]

    def search(self, query: Query | str, k: int = 16) -> list[Hit]:
        """The ``k`` best chunks for ``query`` with a positive score, best first."""
        if isinstance(query, str):
            query = self.query(query)
        if not query.terms or self._n == 0:
            return []
        vectors: dict[str, np.ndarray] = {}
        for term in query.terms:
            for alt in term.alternatives:
                for t in alt:
                    if t not in vectors and self._df.get(t, 0):
                        vectors[t] = np.asarray(self._bm25.get_scores([t]), dtype=np.float64)
        scores = np.zeros(self._n, dtype=np.float64)
        for term in query.terms:
            best = np.zeros(self._n, dtype=np.float64)
            for alt in term.alternatives:
                if alt and all(t in vectors for t in alt):
                    best = np.maximum(best, sum((vectors[t] for t in alt), np.zeros(self._n)))
            scores += best * (LIGHT_WEIGHT if term.light else 1.0)
        order = np.argsort(-scores, kind="stable")[:k]
        hits: list[Hit] = []
        for i in order:
            score = float(scores[i])
            if score <= 0.0:
                break
            chunk = self.corpus.chunks[int(i)]
            covered = self.covered(query, self.section_terms(int(i)))
            heading = self._heading[int(i)]
            in_heading = self.covered(query, heading)
            named = self.covered(query, heading | self._title[chunk.document_id])
            hits.append(
                Hit(chunk, score, self.share(query, covered), covered, int(i), in_heading, named)
            )
        return hits

    def section_terms(self, index: int) -> frozenset[str]:
        """The index terms that speak for chunk ``index``: heading, text, document title."""
        chunk = self.corpus.chunks[index]
        return self._heading[index] | self._text[index] | self._title[chunk.document_id]

    @staticmethod
    def covered(query: Query, present: frozenset[str] | set[str]) -> frozenset[int]:
        """Indices of the query terms that have an alternative all in ``present``."""
        return frozenset(
            i
            for i, term in enumerate(query.terms)
            if any(alt and alt <= present for alt in term.alternatives)
        )

    @staticmethod
    def share(query: Query, covered: frozenset[int], among: list[int] | None = None) -> float:
        """Share of the weight of the terms ``among`` (all by default) that ``covered`` holds."""
        indices = range(len(query.terms)) if among is None else among
        total = sum(query.weights[i] for i in indices)
        if total <= 0.0:
            return 0.0
        return sum(query.weights[i] for i in indices if i in covered) / total
