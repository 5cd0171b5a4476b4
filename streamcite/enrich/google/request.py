"""Building a ``groundingConfigs.check`` request, checked against Google's limits.

No I/O: the body to send, the answer text sent (footnote markers stripped unless
asked not to), its character map onto the raw answer, and the facts as prepared by
the one policy of :func:`streamcite.enrich.facts.prepare_facts` (cited facts first).
A request that would break a limit raises :class:`GroundingLimitError` here, before
any network traffic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from streamcite.core.markers import strip_markers
from streamcite.core.models import CitedAnswer
from streamcite.enrich import limits
from streamcite.enrich.facts import PreparedFacts, answer_footnotes, prepare_facts
from streamcite.enrich.google.errors import GroundingInputError, GroundingLimitError

__all__ = [
    "DEFAULT_ENDPOINT",
    "DEFAULT_GROUNDING_CONFIG",
    "CheckRequest",
    "build_check_request",
    "check_config_name",
    "citation_threshold",
    "user_labels",
]

DEFAULT_GROUNDING_CONFIG = "projects/P/locations/global/groundingConfigs/default_grounding_config"
DEFAULT_ENDPOINT = "https://discoveryengine.googleapis.com"
_CONFIG_RE = re.compile(r"^projects/[^/]+/locations/[^/]+/groundingConfigs/[^/]+$")


@dataclass(slots=True)
class CheckRequest:
    """A request ready to send, and what is needed to read its response."""

    body: dict[str, Any]
    sent: str
    """The answer text as sent (markers stripped, or the raw text)."""
    char_map: list[int] | None
    """Sent character → raw character; None when the raw text was sent."""
    prepared: PreparedFacts


def check_config_name(grounding_config: str) -> str:
    """``grounding_config`` if it names a config (``projects/P/locations/L/...``)."""
    if not _CONFIG_RE.match(grounding_config):
        raise ValueError(
            "grounding_config must look like projects/PROJECT/locations/global/"
            f"groundingConfigs/default_grounding_config, got {grounding_config!r}"
        )
    return grounding_config


def citation_threshold(value: float | str) -> float:
    """``citationThreshold`` as a float in [0, 1] (a numeric string is accepted)."""
    try:
        return limits.validate_citation_threshold(value)
    except limits.InvalidGroundingRequest as e:
        raise GroundingLimitError(e.message) from None


def user_labels(labels: Mapping[str, str] | None) -> dict[str, str] | None:
    """``userLabels`` checked against Google's rules (a copy), or None."""
    if labels is None:
        return None
    try:
        limits.validate_user_labels(labels)
    except limits.InvalidGroundingRequest as e:
        raise GroundingLimitError(e.message) from None
    return dict(labels)


def _answer_to_send(raw: str, strip: bool) -> tuple[str, list[int] | None]:
    if not strip:
        return raw, None
    sent, char_map = strip_markers(raw)
    return sent, (None if len(sent) == len(raw) else char_map)


def build_check_request(
    answer: CitedAnswer | str,
    facts: Iterable[Any],
    *,
    strip: bool,
    threshold: float | str,
    claim_level_scores: bool,
    labels: Mapping[str, str] | None,
) -> CheckRequest:
    """The validated request of checking ``answer`` against ``facts``.

    Checked in this order: the answer, its length, the facts, the threshold, the labels.
    """
    raw = answer.text if isinstance(answer, CitedAnswer) else answer
    if not isinstance(raw, str) or not raw.strip():
        raise GroundingInputError("the answer is empty: nothing to check")
    sent, char_map = _answer_to_send(raw, strip)
    tokens = limits.count_answer_tokens(sent)
    if tokens > limits.MAX_ANSWER_TOKENS:
        raise GroundingLimitError(
            f"the answer has {tokens} tokens (Google counts words and sentence-ending "
            f"periods); the limit is {limits.MAX_ANSWER_TOKENS}: check a shorter part"
        )
    prepared = prepare_facts(facts, answer_footnotes(answer))
    if not prepared.facts:
        raise GroundingInputError(
            "no facts to check the answer against (no citations / sources with text)",
            code="grounding_no_facts",
        )
    threshold_value = citation_threshold(threshold)
    labels_value = user_labels(labels)
    body: dict[str, Any] = {
        "answerCandidate": sent,
        "facts": [f.to_request() for f in prepared.facts],
        "groundingSpec": {
            "citationThreshold": threshold_value,
            "enableClaimLevelScore": claim_level_scores,
        },
    }
    if labels_value:
        body["userLabels"] = labels_value
    return CheckRequest(body, sent, char_map, prepared)
