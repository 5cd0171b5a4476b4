"""The offline grounding checker and live claims: lexical evidence plus rules, no model weights.

A product feature, used by :class:`~streamcite.enrich.LocalGrounding` in any pipeline and by
the embedded backend's Google and Azure endpoints. Modules: :mod:`~.checker` (the checker,
``LocalGrounding``), :mod:`~.live_claims` and :mod:`~.sentence_stream` (claims checked while the
answer streams), :mod:`~.sentences` (sentence splitting), :mod:`~.google_check` (Google's
``:check`` JSON through the checker); the engine: :mod:`~.words` (word lists, stemmers,
language), :mod:`~.tokens` (tokens and content keys), :mod:`~.facts` and :mod:`~.claims` (what
is compared), :mod:`~.bm25` (candidate facts), :mod:`~.comparators` and :mod:`~.rules` (what
overlap cannot see), :mod:`~.scoring` (one claim against one fact), :mod:`~.engine` (a whole
answer) and :mod:`~.answer` (the answer's support score from its claims').

The names below are imported lazily: :mod:`~.sentences` uses :mod:`~.words`, and the engine
uses the sentence splitter.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streamcite.grounding.config import DEFAULT_CONFIG, EngineConfig
    from streamcite.grounding.engine import ClaimVerdict, evaluate
    from streamcite.grounding.scoring import calibrate

__all__ = ["DEFAULT_CONFIG", "ClaimVerdict", "EngineConfig", "calibrate", "evaluate"]

_HOME = {
    "DEFAULT_CONFIG": "config",
    "EngineConfig": "config",
    "ClaimVerdict": "engine",
    "evaluate": "engine",
    "calibrate": "scoring",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
