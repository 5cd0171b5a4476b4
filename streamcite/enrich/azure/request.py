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

from streamcite.core.errors import MalformedResponse
from streamcite.core.grounding import GroundingClaim, GroundingFact, GroundingResult
from streamcite.enrich.facts import fact_from

__all__ = [
    "API_VERSION",
    "DOMAINS",
    "MAX_QUERY_CHARS",
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


def _utf16_to_char(text: str, unit: int) -> int | None:
    """The character offset of UTF-16 offset ``unit`` in ``text`` (None if inside a pair)."""
    u = 0
    for i, ch in enumerate(text):
        if u == unit:
            return i
        u += 2 if ord(ch) > 0xFFFF else 1
        if u > unit:
            return None
    return len(text) if u == unit else None


def _utf16_len(text: str) -> int:
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def _locate(sent: str, detail: Mapping[str, Any], after: int) -> tuple[int, int] | None:
    """Character (start, end) of one ungrounded segment in ``sent``."""
    seg = detail.get("text")
    seg = seg if isinstance(seg, str) else None
    offset, length = detail.get("offset"), detail.get("length")
    candidates: list[tuple[int, int]] = []
    cp, cp_len = _int(offset, "codePoint"), _int(length, "codePoint")
    if cp is not None and cp_len is not None:
        candidates.append((cp, cp + cp_len))
    u16, u16_len = _int(offset, "utf16"), _int(length, "utf16")
    if u16 is not None and u16_len is not None:
        a, b = _utf16_to_char(sent, u16), _utf16_to_char(sent, u16 + u16_len)
        if a is not None and b is not None:
            candidates.append((a, b))
    b8, b8_len = _int(offset, "utf8"), _int(length, "utf8")
    if b8 is not None and b8_len is not None:
        raw = sent.encode("utf-8")
        try:
            a = len(raw[:b8].decode("utf-8"))
            candidates.append((a, a + len(raw[b8 : b8 + b8_len].decode("utf-8"))))
        except UnicodeDecodeError:
            pass
    for a, b in candidates:
        if 0 <= a <= b <= len(sent) and (seg is None or sent[a:b] == seg):
            return a, b
    if seg:
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
    for i, d in enumerate(details):
        if not isinstance(d, Mapping):
            warnings.append(f"ungroundedDetails[{i}] is not an object: ignored")
            continue
        where = _locate(sent, d, after)
        text = d.get("text") if isinstance(d.get("text"), str) else ""
        reason = d.get("reason") if isinstance(d.get("reason"), str) else None
        if where is None:
            warnings.append(
                f"ungroundedDetails[{i}]: its offsets and text match no part of the answer"
            )
            claims.append(GroundingClaim(claim_text=str(text), grounding_check_required=True))
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
