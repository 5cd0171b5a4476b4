"""The offline grounding checker's engine (moved to :mod:`streamcite.local.grounding`).

This module keeps the old import path working.
"""

from streamcite.local.grounding.config import DEFAULT_CONFIG, EngineConfig
from streamcite.local.grounding.engine import ClaimVerdict, evaluate
from streamcite.local.grounding.scoring import calibrate

__all__ = ["DEFAULT_CONFIG", "ClaimVerdict", "EngineConfig", "calibrate", "evaluate"]
