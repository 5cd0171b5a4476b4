"""Retrieval evaluation of the embedded answerer over a question set (JSON Lines).

Each line: ``{"lang", "question", "document"}`` with the expected document title, or
``null`` when the corpus cannot answer. ``python -m streamcite.local.evaluation FILE``
prints the figures and the failures.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from streamcite.local.answerer import Answerer
from streamcite.local.corpus import load_corpus

__all__ = ["EvalReport", "evaluate"]


@dataclass(slots=True)
class EvalReport:
    answerable: int = 0
    answered_right: int = 0
    """Answered, and the first cited document is the expected one."""
    unanswerable: int = 0
    refused: int = 0
    off_document_sentences: int = 0
    """Answer sentences citing a document other than the expected one."""
    failures: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"answerable answered from the right document: {self.answered_right}/{self.answerable}"
            f" · unanswerable refused: {self.refused}/{self.unanswerable}"
            f" · sentences from another document: {self.off_document_sentences}"
        )


def evaluate(path: Path, answerer: Answerer | None = None) -> EvalReport:
    answerer = answerer or Answerer(load_corpus(None))
    report = EvalReport()
    for line in path.read_bytes().splitlines():
        if not line.strip():
            continue
        case = orjson.loads(line)
        answer = answerer.answer(case["question"])
        expected = case["document"]
        cited = [p.document.title for p in answer.passages]
        if expected is None:
            report.unanswerable += 1
            if answer.found:
                report.failures.append(f"answered {case['question']!r} from {cited}")
            else:
                report.refused += 1
            continue
        report.answerable += 1
        if answer.found and cited[0] == expected:
            report.answered_right += 1
        else:
            report.failures.append(f"{case['question']!r}: expected {expected!r}, got {cited}")
        by_number = {p.number: p.document.title for p in answer.passages}
        off = [s for s in answer.sentences if by_number.get(s.number) != expected]
        report.off_document_sentences += len(off) if answer.found else 0
    return report


if __name__ == "__main__":  # pragma: no cover - a developer's tool
    result = evaluate(Path(sys.argv[1]))
    print(result.summary())
    for failure in result.failures:
        print("  ", failure)
