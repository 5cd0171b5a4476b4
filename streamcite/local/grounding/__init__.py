"""The offline grounding checker's engine: lexical evidence plus rules, no model weights.

Modules: :mod:`~.words` (word lists, stemmers, language), :mod:`~.tokens` (tokens and
content keys), :mod:`~.facts` and :mod:`~.claims` (what is compared), :mod:`~.bm25`
(candidate facts), :mod:`~.comparators` and :mod:`~.rules` (what overlap cannot see),
:mod:`~.scoring` (one claim against one fact) and :mod:`~.engine` (a whole answer).
"""

from streamcite.local.grounding.config import DEFAULT_CONFIG, EngineConfig
from streamcite.local.grounding.engine import ClaimVerdict, evaluate
from streamcite.local.grounding.scoring import calibrate

__all__ = ["DEFAULT_CONFIG", "ClaimVerdict", "EngineConfig", "calibrate", "evaluate"]
