"""Azure AI Content Safety groundedness detection: the request, its limits, the response.

No I/O here (the client is :mod:`streamcite.enrich.azure.client`).

``POST {endpoint}/contentsafety/text:detectGroundedness?api-version=2024-09-15-preview``,
body ``{"domain": "Generic"|"Medical", "task": "QnA"|"Summarization", "qna": {"query"},
"text", "groundingSources": [...], "reasoning": false}``. Documented limits: ``text`` and
``qna.query`` at most 7,500 characters each, the grounding sources at most 55,000
characters in all. Here the text sent is the answer's first 7,500 characters (cut at a
sentence or word end: offsets stay those of the raw answer), the sources are kept in
order until 55,000 characters (the last one cut), the query is cut at 7,500; each
policy applied is a warning of the result.

Response: ``ungroundedDetected``, ``ungroundedPercentage`` (0–1), ``ungroundedDetails[]``:
``text``, ``offset`` and ``length`` each as ``{"utf8", "utf16", "codePoint"}`` (into the
text sent), ``reason`` (only with reasoning). A Python ``str`` is indexed by code
points, so ``codePoint`` gives the character offsets; the UTF-16 ones are kept for
browsers and checked against them, and the segment's ``text`` is the final check (a
segment no offset matches is looked up by its text, or reported in ``warnings``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from streamcite.core.bounds import clip_message
from streamcite.core.errors import MalformedResponse
from streamcite.core.grounding import GroundingClaim, GroundingFact, GroundingResult
from streamcite.enrich.facts import fact_from

__all__ = [
    "API_VERSION",
    "DOMAINS",
    "MAX_QUERY_CHARS",
    "MAX_REASON_CHARS",
    "MAX_SEGMENTS",
    "MAX_SOURCES_CHARS",
    "MAX_TEXT_CHARS",
    "TASKS",
    "DetectRequest",
    "build_detect_request",
    "parse_detect_response",
]

API_VERSION = "2024-09-15-preview"
"""The api-version of the groundedness detection docs (2024-09-15-preview)."""
MAX_TEXT_CHARS = 7_500
MAX_QUERY_CHARS = 7_500
MAX_SOURCES_CHARS = 55_000
MAX_SEGMENTS = 1_000
"""Ungrounded segments read from one response, at most (the rest counted in a warning):
a text of 7,500 characters has far fewer sentences."""
MAX_REASON_CHARS = 2_000
"""Characters kept of a segment's ``reason`` (and of an unmatched segment's ``text``:
``MAX_TEXT_CHARS``); longer ones are cut with ``…``."""
DOMAINS = ("Generic", "Medical")
TASKS = ("QnA", "Summarization")


@dataclass(slots=True)
class DetectRequest:
    body: dict[str, Any]
    sent: str
    """The text sent: a prefix of the raw answer."""
    facts: list[GroundingFact]
    """The grounding sources sent, as facts (origins kept)."""
    warnings: list[str] = field(default_factory=list)


def _cut(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, at a sentence or word end if near."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    for stop in (". ", "! ", "? ", "\n", " "):
        at = head.rfind(stop)
        if at >= limit * 0.8:
            return head[: at + 1].rstrip()
    return head


def build_detect_request(
    answer: str,
    facts: Iterable[Any],
    *,
    domain: str = "Generic",
    task: str = "QnA",
    query: str | None = None,
    reasoning: bool = False,
    llm_resource: Mapping[str, str] | None = None,
) -> DetectRequest:
    """The request body for ``answer`` (raw text) and ``facts`` (texts, Citations,
    QuotedSources, GroundingFacts), fitted to the documented limits. ``reasoning`` needs
    ``llm_resource`` (``{"resourceType": "AzureOpenAI", "azureOpenAIEndpoint",
    "azureOpenAIDeploymentName"}``: Azure explains with your own deployment)."""
    if reasoning and not llm_resource:
        raise ValueError("reasoning=True needs llm_resource (an Azure OpenAI deployment)")
    if domain not in DOMAINS:
        raise ValueError(f"domain must be one of {DOMAINS}, got {domain!r}")
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    warnings: list[str] = []
    sent = _cut(answer, MAX_TEXT_CHARS)
    if len(sent) < len(answer):
        warnings.append(
            f"answer of {len(answer):,} characters: its first {len(sent):,} were checked "
            f"(Azure's limit is {MAX_TEXT_CHARS:,})"
        )
    kept: list[GroundingFact] = []
    budget = MAX_SOURCES_CHARS
    dropped = 0
    for pos, item in enumerate(facts):
        fact = fact_from(item, pos)
        if fact is None:
            continue
        if budget <= 0:
            dropped += 1
            continue
        if len(fact.text) > budget:
            warnings.append(
                f"grounding sources over {MAX_SOURCES_CHARS:,} characters: source {len(kept)} cut"
            )
            fact = GroundingFact(
                fact.text[:budget], fact.attributes, fact.origin_kind, fact.origin_index
            )
        budget -= len(fact.text)
        kept.append(fact)
    if dropped:
        warnings.append(
            f"{dropped} grounding source(s) beyond {MAX_SOURCES_CHARS:,} characters dropped"
        )
    body: dict[str, Any] = {"domain": domain, "task": task}
    if task == "QnA":
        q = query or ""
        if len(q) > MAX_QUERY_CHARS:
            warnings.append(f"question cut to {MAX_QUERY_CHARS:,} characters")
            q = q[:MAX_QUERY_CHARS]
        body["qna"] = {"query": q}
    body["text"] = sent
    body["groundingSources"] = [f.text for f in kept]
    body["reasoning"] = reasoning
    if reasoning and llm_resource:
        body["llmResource"] = dict(llm_resource)
    return DetectRequest(body, sent, kept, warnings)


def _int(obj: Any, key: str) -> int | None:
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class _Units:
    """Character offsets of ``sent`` by UTF-16 and UTF-8 offset, built once per response
    (one pass over the 7,500 characters sent, not one per segment)."""

    __slots__ = ("_u8", "_u16", "size")

    def __init__(self, sent: str) -> None:
        self.size = len(sent)
        self._u16: dict[int, int] | None = None
        self._u8: dict[int, int] | None = None
        if sent.isascii():
            return  # every offset is the character's
        u16 = u8 = 0
        self._u16, self._u8 = {0: 0}, {0: 0}
        for i, ch in enumerate(sent, 1):
            o = ord(ch)
            u16 += 2 if o > 0xFFFF else 1
            u8 += 1 if o < 0x80 else 2 if o < 0x800 else 3 if o < 0x10000 else 4
            self._u16[u16] = self._u8[u8] = i

    def of_utf16(self, unit: int) -> int | None:
        """The character at UTF-16 offset ``unit`` (None inside a pair or past the end)."""
        if self._u16 is None:
            return unit if unit <= self.size else None
        return self._u16.get(unit)

    def of_utf8(self, byte: int) -> int | None:
        """The character at UTF-8 offset ``byte`` (None inside a character or past the end)."""
        if self._u8 is None:
            return byte if byte <= self.size else None
        return self._u8.get(byte)


def _utf16_len(text: str) -> int:
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def _locate(
    sent: str, units: _Units, detail: Mapping[str, Any], after: int
) -> tuple[int, int] | None:
    """Character (start, end) of one ungrounded segment in ``sent``."""
    seg = detail.get("text")
    seg = seg if isinstance(seg, str) else None
    offset, length = detail.get("offset"), detail.get("length")
    candidates: list[tuple[int, int]] = []
    cp, cp_len = _int(offset, "codePoint"), _int(length, "codePoint")
    if cp is not None and cp_len is not None:
        candidates.append((cp, cp + cp_len))
    for start, size, to_char in (
        (_int(offset, "utf16"), _int(length, "utf16"), units.of_utf16),
        (_int(offset, "utf8"), _int(length, "utf8"), units.of_utf8),
    ):
        if start is not None and size is not None:
            a, b = to_char(start), to_char(start + size)
            if a is not None and b is not None:
                candidates.append((a, b))
    for a, b in candidates:
        if 0 <= a <= b <= len(sent) and (seg is None or sent[a:b] == seg):
            return a, b
    if seg and len(seg) <= len(sent):
        at = sent.find(seg, after)
        if at < 0:
            at = sent.find(seg)
        if at >= 0:
            return at, at + len(seg)
    return None


def parse_detect_response(data: Any, req: DetectRequest) -> GroundingResult:
    """The result of a ``text:detectGroundedness`` response body (``provider="azure"``).

    ``support_score`` is ``1 - ungroundedPercentage``; each ungrounded segment is a
    claim that needed a check and cites nothing (``supported`` False), offsets into the
    raw answer (characters, UTF-8 bytes, UTF-16 units); ``reason`` is kept when sent.
    """
    if not isinstance(data, Mapping):
        raise MalformedResponse("groundedness detection: expected a JSON object")
    pct = data.get("ungroundedPercentage")
    if isinstance(pct, bool) or not isinstance(pct, int | float) or not 0 <= pct <= 1:
        raise MalformedResponse(
            "groundedness detection: ungroundedPercentage missing or not in [0, 1]"
        )
    details = data.get("ungroundedDetails")
    details = [] if details is None else details
    if not isinstance(details, list):
        raise MalformedResponse("groundedness detection: ungroundedDetails is not a list")
    sent = req.sent
    warnings = list(req.warnings)
    claims: list[GroundingClaim] = []
    after = 0
    if len(details) > MAX_SEGMENTS:
        warnings.append(
            f"{len(details) - MAX_SEGMENTS:,} ungrounded segment(s) beyond the first"
            f" {MAX_SEGMENTS:,} ignored"
        )
        details = details[:MAX_SEGMENTS]
    units = _Units(sent)
    for i, d in enumerate(details):
        if not isinstance(d, Mapping):
            warnings.append(f"ungroundedDetails[{i}] is not an object: ignored")
            continue
        where = _locate(sent, units, d, after)
        text = d.get("text") if isinstance(d.get("text"), str) else ""
        reason = d.get("reason") if isinstance(d.get("reason"), str) else None
        if reason is not None:
            reason = clip_message(reason, MAX_REASON_CHARS)
        if where is None:
            warnings.append(
                f"ungroundedDetails[{i}]: its offsets and text match no part of the answer"
            )
            claims.append(
                GroundingClaim(
                    claim_text=clip_message(str(text), MAX_TEXT_CHARS),
                    grounding_check_required=True,
                    reason=reason,
                )
            )
            continue
        a, b = where
        after = b
        claims.append(
            GroundingClaim(
                claim_text=sent[a:b],
                start=a,
                end=b,
                start_byte=len(sent[:a].encode("utf-8")),
                end_byte=len(sent[:b].encode("utf-8")),
                start_utf16=_utf16_len(sent[:a]),
                end_utf16=_utf16_len(sent[:b]),
                grounding_check_required=True,
                reason=reason,
            )
        )
    detected = data.get("ungroundedDetected")
    if detected is True and not claims:
        warnings.append("ungroundedDetected is true but no ungrounded segment was given")
    return GroundingResult(
        provider="azure",
        support_score=round(1.0 - float(pct), 4),
        claims=claims,
        warnings=warnings,
        facts=list(req.facts),
        # Azure checked the whole answer: no ungrounded segment means all of it grounded,
        # not "nothing to check" (which ``ask`` and the page show instead of the score).
        nothing_to_check=False,
    )
