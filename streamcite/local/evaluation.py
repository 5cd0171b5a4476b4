"""Retrieval evaluation of the embedded answerer over a question set (JSON Lines).

Each line: ``{"lang", "question", "document", "sections"}``: the expected document
title (``null`` when the corpus cannot answer) and, optionally, the headings of the
sections an answer may quote (``null`` or absent: any section of the document).
``python -m streamcite.local.evaluation FILE...`` prints the figures and the failures.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from streamcite.local.answerer import Answer, Answerer
from streamcite.local.corpus import load_corpus

__all__ = ["EvalReport", "evaluate", "load_cases"]


@dataclass(slots=True)
class EvalReport:
    """Figures of one question set."""

    answerable: int = 0
    answered_right: int = 0
    """Answered, and the first cited document is the expected one."""
    unanswerable: int = 0
    refused: int = 0
    off_document_sentences: int = 0
    """Answer sentences citing a document other than the expected one."""
    off_section_sentences: int = 0
    """Answer sentences quoted from a section the question is not about (other documents
    included)."""
    failures: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"answerable answered from the right document: {self.answered_right}/{self.answerable}"
            f" · unanswerable refused: {self.refused}/{self.unanswerable}"
            f" · sentences from another document: {self.off_document_sentences}"
            f" · from an unrelated section: {self.off_section_sentences}"
        )


def load_cases(path: Path) -> list[dict[str, Any]]:
    """The questions of a JSON Lines file."""
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _check_sections(answerer: Answerer, cases: list[dict[str, Any]]) -> None:
    """Every expected heading exists in its document (a typo would count as a miss)."""
    headings: dict[str, set[str | None]] = {}
    for chunk in answerer.corpus.chunks:
        doc = answerer.corpus.document(chunk.document_id)
        assert doc is not None
        headings.setdefault(doc.title, set()).add(chunk.heading)
    for case in cases:
        for heading in case.get("sections") or ():
            if heading not in headings.get(case["document"], set()):
                raise ValueError(f"{case['question']!r}: no section {heading!r}")


def _score(report: EvalReport, case: dict[str, Any], answer: Answer) -> None:
    expected = case["document"]
    cited = [p.document.title for p in answer.passages]
    if not answer.found:
        report.failures.append(f"{case['question']!r}: expected {expected!r}, refused")
        return
    if cited[0] == expected:
        report.answered_right += 1
    else:
        report.failures.append(f"{case['question']!r}: expected {expected!r}, got {cited}")
    sections = case.get("sections")
    by_number = {p.number: p for p in answer.passages}
    for s in answer.sentences:
        passage = by_number[s.number]
        if passage.document.title != expected:
            report.off_document_sentences += 1
            report.off_section_sentences += 1
        elif sections is not None and passage.chunk.heading not in sections:
            report.off_section_sentences += 1
            report.failures.append(
                f"{case['question']!r}: sentence from section {passage.chunk.heading!r}"
            )


def evaluate(path: Path, answerer: Answerer | None = None) -> EvalReport:
    """Answer every question of ``path`` and count what went right."""
    answerer = answerer or Answerer(load_corpus(None))
    cases = load_cases(path)
    _check_sections(answerer, [c for c in cases if c["document"] is not None])
    report = EvalReport()
    for case in cases:
        answer = answerer.answer(case["question"])
        if case["document"] is None:
            report.unanswerable += 1
            if answer.found:
                cited = [p.document.title for p in answer.passages]
                report.failures.append(f"answered {case['question']!r} from {cited}")
            else:
                report.refused += 1
            continue
        report.answerable += 1
        _score(report, case, answer)
    return report


if __name__ == "__main__":  # pragma: no cover - a developer's tool
    for arg in sys.argv[1:]:
        result = evaluate(Path(arg))
        print(f"{arg}: {result.summary()}")
        for failure in result.failures:
            print("  ", failure)
