"""``GoogleGrounding``: the client of Google's grounding check, and an enricher.

It builds the request (:mod:`.request`), sends it under the retry policy of
:mod:`streamcite.enrich._http` (an expired ADC token is renewed once), maps error
statuses (:mod:`.errors`) and parses the response (:mod:`.response`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import aiohttp
import orjson

from streamcite.core.errors import MalformedResponse
from streamcite.core.events import GroundingEvent
from streamcite.core.grounding import GroundingResult, no_verdict
from streamcite.core.models import CitedAnswer
from streamcite.enrich._auth import (
    CLOUD_PLATFORM_SCOPE,
    ApplicationDefaultToken,
    TokenProvider,
    TokenSource,
    make_token_source,
)
from streamcite.enrich._http import PooledClient, RetryPolicy, SessionHolder, send, with_retries
from streamcite.enrich.base import EnrichContext
from streamcite.enrich.facts import PreparedFacts, answer_facts, fact_from
from streamcite.enrich.google.errors import GoogleAuthError, GroundingInputError, raise_for_status
from streamcite.enrich.google.request import (
    DEFAULT_ENDPOINT,
    DEFAULT_GROUNDING_CONFIG,
    CheckRequest,
    build_check_request,
    check_config_name,
)
from streamcite.enrich.google.request import citation_threshold as _threshold
from streamcite.enrich.google.request import user_labels as _labels
from streamcite.enrich.google.response import parse_check_response
from streamcite.logs import get_logger

__all__ = ["FactsFrom", "GoogleGrounding"]

FactsFrom = Literal["citations", "sources", "both"]


class GoogleGrounding(PooledClient):
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
        check_config_name(grounding_config)
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
        req = self._request(answer, facts, citation_threshold, claim_level_scores, user_labels)
        return req.body, req.sent, req.char_map, req.prepared

    def _request(
        self,
        answer: CitedAnswer | str,
        facts: Iterable[Any],
        threshold: float | str | None,
        claim_level_scores: bool | None,
        labels: Mapping[str, str] | None,
    ) -> CheckRequest:
        return build_check_request(
            answer,
            facts,
            strip=self.strip_markers,
            threshold=self.citation_threshold if threshold is None else threshold,
            claim_level_scores=(
                self.claim_level_scores if claim_level_scores is None else claim_level_scores
            ),
            labels=self.user_labels if labels is None else labels,
        )

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
        req = self._request(answer, facts, citation_threshold, claim_level_scores, user_labels)
        log = self._log.bind(facts=len(req.prepared.facts), answer_chars=len(req.sent))
        data = await self._post(orjson.dumps(req.body), log)
        result = parse_check_response(
            data,
            raw_answer=answer.text if isinstance(answer, CitedAnswer) else answer,
            sent_answer=req.sent if req.char_map is not None else None,
            char_map=req.char_map,
            facts=req.prepared.facts,
            warnings=req.prepared.warnings,
        )
        log.debug("grounding checked", claims=len(result.claims), support=result.support_score)
        return result

    async def _post(self, payload: bytes, log: Any) -> Any:
        """The JSON body of a successful check, retried per ``self.retry``."""

        async def attempt(_budget: float) -> Any:
            headers = await self._headers()
            async with self._sessions.session() as session:
                resp = await send(session, "POST", self.url, headers=headers, body=payload)
            raise_for_status(resp, self.grounding_config)
            try:
                return orjson.loads(resp.body)
            except orjson.JSONDecodeError as e:
                raise MalformedResponse(f"grounding check: body is not JSON ({e})") from e

        try:
            return await with_retries(attempt, self.retry, what="Google grounding check", log=log)
        except GoogleAuthError as e:
            # An expired ADC token is renewed once; a static token cannot be.
            if e.status != 401 or not isinstance(self._tokens, ApplicationDefaultToken):
                raise
            log.info("token rejected, refreshing once")
            self._tokens.invalidate()
            return await with_retries(attempt, self.retry, what="Google grounding check", log=log)

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
        items, sources = await answer_facts(ctx, self.facts_from)
        warnings: list[str] = []
        if sources is not None:
            items.extend(f for i, s in enumerate(sources) if (f := fact_from(s, i)) is not None)
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
        if not items:  # nothing quoted to check against: no verdict (not a fault)
            return GroundingEvent.from_result(no_verdict("google", warnings))
        result = await self.check(ctx.answer, items)
        result.warnings[:0] = warnings
        return GroundingEvent.from_result(result)

    # -- errors -------------------------------------------------------------
