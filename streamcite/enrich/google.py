"""Google grounding check (Vertex AI Search / Discovery Engine ``groundingConfigs.check``).

``POST {endpoint}/v1/{groundingConfig}:check`` with ``Authorization: Bearer`` and,
optionally, ``X-Goog-User-Project``. The request is built from what the stream
produced (the answer, its citations, Wikit sources) and checked against Google's
limits before it is sent:

- at most 200 facts: facts the answer's ``[n]`` footnotes point at are kept first,
  the rest dropped, and a warning says so in ``GroundingResult.warnings``;
- ``factText`` at most 10,000 characters: long facts are split into overlapping
  windows that keep their attributes (Google's advice);
- the answer at most 4,096 tokens, ``citationThreshold`` in [0, 1], ``userLabels``
  rules: otherwise :class:`GroundingLimitError` before any network traffic.

The answer may be sent without its footnote markers (``strip_markers``, the default:
``[1]`` is noise to a grounding model); claim offsets always come back as positions
in the RAW answer the user saw: characters (``start``/``end``), UTF-16 units for
browsers, and the UTF-8 bytes as Google reported them (of the text that was sent).

The official client has no timeout or retry by default; this one has both: each
attempt is cut at ``request_timeout``, 429/500/502/503/504 are retried with jittered
backoff (``Retry-After`` or Google's ``RetryInfo`` honoured, capped) within
``deadline``; 400/401/403/404 raise at once with what to fix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import aiohttp
import orjson

from streamcite.core import _validate as v
from streamcite.core.errors import MalformedResponse, StreamciteError, UpstreamError
from streamcite.core.events import GroundingEvent, SourcesEvent
from streamcite.core.grounding import CitedChunk, GroundingClaim, GroundingFact, GroundingResult
from streamcite.core.markers import footnote_numbers, strip_markers
from streamcite.core.models import Citation, CitedAnswer
from streamcite.core.offsets import OffsetMap
from streamcite.core.sources import QuotedSource
from streamcite.enrich import limits
from streamcite.enrich._auth import (
    CLOUD_PLATFORM_SCOPE,
    ApplicationDefaultToken,
    TokenProvider,
    TokenSource,
    make_token_source,
)
from streamcite.enrich._http import (
    HttpResponse,
    RetryPolicy,
    SessionHolder,
    parse_retry_after,
    send,
    with_retries,
)
from streamcite.enrich.base import EnrichContext
from streamcite.enrich.facts import MAX_FACT_CHARS, MAX_FACTS, fact_from, split_fact
from streamcite.logs import get_logger

__all__ = [
    "DEFAULT_GROUNDING_CONFIG",
    "GoogleAuthError",
    "GoogleGrounding",
    "GoogleRequestError",
    "GroundingInputError",
    "GroundingLimitError",
    "PreparedFacts",
    "TextOffsets",
    "parse_check_response",
    "prepare_facts",
    "strip_markers",
]

DEFAULT_GROUNDING_CONFIG = "projects/P/locations/global/groundingConfigs/default_grounding_config"
DEFAULT_ENDPOINT = "https://discoveryengine.googleapis.com"
CHECK_PERMISSION = "discoveryengine.groundingConfigs.check"
_CONFIG_RE = re.compile(r"^projects/[^/]+/locations/[^/]+/groundingConfigs/[^/]+$")
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
# A footnote marker (the grammar of streamcite.core.markers) and the blanks before
# it, so "bella [1]." is sent as "bella.".

FactsFrom = Literal["citations", "sources", "both"]


class GroundingLimitError(limits.InvalidGroundingRequest, ValueError):
    """The request would break one of Google's documented limits (nothing was sent)."""

    code = "grounding_limit"


class GroundingInputError(StreamciteError, ValueError):
    """Nothing to check: empty answer, no facts, or the Wikit sources it needs failed."""

    code = "grounding_input"


class GoogleAuthError(UpstreamError):
    """401/403: credentials, quota project, API enablement, IAM permission or scopes."""

    code = "google_auth"

    def __init__(self, message: str, *, code: str, status: int, reason: str | None) -> None:
        super().__init__(message, code=code, status=status, retryable=False)
        self.reason = reason


