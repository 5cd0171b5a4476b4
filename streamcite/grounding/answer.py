"""The answer's support score: how claims' scores add up to one score for the answer.

A claim's score (:mod:`~.scoring`) is calibrated on the single-claim sets (VitaminC, the
conflict set, the multilingual set); an answer of one claim scores exactly that.

An answer of several claims (a summary) is scored on its content as a whole:

- each claim contributes a blend of its raw score and its **coverage**: the share of
  its content keys, weighted by rarity, found in a single sentence of a candidate fact;
- rarity is read from a key's length (Zipf's law of abbreviation: frequent words are
  short): a missing "say" or "held" is paraphrase, a missing "commemorat" or
  "wizardri" is a detail the sources do not give; a key found in **no** fact weighs
  more again (``absent_weight``): the answer-wide novelty against all the facts, not
  only the claim's candidates;
- claims weigh by their number of content keys, so the score is the share of the
  answer's content that is supported, not the share of its sentences;
- a monotone piecewise-linear map sends the aggregate's cut to 0.6, so that Google's
  default ``citationThreshold`` is the answer-level cut too.

The blend, the weights and the cut were chosen on the dev half of HaluEval
summarization, the only multi-claim set (``docs/grounding.md``).
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "DEFAULT_ANSWER_CONFIG",
    "AnswerConfig",
    "answer_support",
    "calibrate_answer",
    "rarity",
    "rarity_weights",
]


@dataclass(slots=True, frozen=True)
class AnswerConfig:
    """Constants of the answer-level aggregate (chosen on the HaluEval dev half)."""

    coverage_weight: float = 0.8
    """Share of a claim's rarity-weighted coverage in its contribution (rest: raw score)."""
    min_rarity: float = 0.25
    """Weight of a key of 3 characters or fewer ("say", "set", "#5"; "held" weighs 1)."""
    rarity_offset: int = 3
    """A longer key weighs ``len(key) - rarity_offset``."""
    absent_weight: float = 8.0
    """Factor on the rarity of a key found in no fact at all: a word of the answer that
    no source uses anywhere is the mark of a detail the sources do not give."""
    cut: float = 0.325
    """Aggregate mapped to 0.6, Google's default ``citationThreshold``."""


DEFAULT_ANSWER_CONFIG = AnswerConfig()


def rarity(key: str, cfg: AnswerConfig = DEFAULT_ANSWER_CONFIG) -> float:
    """Rarity weight of a content key: its length beyond ``rarity_offset``, floored."""
    return max(cfg.min_rarity, float(len(key) - cfg.rarity_offset))


def rarity_weights(
    keys: Iterable[str],
    absent: Container[str] = frozenset(),
    cfg: AnswerConfig = DEFAULT_ANSWER_CONFIG,
) -> dict[str, float]:
    """Rarity weight of each key; ``absent`` keys (found in no fact) weigh
    ``cfg.absent_weight`` times more."""
    # rarity() inlined: called for every key of every claim of an answer.
    least, offset = cfg.min_rarity, cfg.rarity_offset
    out = {k: max(least, float(len(k) - offset)) for k in keys}
    for k in out:
        if k in absent:
            out[k] *= cfg.absent_weight
    return out


def calibrate_answer(aggregate: float, cfg: AnswerConfig = DEFAULT_ANSWER_CONFIG) -> float:
    """Monotone piecewise-linear map: ``cfg.cut`` -> 0.6, 0 -> 0, 1 -> 1."""
    if aggregate <= cfg.cut:
        return 0.6 * aggregate / cfg.cut
    return 0.6 + 0.4 * (aggregate - cfg.cut) / (1.0 - cfg.cut)


class _Verdict(Protocol):
    """What the aggregate reads of a claim's verdict (:class:`~.engine.ClaimVerdict`)."""

    required: bool
    score: float | None
    raw_score: float | None
    coverage: float
    weight: float


def answer_support(
    verdicts: Sequence[_Verdict], cfg: AnswerConfig = DEFAULT_ANSWER_CONFIG
) -> float | None:
    """The answer's support score in [0, 1]; None when no claim needed a check.

    One claim: its own (calibrated) score. Several: the key-weighted mean of each
    claim's blend of coverage and raw score, calibrated with :func:`calibrate_answer`.
    """
    checked = [v for v in verdicts if v.required]
    if not checked:
        return None
    if len(checked) == 1:
        return checked[0].score or 0.0
    a = cfg.coverage_weight
    num = den = 0.0
    for v in checked:
        w = max(v.weight, 1.0)
        num += w * (a * v.coverage + (1.0 - a) * (v.raw_score or 0.0))
        den += w
    return calibrate_answer(num / den, cfg)
