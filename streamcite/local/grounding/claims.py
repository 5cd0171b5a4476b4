"""A claim as the checker reads it: its content keys, weights, names and comparisons."""

from __future__ import annotations

import re

from streamcite.local.grounding.comparators import Comparison
from streamcite.local.grounding.config import EngineConfig
from streamcite.local.grounding.tokens import TextFeatures, word_ngrams

__all__ = ["Claim", "structured_claim"]


class Claim:
    __slots__ = (
        "comparisons",
        "done",
        "features",
        "grams",
        "keyset",
        "n_grams",
        "names",
        "total",
        "unique",
        "unknown_name",
        "weights",
    )

    def __init__(self, features: TextFeatures, cfg: EngineConfig) -> None:
        self.features = features
        self.names = {k for k in features.salient if k[0] != "#"}
        self.comparisons: list[Comparison] = []
        self.done: list[bytes] = []
        """The claim's raw tokens when it states something done (status check)."""
        self.unknown_name = False
        """A name of the claim is in no fact at all (set by :func:`evaluate`)."""
        self.unique = list(dict.fromkeys(features.stems))
        self.keyset = set(self.unique)
        self.weights = {
            k: (cfg.salient_weight if k in features.salient else 1.0) for k in self.unique
        }
        self.total = sum(self.weights.values())
        # Character 4-grams per word: a word matched as such contains all of its own,
        # so only the grams of unmatched words are searched in the window.
        self.grams = {k: word_ngrams(k) for k in self.unique} if cfg.ngram_weight else {}
        self.n_grams = sum(len(g) for g in self.grams.values())


_SECTION_NUMBER_RE = re.compile(r"^\s*\d+(?:\.\d+)*[.)]?\s+")
_TABLE_RULE_RE = re.compile(r"^[\s|:\-+]*$")


def structured_claim(text: str) -> bool:
    """A heading or table row is checked when it states a number ("| Meals | 25 € |",
    "Budget 2024"); a section number ("2. Remote work") and a table rule do not count."""
    if _TABLE_RULE_RE.match(text):
        return False
    return any(c.isdigit() for c in _SECTION_NUMBER_RE.sub("", text.lstrip("#| ")))
