"""Parsing a ``CheckGroundingResponse``: claims, cited chunks, offsets in the raw answer.

Strict on types (a wrong type is :class:`MalformedResponse`), tolerant of proto3
JSON's omissions (zero values and empty lists are left out). Google reports claim
positions as UTF-8 byte offsets of the text that was SENT; each claim gets them
back as characters and UTF-16 units of the RAW answer the user saw.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from streamcite.core import _validate as v
from streamcite.core.errors import MalformedResponse
from streamcite.core.grounding import CitedChunk, GroundingClaim, GroundingFact, GroundingResult
from streamcite.core.offsets import OffsetMap

__all__ = ["TextOffsets", "parse_check_response"]

# The converter used to live here; it is one of OffsetMap's two strategies now.
TextOffsets = OffsetMap


def parse_check_response(
    body: Any,
    *,
    raw_answer: str,
    sent_answer: str | None = None,
    char_map: list[int] | None = None,
    facts: Sequence[GroundingFact] = (),
    warnings: Sequence[str] = (),
    provider: str = "google",
) -> GroundingResult:
    """A ``CheckGroundingResponse`` body → :class:`GroundingResult` (strict on types).

    Omissions are normal in proto3 JSON and tolerated: no ``claims``/``citedChunks``
    → empty; a claim without ``citationIndices`` has none; ``score`` only comes with
    claim-level scoring; ``supportScore`` may be absent. ``sent_answer``/``char_map``
    describe the text that was sent when markers were stripped (see :func:`strip_markers`).
    """
    d = v.obj(body, "$")
    out_warnings = list(warnings)
    chunks = _cited_chunks(d, facts, out_warnings)
    cited_facts: list[str] = []
    for i, item in enumerate(v.arr(d.get("citedFacts", []), "$.citedFacts")):
        path = f"$.citedFacts[{i}]"
        cited_facts.append(v.opt_str(v.obj(item, path), "chunkText", path) or "")
    sent_map = OffsetMap(raw_answer if sent_answer is None else sent_answer)
    raw_map = sent_map if sent_answer is None else OffsetMap(raw_answer)
    claims: list[GroundingClaim] = []
    cursor = 0
    for i, item in enumerate(v.arr(d.get("claims", []), "$.claims")):
        path = f"$.claims[{i}]"
        c = v.obj(item, path)
        claim = GroundingClaim(
            claim_text=v.opt_str(c, "claimText", path) or "",
            citation_indices=_citation_indices(c, path, len(chunks)),
            grounding_check_required=v.opt_bool(c, "groundingCheckRequired", path),
            score=v.opt_float(c, "score", path),
        )
        cursor = _claim_offsets(claim, c, path, sent_map, raw_map, char_map, cursor, out_warnings)
        claims.append(claim)
    return GroundingResult(
        provider=provider,
        support_score=v.opt_float(d, "supportScore", "$"),
        claims=claims,
        cited_chunks=chunks,
        cited_facts=cited_facts,
        warnings=out_warnings,
        facts=list(facts),
    )


def _cited_chunks(
    d: dict[str, Any], facts: Sequence[GroundingFact], warnings: list[str]
) -> list[CitedChunk]:
    """``citedChunks``; a numeric ``source`` indexes the facts that were sent."""
    chunks: list[CitedChunk] = []
    for i, item in enumerate(v.arr(d.get("citedChunks", []), "$.citedChunks")):
        path = f"$.citedChunks[{i}]"
        c = v.obj(item, path)
        source = v.opt_str(c, "source", path, coerce_num=True)
        # digits_int: "²" passes str.isdigit() and then int() raised ValueError.
        fact_index = None if source is None else v.digits_int(source)
        if fact_index is not None and facts and fact_index >= len(facts):
            warnings.append(f"{path}.source {source!r} names no fact that was sent")
            fact_index = None
        chunks.append(
            CitedChunk(
                chunk_text=v.opt_str(c, "chunkText", path) or "",
                source=source,
                fact_index=fact_index,
                index=v.opt_int(c, "index", path),
                source_metadata=v.str_map(c, "sourceMetadata", path),
                uri=v.opt_str(c, "uri", path),
                title=v.opt_str(c, "title", path),
                domain=v.opt_str(c, "domain", path),
            )
        )
    return chunks


def _citation_indices(c: dict[str, Any], path: str, n_chunks: int) -> list[int]:
    """A claim's ``citationIndices``: integers (or digit strings) naming cited chunks."""
    indices: list[int] = []
    for j, idx in enumerate(v.arr(c.get("citationIndices", []), f"{path}.citationIndices")):
        if isinstance(idx, str):
            idx = v.digits_int(idx)  # None (then refused below) for "①", "-1", "x"
        if isinstance(idx, bool) or not isinstance(idx, int):
            raise MalformedResponse(f"{path}.citationIndices[{j}]: expected an integer")
        if not 0 <= idx < n_chunks:
            raise MalformedResponse(
                f"{path}.citationIndices[{j}] = {idx}: only {n_chunks} cited chunk(s)"
            )
        indices.append(idx)
    return indices


def _claim_offsets(
    claim: GroundingClaim,
    d: dict[str, Any],
    path: str,
    sent_map: OffsetMap,
    raw_map: OffsetMap,
    char_map: list[int] | None,
    cursor: int,
    warnings: list[str],
) -> int:
    """Fill the claim's char/byte/UTF-16 offsets; returns the new search cursor (sent chars)."""
    has_start, has_end = "startPos" in d, "endPos" in d
    sent = sent_map.text
    if not has_start and not has_end:
        # proto3 JSON omits zero values, but a claim never ends at 0 unless empty:
        # both missing means the server did not position it. Find it in the text.
        at = sent.find(claim.claim_text, cursor) if claim.claim_text else -1
        if at < 0:
            if claim.claim_text:
                warnings.append(f"{path}: no startPos/endPos and claimText not found in the answer")
            return cursor
        s_char, e_char = at, at + len(claim.claim_text)
        claim.start_byte, claim.end_byte = (
            sent_map.char_to_byte(s_char),
            sent_map.char_to_byte(e_char),
        )
    else:
        sb = v.opt_int(d, "startPos", path) or 0
        eb = v.opt_int(d, "endPos", path) or 0
        if sb < 0 or eb < 0 or eb < sb:
            raise MalformedResponse(f"{path}: bad byte range startPos={sb} endPos={eb}")
        if eb > sent_map.byte_length:
            warnings.append(
                f"{path}: endPos {eb} is past the answer's {sent_map.byte_length} bytes; clamped"
            )
        claim.start_byte, claim.end_byte = sb, eb
        s_char, e_char = sent_map.byte_to_char(sb), sent_map.byte_to_char_end(eb)
    if char_map is not None:
        raw_s = char_map[s_char]
        raw_e = char_map[e_char - 1] + 1 if e_char > s_char else raw_s
    else:
        raw_s, raw_e = s_char, e_char
    claim.start, claim.end = raw_s, raw_e
    claim.start_utf16, claim.end_utf16 = raw_map.char_to_utf16(raw_s), raw_map.char_to_utf16(raw_e)
    return e_char