class GoogleRequestError(UpstreamError):
    """400/404 and other non-retryable statuses: the request or the config name is wrong."""

    code = "google_request"

    def __init__(self, message: str, *, code: str, status: int, reason: str | None) -> None:
        super().__init__(message, code=code, status=status, retryable=False)
        self.reason = reason


# -- answer text: footnote markers out, offsets back ---------------------------


def _footnote_numbers(answer: CitedAnswer | str) -> set[int]:
    if isinstance(answer, CitedAnswer):
        numbers = {r.number for r in answer.citation_refs if r.index == 0}
        if numbers:
            return numbers
    text = answer.text if isinstance(answer, CitedAnswer) else answer
    return set(footnote_numbers(text))


# -- facts: build, split, cap --------------------------------------------------


@dataclass(slots=True)
class PreparedFacts:
    """The facts to send, and what had to be done to fit Google's limits."""

    facts: list[GroundingFact]
    warnings: list[str]
    split: int = 0
    """Facts longer than the limit that were split into windows."""
    dropped: int = 0
    """Facts (windows) left out to stay within ``MAX_FACTS``."""


def _is_cited(item: Any, fact: GroundingFact, numbers: set[int]) -> bool:
    if not numbers:
        return False
    if isinstance(item, Citation):
        return item.document_index is not None and item.document_index + 1 in numbers
    if isinstance(item, QuotedSource):
        return item.number in numbers
    # A prebuilt fact from a citation / source carries its label in its attributes.
    label = fact.attributes.get("quoted_as")
    if label is not None:
        return label.strip().isdigit() and int(label) in numbers
    index = fact.attributes.get("document_index")
    return index is not None and index.isdigit() and int(index) + 1 in numbers


def prepare_facts(
    items: Iterable[Any],
    cited_numbers: Iterable[int] = (),
    *,
    max_facts: int = MAX_FACTS,
    max_chars: int = MAX_FACT_CHARS,
) -> PreparedFacts:
    """Facts from strings, GroundingFacts, Citations or QuotedSources, fitted to the limits.

    Each item's list position becomes ``origin_index`` (unless a GroundingFact already
    has one). Long facts are split into windows of at most ``max_chars`` characters.
    Past ``max_facts``, the facts whose footnote the answer writes (``cited_numbers``)
    are kept first, then the others in order; kept facts keep their original order.
    """
    numbers = set(cited_numbers)
    windows: list[tuple[GroundingFact, bool]] = []
    split = 0
    for pos, item in enumerate(items):
        fact = fact_from(item, pos)
        if fact is None:
            continue
        parts = split_fact(fact, max_chars)
        if len(parts) > 1:
            split += 1
        cited = _is_cited(item, fact, numbers)
        windows.extend((p, cited) for p in parts)
    warnings: list[str] = []
    if split:
        warnings.append(
            f"{split} fact(s) longer than {max_chars} characters were split into "
            "overlapping windows that keep their attributes"
        )
    dropped = 0
    if len(windows) > max_facts:
        order = sorted(range(len(windows)), key=lambda i: (not windows[i][1], i))
        keep = sorted(order[:max_facts])
        dropped = len(windows) - max_facts
        kept_cited = sum(1 for i in keep if windows[i][1])
        warnings.append(
            f"{len(windows)} facts exceed Google's limit of {max_facts}: kept the "
            f"{kept_cited} cited by the answer's footnotes first, dropped {dropped} others"
        )
        windows = [windows[i] for i in keep]
    return PreparedFacts([f for f, _ in windows], warnings, split, dropped)


# -- response parsing ------------------------------------------------------------


