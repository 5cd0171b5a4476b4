"""The offline checker behind Google's ``groundingConfigs.check`` JSON: the request
validated to Google's documented limits, the response in Google's shape (what
``serve-local``'s ``:check`` endpoint answers). Sans network: the checker runs here."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from streamcite.core.grounding import GroundingFact, GroundingResult
from streamcite.enrich.limits import (
    InvalidGroundingRequest,
    validate_answer,
    validate_citation_threshold,
    validate_fact_text,
    validate_facts_count,
    validate_user_labels,
)
from streamcite.grounding.checker import check_facts, runs_off_loop

__all__ = ["InvalidGroundingRequest", "acheck_google_request", "check_google_request"]


_REQUEST_FIELDS = frozenset({"answerCandidate", "facts", "groundingSpec", "userLabels"})
_FACT_FIELDS = frozenset({"factText", "attributes"})
_SPEC_FIELDS = frozenset({"citationThreshold", "enableClaimLevelScore"})


def _parse_google_request(
    body: Any,
) -> tuple[str, list[GroundingFact], float, bool]:
    if not isinstance(body, Mapping):
        raise InvalidGroundingRequest("request body: expected a JSON object")
    unknown = set(body) - _REQUEST_FIELDS
    if unknown:
        raise InvalidGroundingRequest(
            f"Invalid JSON payload received. Unknown name {sorted(unknown)[0]!r}"
        )
    if "answerCandidate" not in body:
        raise InvalidGroundingRequest("answerCandidate is required")
    answer = body["answerCandidate"]
    validate_answer(answer)
    raw_facts = body.get("facts")
    if raw_facts is None:
        raw_facts = []
    if not isinstance(raw_facts, list):
        raise InvalidGroundingRequest("facts: expected an array")
    validate_facts_count(len(raw_facts))
    facts: list[GroundingFact] = []
    for i, raw in enumerate(raw_facts):
        path = f"facts[{i}]"
        if not isinstance(raw, Mapping):
            raise InvalidGroundingRequest(f"{path}: expected an object")
        unknown = set(raw) - _FACT_FIELDS
        if unknown:
            raise InvalidGroundingRequest(
                f"Invalid JSON payload received. Unknown name {sorted(unknown)[0]!r} at {path}"
            )
        text = raw.get("factText", "")
        validate_fact_text(text, f"{path}.factText")
        attrs = raw.get("attributes") or {}
        if not isinstance(attrs, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in attrs.items()
        ):
            raise InvalidGroundingRequest(f"{path}.attributes: expected a map of strings")
        facts.append(GroundingFact(text, dict(attrs)))
    spec = body.get("groundingSpec")
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        raise InvalidGroundingRequest("groundingSpec: expected an object")
    unknown = set(spec) - _SPEC_FIELDS
    if unknown:
        raise InvalidGroundingRequest(
            f"Invalid JSON payload received. Unknown name {sorted(unknown)[0]!r} at groundingSpec"
        )
    threshold = spec.get("citationThreshold")
    threshold = 0.6 if threshold is None else validate_citation_threshold(threshold)
    claim_scores = spec.get("enableClaimLevelScore", False)
    if claim_scores is None:
        claim_scores = False
    if not isinstance(claim_scores, bool):
        raise InvalidGroundingRequest("groundingSpec.enableClaimLevelScore: expected a boolean")
    validate_user_labels(body.get("userLabels"))
    return answer, facts, threshold, claim_scores


def _google_response(result: GroundingResult, claim_scores: bool) -> dict[str, Any]:
    # proto3 JSON: empty repeated fields are left out (Google omits citationIndices
    # of an unsupported claim, and citedChunks when nothing is cited). startPos is
    # kept even when 0 so clients need no default.
    out: dict[str, Any] = {}
    if result.cited_chunks:
        out["citedChunks"] = [
            {"chunkText": c.chunk_text, "source": c.source} for c in result.cited_chunks
        ]
        out["citedFacts"] = [{"chunkText": t} for t in result.cited_facts]
    claims: list[dict[str, Any]] = []
    for c in result.claims:
        item: dict[str, Any] = {
            "claimText": c.claim_text,
            "startPos": c.start_byte,
            "endPos": c.end_byte,
        }
        if c.citation_indices:
            item["citationIndices"] = list(c.citation_indices)
        item["groundingCheckRequired"] = bool(c.grounding_check_required)
        if claim_scores and c.grounding_check_required and c.score is not None:
            item["score"] = c.score
        claims.append(item)
    if claims:
        out["claims"] = claims
    out["supportScore"] = result.support_score
    return out


def check_google_request(body: dict[str, Any]) -> dict[str, Any]:
    """Answer a ``groundingConfigs.check`` request body with Google's response body.

    Raises :class:`InvalidGroundingRequest` (``code == "invalid_argument"``, HTTP 400)
    for a request outside the documented limits: more than 200 facts, a fact over
    10,000 characters, a threshold outside [0, 1], an answer over 4,096 tokens, bad
    ``userLabels``, unknown fields or wrong types.
    """
    answer, facts, threshold, claim_scores = _parse_google_request(body)
    result = check_facts(answer, facts, threshold, claim_scores, None)
    return _google_response(result, claim_scores)


async def acheck_google_request(body: dict[str, Any]) -> dict[str, Any]:
    """:func:`check_google_request` for async servers: large requests run in a thread."""
    answer, facts, threshold, claim_scores = _parse_google_request(body)
    if runs_off_loop(len(answer) + sum(len(f.text) for f in facts)):
        result = await asyncio.to_thread(check_facts, answer, facts, threshold, claim_scores, None)
    else:
        result = check_facts(answer, facts, threshold, claim_scores, None)
    return _google_response(result, claim_scores)
