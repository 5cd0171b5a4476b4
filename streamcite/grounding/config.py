"""The checker's tunable constants."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_CONFIG", "EngineConfig"]


@dataclass(slots=True, frozen=True)
class EngineConfig:
    """Tunable constants (the defaults were chosen on the dev splits of HaluEval, VitaminC and
    the conflict set; never on the held-out halves)."""

    candidates: int = 3
    """Facts scored closely per claim (after BM25): at most this many are cited."""
    candidates_at_scale: int = 2
    """``candidates`` when there are more than ``scale_facts`` facts (time budget)."""
    scale_facts: int = 50
    bm25_min_facts: int = 6
    """Below this many facts, every fact is scored closely."""
    salient_weight: float = 1.6
    """Weight of names and numbers relative to other content words."""
    ngram_weight: float = 0.25
    """Share of character 4-gram containment in the blended recall."""
    number_veto: float = 0.1
    negation_veto: float = 0.1
    name_veto: float = 0.2
    """Factor when a name (a word capitalised mid-sentence) of the claim is in no fact."""
    midpoint: float = 0.75
    """Recall at which the sigmoid is 0.5 (before the threshold calibration)."""
    steepness: float = 15.0
    anchors: int = 2
    """Best sentences of a fact from which windows are grown."""
    max_window: int = 2
    """Most adjacent fact sentences a claim may be aligned with."""
    window_discount: float = 0.8
    """Recall of a window of k sentences is multiplied by this to the power k-1."""
    question_weight: float = 0.2
    """Weight of the question's words in a "question: answer" claim."""
    synonym_weight: float = 0.75
    """Share of a claim word's weight that a synonym in the fact earns (0: synonyms and
    antonyms off; :mod:`~streamcite.grounding.lexicon`). Dev: 1.0 and 0.75 alike on
    the synonym claims, 0.75 better on HaluEval (BA 0.7495 -> 0.751) and VitaminC
    (0.766 -> 0.768)."""
    antonym_veto: float = 0.1
    """Factor when a claim word is missing from the window and one of its antonyms is
    there ("sold" against "bought")."""
    role_swap: bool = True
    """A role the fact gives the claim's name vetoes another role of the claim, also
    when no other name holds the claim's role (:func:`~.roles.conflicting_roles`)."""
    cut: float = 0.15
    """Raw score mapped to 0.6, Google's default ``citationThreshold`` (chosen on the dev
    splits of HaluEval, VitaminC and the conflict set; see :func:`calibrate`)."""


DEFAULT_CONFIG = EngineConfig()
