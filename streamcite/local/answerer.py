"""Extractive answers with footnotes and Magisterium-style citations.

The answer is made of the corpus sentences that best cover the question, each
followed by its footnote ``[n]`` (before the final full stop: ``... per week [1].``);
footnote ``n`` points at ``citations[n - 1]``, one citation per cited passage. When
the corpus does not speak about the question, the answer says so honestly and has
no citation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from streamcite.local.corpus import Chunk, Corpus, Document, sentence_spans
from streamcite.local.retrieval import Hit, Retriever, fold, tokenize

__all__ = [
    "NO_ANSWER",
    "Answer",
    "AnswerSentence",
    "Answerer",
    "CitedPassage",
    "detect_language",
    "question_from_messages",
    "token_pieces",
    "with_wrong_number",
]

NO_ANSWER: dict[str, str] = {
    "en": "I found no source in the documents that answers this question, so I cannot answer it.",
    "fr": "Je n'ai trouvé aucune source dans les documents qui réponde à cette question ; "
    "je ne peux donc pas y répondre.",
    "it": "Non ho trovato nei documenti alcuna fonte che risponda a questa domanda, "
    "quindi non posso rispondere.",
    "he": "לא מצאתי במסמכים מקור שעונה על השאלה הזו, ולכן אינני יכול לענות עליה.",
}

_LANGUAGE_HINTS: dict[str, frozenset[str]] = {
    "en": frozenset(
        [
            "the",
            "is",
            "are",
            "what",
            "how",
            "which",
            "who",
            "when",
            "where",
            "can",
            "do",
            "does",
            "my",
            "i",
            "of",
            "and",
            "to",
        ]
    ),
    "fr": frozenset(
        [
            "le",
            "les",
            "est",
            "sont",
            "quel",
            "quelle",
            "quels",
            "quelles",
            "comment",
            "combien",
            "je",
            "de",
            "et",
            "du",
            "des",
            "que",
            "pour",
            "une",
            "au",
            "aux",
            "est-ce",
            "ou",
        ]
    ),
    "it": frozenset(
        [
            "il",
            "lo",
            "gli",
            "sono",
            "qual",
            "quale",
            "quali",
            "come",
            "quanti",
            "quante",
            "quanto",
            "posso",
            "di",
            "e",
            "si",
            "del",
            "della",
            "per",
            "che",
            "non",
            "ho",
            "cosa",
            "dove",
        ]
    ),
}
_SENTENCE_PUNCT = re.compile(r"[.!?…]+[\"'»”)\]]*$")
_PIECE = re.compile(r"\s*\S+")


def detect_language(text: str) -> str:
    """``he`` for Hebrew script, else the language among en/fr/it with most hint words."""
    if any("\u0590" <= ch <= "\u05ff" for ch in text):
        return "he"
    words = re.findall(r"\w+", fold(text))
    best, best_hits = "en", 0
    for lang, hints in _LANGUAGE_HINTS.items():
        hits = sum(w in hints for w in words)
        if hits > best_hits:
            best, best_hits = lang, hits
    return best


def question_from_messages(messages: Any) -> str:
    """The text of the last user message (string content or a list of text parts)."""
    if not isinstance(messages, list):
        return ""
    for msg in reversed(messages):
        if not isinstance(msg, dict) or msg.get("role") != "user":
            continue
        content = msg.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return " ".join(
                str(p.get("text", ""))
                for p in content
                if isinstance(p, dict) and p.get("type") in ("text", "input_text")
            )
    return ""


def token_pieces(text: str) -> list[str]:
    """Word-sized stream pieces whose concatenation is ``text``.

    Each piece carries the whitespace before it (as LLM tokens do), and a footnote is
    cut after its ``[`` (``" [", "1]."``) so that clients meet markers split across
    deltas, as they do with real models.
    """
    pieces: list[str] = []
    for m in _PIECE.finditer(text):
        piece = m.group()
        bracket = piece.find("[")
        if bracket != -1 and bracket + 1 < len(piece):
            pieces.extend((piece[: bracket + 1], piece[bracket + 1 :]))
        else:
            pieces.append(piece)
    tail = len(text) - len(text.rstrip())
    if tail and pieces:
        pieces[-1] += text[len(text) - tail :]
    return pieces


@dataclass(slots=True)
class CitedPassage:
    """A passage the answer cites, with its footnote number."""

    number: int
    chunk: Chunk
    document: Document
    score: float
    """BM25 score of the passage for the question."""


@dataclass(slots=True)
class AnswerSentence:
    """One sentence of the answer, quoted from a passage."""

    text: str
    """The sentence as quoted (no footnote)."""
    number: int
    """Its footnote."""
    chunk_start: int
    """Character offset of the sentence in ``chunk.text``."""
    chunk_end: int
    answer_start: int = 0
    """Character offset of the sentence in the answer text."""
    answer_end: int = 0


@dataclass(slots=True)
class Answer:
    """An answer: its text with footnotes, the quoted sentences and the cited passages."""

    question: str
    text: str
    sentences: list[AnswerSentence] = field(default_factory=list)
    passages: list[CitedPassage] = field(default_factory=list)
    language: str = "en"

    @property
    def found(self) -> bool:
        """False for the "no source found" answer."""
        return bool(self.passages)

    def citations(self, root_url: str) -> list[dict[str, Any]]:
        """The ``citations`` array in the Magisterium schema (all eight fields)."""
        return [
            {
                "cited_text": p.chunk.text,
                "cited_text_heading": p.chunk.heading,
                "document_title": p.document.title,
                "document_index": p.number - 1,
                "document_author": p.document.author,
                "document_year": p.document.year,
                "document_reference": p.document.reference,
                "source_url": f"{root_url}/documents/{p.document.id}#chunk-{p.chunk.position}",
            }
            for p in self.passages
        ]


@dataclass(slots=True)
class _Candidate:
    hit: Hit
    start: int
    end: int
    terms: frozenset[str]
    coverage: float


class Answerer:
    """Builds extractive answers from a corpus.

    ``min_coverage``: share of the question's IDF weight the retrieved passages must
    cover before the backend answers at all (below it: "no source found").
    """

    __slots__ = (
        "_languages",
        "corpus",
        "max_per_passage",
        "max_sentences",
        "min_coverage",
        "retriever",
    )

    def __init__(
        self,
        corpus: Corpus,
        retriever: Retriever | None = None,
        *,
        max_sentences: int = 4,
        max_per_passage: int = 2,
        min_coverage: float = 0.5,
    ):
        self.corpus = corpus
        self.retriever = retriever or Retriever(corpus)
        self.max_sentences = max_sentences
        self.max_per_passage = max_per_passage
        self.min_coverage = min_coverage
        self._languages = {
            d.id: (d.language or detect_language(d.body[:2000])).lower()[:2]
            for d in corpus.documents
        }

    def answer(self, question: str) -> Answer:
        """The extractive answer to ``question`` (the no-source answer when nothing fits)."""
        language = detect_language(question)
        terms = self.retriever.query_terms(question)
        hits = self.retriever.search(question, k=8)
        if not hits:
            return self._no_answer(question, language)
        total = sum(self.retriever.idf(t) for t in terms)
        hits = self._language_group(hits, terms, total, language)
        best = hits[0].score
        hits = [h for h in hits if h.score >= 0.3 * best]
        if self._coverage(hits, terms, total) < self.min_coverage:
            return self._no_answer(question, language)

        candidates = self._candidates(hits, terms, total)
        chosen = self._select(candidates, terms, total, best)
        if not chosen:
            return self._no_answer(question, language)
        return self._assemble(question, language, chosen, terms)

    def _coverage(self, hits: list[Hit], terms: list[str], total: float) -> float:
        """Share of the question's IDF weight that the passages cover together."""
        wanted = set(terms)
        covered: set[str] = set()
        for h in hits:
            covered |= self.retriever.chunk_terms(h.chunk) & wanted
        return self.retriever.coverage(terms, covered, total)

    def _language_group(
        self, hits: list[Hit], terms: list[str], total: float, language: str
    ) -> list[Hit]:
        """The hits of the one language that covers the question best (its own on a tie).

        A French passage that shares a stem with an English question ("limite"/"limit")
        is not an answer to it; answering from one language keeps the answer readable.
        """
        groups: dict[str, list[Hit]] = {}
        for h in hits:
            groups.setdefault(self._languages.get(h.chunk.document_id, ""), []).append(h)
        if len(groups) == 1:
            return hits

        def rank(item: tuple[str, list[Hit]]) -> tuple[float, bool, float]:
            lang, group = item
            top = [h for h in group if h.score >= 0.3 * group[0].score]
            return (round(self._coverage(top, terms, total), 2), lang == language, group[0].score)

        return max(groups.items(), key=rank)[1]

    def _candidates(self, hits: list[Hit], terms: list[str], total: float) -> list[_Candidate]:
        wanted = set(terms)
        out: list[_Candidate] = []
        for hit in hits:
            for start, end in sentence_spans(hit.chunk.text):
                sentence = hit.chunk.text[start:end]
                if len(sentence.split()) < 3:
                    continue
                matched = frozenset(set(tokenize(sentence)) & wanted)
                if not matched:
                    continue
                cov = self.retriever.coverage(terms, matched, total)
                out.append(_Candidate(hit, start, end, matched, cov))
        return out

    def _select(
        self, candidates: list[_Candidate], terms: list[str], total: float, best: float
    ) -> list[_Candidate]:
        """Greedy choice: new question terms first, then strong sentences of strong passages."""
        chosen: list[_Candidate] = []
        covered: set[str] = set()
        per_chunk: dict[str, int] = {}
        if not candidates:
            return chosen
        # A sentence that shares one minor word with the question is not worth quoting.
        floor = max(0.4 * max(c.coverage for c in candidates), 0.12)
        pool = [c for c in candidates if c.coverage >= floor]
        while pool and len(chosen) < self.max_sentences:

            def value(c: _Candidate, covered: set[str] = covered) -> float:
                new = sum(self.retriever.idf(t) for t in c.terms - covered) / (total or 1.0)
                return new + 0.3 * c.coverage + 0.2 * (c.hit.score / best)

            pick = max(pool, key=value)
            pool.remove(pick)
            if per_chunk.get(pick.hit.chunk.id, 0) >= self.max_per_passage:
                continue
            adds = bool(pick.terms - covered)
            if chosen and not adds and pick.coverage < 0.6 * chosen[0].coverage:
                break
            if chosen and not adds and pick.hit.chunk.id not in per_chunk:
                # A sentence that teaches nothing new may extend a cited passage,
                # but is not worth a new footnote.
                continue
            chosen.append(pick)
            covered |= pick.terms
            per_chunk[pick.hit.chunk.id] = per_chunk.get(pick.hit.chunk.id, 0) + 1
        return chosen

    def _assemble(
        self, question: str, language: str, chosen: list[_Candidate], terms: list[str]
    ) -> Answer:
        # The sentences of a passage are told in document order, next to each other;
        # passages follow the order in which the question asks about their terms
        # ("how many days ..., and which security rules ..." answers days first).
        groups: dict[str, list[_Candidate]] = {}
        for c in chosen:
            groups.setdefault(c.hit.chunk.id, []).append(c)
        position = {t: i for i, t in enumerate(terms)}

        def asked_at(group: list[_Candidate]) -> float:
            matched = set().union(*(c.terms for c in group))
            weights = [(self.retriever.idf(t), position[t]) for t in matched]
            total = sum(w for w, _ in weights)
            return sum(w * p for w, p in weights) / total if total else 0.0

        ordered = sorted(groups.values(), key=asked_at)
        passages: list[CitedPassage] = []
        sentences: list[AnswerSentence] = []
        for number, group in enumerate(ordered, start=1):
            chunk = group[0].hit.chunk
            doc = self.corpus.document(chunk.document_id)
            assert doc is not None  # chunks always come from a corpus document
            passages.append(CitedPassage(number, chunk, doc, group[0].hit.score))
            for c in sorted(group, key=lambda c: c.start):
                sentences.append(
                    AnswerSentence(chunk.text[c.start : c.end], number, c.start, c.end)
                )
        return Answer(question, _compose(sentences), sentences, passages, language)

    @staticmethod
    def _no_answer(question: str, language: str) -> Answer:
        return Answer(question, NO_ANSWER.get(language, NO_ANSWER["en"]), language=language)


def _compose(sentences: list[AnswerSentence]) -> str:
    """The answer text (sentences with footnotes, space-separated); sets their offsets."""
    parts: list[str] = []
    length = 0
    for s in sentences:
        if parts:
            parts.append(" ")
            length += 1
        written = _with_footnote(s.text, s.number)
        s.answer_start, s.answer_end = length, length + len(written)
        parts.append(written)
        length += len(written)
    return "".join(parts)


_NUMBER_WORDS: dict[str, str] = {
    # en
    "two": "four", "three": "five", "four": "six", "five": "seven", "six": "eight",
    "seven": "nine", "eight": "ten", "ten": "twelve", "fourteen": "twenty",
    # fr
    "deux": "quatre", "trois": "cinq", "quatre": "six", "cinq": "sept", "dix": "douze",
    # it
    "due": "quattro", "tre": "cinque", "quattro": "sei", "cinque": "sette", "otto": "dieci",
    "dieci": "dodici",
}  # fmt: skip
_NUMBER = re.compile(r"\b(\d+|" + "|".join(_NUMBER_WORDS) + r")\b", re.IGNORECASE)


def with_wrong_number(answer: Answer) -> Answer:
    """A copy of ``answer`` where the last sentence holding a number says another number.

    Its footnote stays: a plausible, cited, unsupported claim — what the grounding
    check is for (fault ``hallucinate=1``). Unchanged when no sentence has a number.
    """
    for i in range(len(answer.sentences) - 1, -1, -1):
        s = answer.sentences[i]
        m = _NUMBER.search(s.text)
        if m is None:
            continue
        word = m.group(1)
        if word.isdigit():
            wrong = str(int(word) + 2)
        else:
            wrong = _NUMBER_WORDS[word.lower()]
            if word[0].isupper():
                wrong = wrong.capitalize()
        sentences = [
            AnswerSentence(x.text, x.number, x.chunk_start, x.chunk_end) for x in answer.sentences
        ]
        sentences[i].text = s.text[: m.start(1)] + wrong + s.text[m.end(1) :]
        return Answer(
            answer.question, _compose(sentences), sentences, list(answer.passages), answer.language
        )
    return answer


def _with_footnote(sentence: str, number: int) -> str:
    """``"... per week."`` → ``"... per week [1]."`` (appended when there is no final stop)."""
    m = _SENTENCE_PUNCT.search(sentence)
    if m is None:
        return f"{sentence} [{number}]"
    return f"{sentence[: m.start()]} [{number}]{sentence[m.start() :]}"
