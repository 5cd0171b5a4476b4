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

from streamcite.local.analysis import detect_language
from streamcite.local.corpus import Chunk, Corpus, Document
from streamcite.local.retrieval import Hit, Query, Retriever
from streamcite.local.selection import Candidate, choose_sections, choose_sentences

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

_SENTENCE_PUNCT = re.compile(r"[.!?…]+[\"'»”)\]]*$")
_PIECE = re.compile(r"\s*\S+")


def question_from_messages(messages: Any) -> str:
    """The text of the last user message (string content or a list of text parts).

    A part's ``text`` counts only when it is a string: ``str()`` of a hostile nested
    value recursed as deep as the JSON (a ``RecursionError``, answered 500)."""
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
                p["text"]
                for p in content
                if isinstance(p, dict)
                and p.get("type") in ("text", "input_text")
                and isinstance(p.get("text"), str)
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


class Answerer:
    """Builds extractive answers from a corpus.

    The answer quotes the sections that speak about the question, and only those (see
    :mod:`streamcite.local.selection`).

    ``min_coverage``: share of the question's weight a single section must cover before
    the backend answers at all (below it: "no source found"). Calibrated on the evaluation
    set (docs/corpus.md).
    """

    __slots__ = (
        "corpus",
        "max_per_passage",
        "max_sections",
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
        max_sections: int = 3,
        min_coverage: float = 0.55,
    ):
        self.corpus = corpus
        self.retriever = retriever or Retriever(corpus)
        self.max_sentences = max_sentences
        self.max_per_passage = max_per_passage
        self.max_sections = max_sections
        self.min_coverage = min_coverage

    def answer(self, question: str) -> Answer:
        """The extractive answer to ``question`` (the no-source answer when nothing fits)."""
        query = self.retriever.query(question)
        hits = self.retriever.search(query)
        if not hits:
            return self._no_answer(question, query.language)
        hits = self._language_group(hits, query.language)
        if max(h.coverage for h in hits) < self.min_coverage:
            return self._no_answer(question, query.language)
        sections = choose_sections(
            self.retriever, query, hits, self.min_coverage, self.max_sections
        )
        chosen = choose_sentences(
            self.retriever, query, sections, self.max_per_passage, self.max_sentences
        )
        if not chosen:
            return self._no_answer(question, query.language)
        return self._assemble(question, query, chosen)

    def best_coverage(self, question: str) -> float:
        """The coverage the refusal threshold is compared with (for calibration)."""
        query = self.retriever.query(question)
        hits = self.retriever.search(query)
        if not hits:
            return 0.0
        return max(h.coverage for h in self._language_group(hits, query.language))

    def _language_group(self, hits: list[Hit], language: str) -> list[Hit]:
        """The hits of one language: the question's when it answers, else the best.

        A French passage that shares a stem with an English question ("limite"/"limit")
        is not an answer to it; answering from one language keeps the answer readable.
        """
        groups: dict[str, list[Hit]] = {}
        for h in hits:
            groups.setdefault(self.retriever.language(h.chunk), []).append(h)
        own = groups.get(language)
        if own is not None and max(h.coverage for h in own) >= self.min_coverage:
            return own

        def rank(group: list[Hit]) -> tuple[float, float]:
            return (round(max(h.coverage for h in group), 2), group[0].score)

        return max(groups.values(), key=rank)

    def _assemble(self, question: str, query: Query, chosen: list[Candidate]) -> Answer:
        # The sentences of a passage are told in document order, next to each other;
        # passages follow the order in which the question asks about their terms
        # ("how many days ..., and which security rules ..." answers days first).
        groups: dict[str, list[Candidate]] = {}
        for c in chosen:
            groups.setdefault(c.hit.chunk.id, []).append(c)

        def asked_at(group: list[Candidate]) -> float:
            matched = group[0].hit.covered
            weights = [(query.weights[i], i) for i in matched]
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
        return Answer(question, _compose(sentences), sentences, passages, query.language)

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
