"""The claim channel: one ``claim`` event per claim, whichever checker made it.

Its types live in :mod:`streamcite.core.claim_channel` (below the pipeline that feeds
claim sessions and the checkers that implement them); this is their public path.
"""

from __future__ import annotations

from streamcite.core.claim_channel import (
    ClaimChecker,
    ClaimJob,
    ClaimScore,
    ClaimSession,
    LiveClaims,
    claims_from_grounding,
)

__all__ = [
    "ClaimChecker",
    "ClaimJob",
    "ClaimScore",
    "ClaimSession",
    "LiveClaims",
    "claims_from_grounding",
]
