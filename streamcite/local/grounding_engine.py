"""The offline grounding checker's engine (moved to :mod:`streamcite.local.grounding`).

This module keeps the old import path working.
"""

from streamcite.local.grounding import (
    DEFAULT_CONFIG,
    ClaimVerdict,
    EngineConfig,
    calibrate,
    evaluate,
)

__all__ = ["DEFAULT_CONFIG", "ClaimVerdict", "EngineConfig", "calibrate", "evaluate"]