# The converter used to live here; it is one of OffsetMap's two strategies now.
TextOffsets = OffsetMap


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
    chunks: list[CitedChunk] = []
    for i, item in enumerate(v.arr(d.get("citedChunks", []), "$.citedChunks")):
        path = f"$.citedChunks[{i}]"
        c = v.obj(item, path)
        source = v.opt_str(c, "source", path, coerce_num=True)
        fact_index: int | None = None
        if source is not None and source.strip().isdigit():
            fact_index = int(source)
            if facts and fact_index >= len(facts):
                out_warnings.append(f"{path}.source {source!r} names no fact that was sent")
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
    cited_facts: list[str] = []
    for i, item in enumerate(v.arr(d.get("citedFacts", []), "$.citedFacts")):
        path = f"$.citedFacts[{i}]"
        cited_facts.append(v.opt_str(v.obj(item, path), "chunkText", path) or "")

    sent = raw_answer if sent_answer is None else sent_answer
    sent_map = OffsetMap(sent)
    raw_map = sent_map if sent_answer is None else OffsetMap(raw_answer)
    claims: list[GroundingClaim] = []
    cursor = 0
    for i, item in enumerate(v.arr(d.get("claims", []), "$.claims")):
        path = f"$.claims[{i}]"
        c = v.obj(item, path)
        indices: list[int] = []
        for j, idx in enumerate(v.arr(c.get("citationIndices", []), f"{path}.citationIndices")):
            if isinstance(idx, str) and idx.isdigit():
                idx = int(idx)
            if isinstance(idx, bool) or not isinstance(idx, int):
                raise MalformedResponse(f"{path}.citationIndices[{j}]: expected an integer")
            if not 0 <= idx < len(chunks):
                raise MalformedResponse(
                    f"{path}.citationIndices[{j}] = {idx}: only {len(chunks)} cited chunk(s)"
                )
            indices.append(idx)
        claim = GroundingClaim(
            claim_text=v.opt_str(c, "claimText", path) or "",
            citation_indices=indices,
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


# -- errors ---------------------------------------------------------------------


def _google_error(body: bytes) -> tuple[str, str | None, str | None, dict[str, Any]]:
    """(message, status, reason, metadata) of a ``google.rpc.Status`` error body."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body[:300].decode("utf-8", "replace").strip(), None, None, {}
    err = data.get("error") if isinstance(data, dict) else None
    if not isinstance(err, dict):
        return "", None, None, {}
    message = err.get("message") if isinstance(err.get("message"), str) else ""
    status = err.get("status") if isinstance(err.get("status"), str) else None
    reason: str | None = None
    metadata: dict[str, Any] = {}
    details = err.get("details")
    for det in details if isinstance(details, list) else ():
        if not isinstance(det, dict):
            continue
        if str(det.get("@type", "")).endswith("google.rpc.ErrorInfo"):
            reason = det.get("reason") if isinstance(det.get("reason"), str) else reason
            if isinstance(det.get("metadata"), dict):
                metadata = det["metadata"]
        if str(det.get("@type", "")).endswith("google.rpc.RetryInfo"):
            delay = det.get("retryDelay")
            if isinstance(delay, str) and delay.endswith("s"):
                metadata.setdefault("retryDelay", delay[:-1])
    return str(message), status, reason, metadata


def _project_of(config: str) -> str:
    return config.split("/")[1]


class GoogleGrounding:
    """Client of Google's grounding check; also an enricher (``kind = "grounding"``).

    Credentials: ``token`` (static), ``token_provider`` (sync or async callable, or a
    TokenSource), else Application Default Credentials (``pip install
    'streamcite[google]'``). ``quota_project`` is sent as ``X-Goog-User-Project``
    (default: the ADC credentials' quota project, if any).

    As an enricher, the facts are ``facts`` when given, else built from
    ``facts_from``: the answer's citations, the Wikit sources (then it waits for the
    ``sources`` enricher), or both. Use ``async with`` to keep one connection pool.
    """

    kind = "grounding"

    def __init__(
        self,
        grounding_config: str = DEFAULT_GROUNDING_CONFIG,
        token: str | None = None,
        token_provider: TokenProvider | TokenSource | None = None,
        quota_project: str | None = None,
        endpoint: str = DEFAULT_ENDPOINT,
        *,
        request_timeout: float = 10.0,
        retries: int = 3,
        deadline: float = 20.0,
        timeout: float | None = None,
        facts: Sequence[Any] | None = None,
        facts_from: FactsFrom = "citations",
        strip_markers: bool = True,
        citation_threshold: float | str = 0.6,
        claim_level_scores: bool = False,
        user_labels: Mapping[str, str] | None = None,
        session: aiohttp.ClientSession | None = None,
        credentials: Any = None,
        scopes: Sequence[str] = (CLOUD_PLATFORM_SCOPE,),
    ) -> None:
        """``request_timeout``: one attempt; ``retries``: retries after the first attempt
        (429/5xx, timeouts, connection failures); ``deadline``: everything, retries
        included; ``timeout``: the enricher budget the pipeline enforces (default
        ``deadline + 1``). Limits are checked here too, so a bad setting fails early.
        """
        if not _CONFIG_RE.match(grounding_config):
            raise ValueError(
                "grounding_config must look like projects/PROJECT/locations/global/"
                f"groundingConfigs/default_grounding_config, got {grounding_config!r}"
            )
        if facts_from not in ("citations", "sources", "both"):
            raise ValueError("facts_from must be 'citations', 'sources' or 'both'")
        if retries < 0:
            raise ValueError("retries must be >= 0")
        self.grounding_config = grounding_config
        self.endpoint = endpoint.rstrip("/")
        self.quota_project = quota_project
        self._tokens = make_token_source(
            token, token_provider, scopes=scopes, credentials=credentials
        )
        self.retry = RetryPolicy(
            deadline=deadline,
            request_timeout=request_timeout,
            max_attempts=retries + 1,
            backoff_base=0.2,
            backoff_max=4.0,
            retry_after_cap=10.0,
        )
        self.timeout = float(timeout) if timeout is not None else deadline + 1.0
        self.facts = list(facts) if facts is not None else None
        self.facts_from: FactsFrom = facts_from
        self.strip_markers = strip_markers
        self.citation_threshold = _threshold(citation_threshold)
        self.claim_level_scores = claim_level_scores
        self.user_labels = _labels(user_labels)
        self.needs: tuple[str, ...] = (
            ("sources",) if facts is None and facts_from in ("sources", "both") else ()
        )
        self._sessions = SessionHolder(session)
        self._log = get_logger("streamcite.enrich.google").bind(grounding_config=grounding_config)

    def __repr__(self) -> str:
        return (
            f"GoogleGrounding(grounding_config={self.grounding_config!r}, "
            f"endpoint={self.endpoint!r}, tokens={self._tokens!r})"
        )

    async def __aenter__(self) -> GoogleGrounding:
        await self._sessions.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool this client opened (never the caller's session)."""
        await self._sessions.aclose()

    @property
    def url(self) -> str:
        return f"{self.endpoint}/v1/{self.grounding_config}:check"

    # -- the check ----------------------------------------------------------

    def build_request(
        self,
        answer: CitedAnswer | str,
        facts: Iterable[Any],
        *,
        citation_threshold: float | str | None = None,
        claim_level_scores: bool | None = None,
        user_labels: Mapping[str, str] | None = None,
    ) -> tuple[dict[str, Any], str, list[int] | None, PreparedFacts]:
        """The request body (validated against the limits), the text sent, its char map
        onto the raw answer (None when sent raw) and the prepared facts. No I/O."""
        raw = answer.text if isinstance(answer, CitedAnswer) else answer
        if not isinstance(raw, str) or not raw.strip():
            raise GroundingInputError("the answer is empty: nothing to check")
        if self.strip_markers:
            sent, char_map = strip_markers(raw)
            if len(sent) == len(raw):
                char_map_or_none: list[int] | None = None
            else:
                char_map_or_none = char_map
        else:
            sent, char_map_or_none = raw, None
        tokens = limits.count_answer_tokens(sent)
        if tokens > limits.MAX_ANSWER_TOKENS:
            raise GroundingLimitError(
                f"the answer has {tokens} tokens (Google counts words and sentence-ending "
                f"periods); the limit is {limits.MAX_ANSWER_TOKENS}: check a shorter part"
            )
        prepared = prepare_facts(facts, _footnote_numbers(answer))
        if not prepared.facts:
            raise GroundingInputError(
                "no facts to check the answer against (no citations / sources with text)",
                code="grounding_no_facts",
            )
        threshold = (
            self.citation_threshold
            if citation_threshold is None
            else _threshold(citation_threshold)
        )
        labels = self.user_labels if user_labels is None else _labels(user_labels)
        body: dict[str, Any] = {
            "answerCandidate": sent,
            "facts": [f.to_request() for f in prepared.facts],
            "groundingSpec": {
                "citationThreshold": threshold,
                "enableClaimLevelScore": (
                    self.claim_level_scores if claim_level_scores is None else claim_level_scores
                ),
            },
        }
        if labels:
            body["userLabels"] = labels
        return body, sent, char_map_or_none, prepared

    async def check(
        self,
        answer: CitedAnswer | str,
        facts: Iterable[Any],
        *,
        citation_threshold: float | str | None = None,
        claim_level_scores: bool | None = None,
        user_labels: Mapping[str, str] | None = None,
    ) -> GroundingResult:
        """Check ``answer`` against ``facts`` (strings, GroundingFacts, Citations, QuotedSources).

        ``None`` options take the client's settings (threshold 0.6, no claim-level
        scores, no labels by default). Claim offsets refer to the raw answer text.
        """
        body, sent, char_map, prepared = self.build_request(
            answer,
            facts,
            citation_threshold=citation_threshold,
            claim_level_scores=claim_level_scores,
            user_labels=user_labels,
        )
        payload = orjson.dumps(body)
        log = self._log.bind(facts=len(prepared.facts), answer_chars=len(sent))
        raw = answer.text if isinstance(answer, CitedAnswer) else answer

        async def attempt(_budget: float) -> Any:
            headers = await self._headers()
            async with self._sessions.session() as session:
                resp = await send(session, "POST", self.url, headers=headers, body=payload)
            self._raise_for_status(resp)
            try:
                return orjson.loads(resp.body)
            except orjson.JSONDecodeError as e:
                raise MalformedResponse(f"grounding check: body is not JSON ({e})") from e

        try:
            data = await with_retries(attempt, self.retry, what="Google grounding check", log=log)
        except GoogleAuthError as e:
            # An expired ADC token is renewed once; a static token cannot be.
            if e.status != 401 or not isinstance(self._tokens, ApplicationDefaultToken):
                raise
            log.info("token rejected, refreshing once")
            self._tokens.invalidate()
            data = await with_retries(attempt, self.retry, what="Google grounding check", log=log)
        result = parse_check_response(
            data,
            raw_answer=raw,
            sent_answer=sent if char_map is not None else None,
            char_map=char_map,
            facts=prepared.facts,
            warnings=prepared.warnings,
        )
        log.debug("grounding checked", claims=len(result.claims), support=result.support_score)
        return result

    async def _headers(self) -> dict[str, str]:
        token = await self._tokens.token()
        headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "accept": "application/json",
        }
        quota = self.quota_project or self._tokens.quota_project
        if quota:
            headers["X-Goog-User-Project"] = quota
        return headers

    # -- enricher -----------------------------------------------------------

    async def facts_for(self, ctx: EnrichContext) -> tuple[list[Any], list[str]]:
        """The facts for this answer, per ``facts`` / ``facts_from``, and any warnings."""
        if self.facts is not None:
            return list(self.facts), []
        items: list[Any] = []
        warnings: list[str] = []
        if self.facts_from in ("citations", "both"):
            # Prebuilt so citation and source facts keep origins into their own lists.
            items.extend(
                f for i, c in enumerate(ctx.answer.citations) if (f := fact_from(c, i)) is not None
            )
        if self.facts_from in ("sources", "both"):
            event = await ctx.result_of("sources")
            if isinstance(event, SourcesEvent):
                items.extend(
                    f for i, s in enumerate(event.sources) if (f := fact_from(s, i)) is not None
                )
            elif self.facts_from == "sources":
                raise GroundingInputError(
                    "the grounding facts come from the Wikit sources, which are not "
                    "available (the sources enricher failed or is not configured)",
                    code="grounding_no_sources",
                )
            else:
                warnings.append("Wikit sources unavailable: checked against the citations only")
        return items, warnings

    async def enrich(self, ctx: EnrichContext) -> GroundingEvent:
        """Check the answer that just streamed; returns a ``grounding`` event."""
        items, warnings = await self.facts_for(ctx)
        result = await self.check(ctx.answer, items)
        result.warnings[:0] = warnings
        return GroundingEvent.from_result(result)

    # -- errors -------------------------------------------------------------

    def _raise_for_status(self, resp: HttpResponse) -> None:
        status = resp.status
        if 200 <= status < 300:
            return
        message, rpc_status, reason, meta = _google_error(resp.body)
        said = f": {message}" if message else ""
        if status in _RETRY_STATUSES:
            retry_after = parse_retry_after(resp.header("Retry-After"))
            if retry_after is None and "retryDelay" in meta:
                # google.rpc.RetryInfo's retryDelay is a JSON Duration: "2s", "1.500s".
                retry_after = parse_retry_after(str(meta["retryDelay"]).removesuffix("s"))
            raise UpstreamError(
                f"Google grounding check: HTTP {status}{said}",
                code="google_rate_limited" if status == 429 else "google_unavailable",
                status=status,
                retryable=True,
                retry_after=retry_after,
            )
        project = _project_of(self.grounding_config)
        low = message.lower()
        if status == 401:
            raise GoogleAuthError(
                f"Google grounding check: HTTP 401 (unauthenticated){said}. The access token "
                "is invalid or expired: pass a fresh token=, a token_provider=, or use "
                "Application Default Credentials (gcloud auth application-default login)",
                code="google_unauthenticated",
                status=401,
                reason=reason,
            )
        if status == 403:
            consumer = str(meta.get("consumer", f"projects/{project}"))
            if reason == "SERVICE_DISABLED" or "has not been used" in low or "is disabled" in low:
                code = "google_api_disabled"
                fix = (
                    "enable the Discovery Engine API: gcloud services enable "
                    f"discoveryengine.googleapis.com --project {consumer.split('/')[-1]}"
                )
            elif "quota project" in low or reason in (
                "USER_PROJECT_DENIED",
                "USER_PROJECT_INVALID",
            ):
                code = "google_quota_project"
                fix = (
                    "set a quota project: quota_project='PROJECT_ID' (sent as "
                    "X-Goog-User-Project) or gcloud auth application-default "
                    "set-quota-project PROJECT_ID; the caller needs serviceusage.services.use on it"
                )
            elif reason == "ACCESS_TOKEN_SCOPE_INSUFFICIENT" or "scope" in low:
                code = "google_scope"
                fix = (
                    "the token lacks an OAuth scope this API needs: request "
                    "https://www.googleapis.com/auth/cloud-platform (or "
                    "https://www.googleapis.com/auth/discoveryengine.readwrite)"
                )
            else:
                code = "google_permission_denied"
                fix = (
                    f"grant the IAM permission {CHECK_PERMISSION} on {self.grounding_config} "
                    "to the caller (e.g. role roles/discoveryengine.user)"
                )
            raise GoogleAuthError(
                f"Google grounding check: HTTP 403{said}. Fix: {fix}",
                code=code,
                status=403,
                reason=reason,
            )
        if status == 400:
            raise GoogleRequestError(
                f"Google grounding check: HTTP 400 ({rpc_status or 'INVALID_ARGUMENT'}){said}. "
                "Check the request against the limits (≤200 facts, factText ≤10,000 "
                "characters, answer ≤4,096 tokens, citationThreshold in [0,1], userLabels "
                "rules) and the grounding config name",
                code="google_invalid_argument",
                status=400,
                reason=reason,
            )
        if status == 404:
            raise GoogleRequestError(
                f"Google grounding check: HTTP 404{said}. No grounding config "
                f"{self.grounding_config!r}: check the project id/number, the location "
                "(global) and the config name (default_grounding_config)",
                code="google_not_found",
                status=404,
                reason=reason,
            )
        raise GoogleRequestError(
            f"Google grounding check: unexpected HTTP {status}{said}",
            code="google_http_error",
            status=status,
            reason=reason,
        )


def _threshold(value: float | str) -> float:
    """``citationThreshold`` as a float in [0, 1] (a numeric string is accepted)."""
    try:
        return limits.validate_citation_threshold(value)
    except limits.InvalidGroundingRequest as e:
        raise GroundingLimitError(e.message) from None


def _labels(labels: Mapping[str, str] | None) -> dict[str, str] | None:
    if labels is None:
        return None
    try:
        limits.validate_user_labels(labels)
    except limits.InvalidGroundingRequest as e:
        raise GroundingLimitError(e.message) from None
    return dict(labels)
