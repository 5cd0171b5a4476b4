"""``AzureGroundedness``: the client and the grounding enricher (``provider="azure"``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import aiohttp
import orjson

from streamcite.core.errors import MalformedResponse, UpstreamError
from streamcite.core.events import GroundingEvent
from streamcite.core.grounding import GroundingResult, no_verdict
from streamcite.core.models import CitedAnswer
from streamcite.core.redact import Redactor
from streamcite.enrich._http import (
    HttpResponse,
    PooledClient,
    RetryPolicy,
    Secret,
    SessionHolder,
    parse_retry_after,
    send,
    with_retries,
)
from streamcite.enrich.azure.request import (
    API_VERSION,
    DetectRequest,
    build_detect_request,
    parse_detect_response,
)
from streamcite.enrich.base import EnrichContext
from streamcite.enrich.facts import answer_facts, fact_from
from streamcite.enrich.question import question_of
from streamcite.logs import get_logger

__all__ = ["AzureGroundedness", "raise_for_status"]

_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


def _azure_error(body: bytes) -> tuple[str | None, str]:
    """``(code, message)`` of Azure's ``{"error": {"code", "message"}}`` body."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None, body[:200].decode("utf-8", "replace")
    err = data.get("error") if isinstance(data, dict) else None
    if not isinstance(err, dict):
        return None, ""
    code = err.get("code")
    message = err.get("message")
    return (
        code if isinstance(code, str) else None,
        message[:500] if isinstance(message, str) else "",
    )


def raise_for_status(resp: HttpResponse) -> None:
    """Nothing for a 2xx; else the typed error of this status, with what to fix.

    429 and 5xx are retryable (``Retry-After`` honoured); 401/403 name the key and the
    resource; 404 the endpoint and api-version; 400 Azure's own message."""
    status = resp.status
    if 200 <= status < 300:
        return
    code, message = _azure_error(resp.body)
    said = f" {code}" if code else ""
    said += f": {message}" if message else ""
    if status in _RETRY_STATUSES:
        raise UpstreamError(
            f"Azure groundedness detection: HTTP {status}{said}",
            code="azure_rate_limited" if status == 429 else "azure_unavailable",
            status=status,
            retryable=True,
            retry_after=parse_retry_after(resp.header("Retry-After")),
        )
    if status in (401, 403):
        raise UpstreamError(
            f"Azure groundedness detection: HTTP {status}{said}. Fix: pass the Content "
            "Safety resource's key (Keys and Endpoint) and its endpoint; the resource must "
            "be in a region that offers groundedness detection",
            code="azure_unauthorized",
            status=status,
            retryable=False,
        )
    if status == 404:
        raise UpstreamError(
            f"Azure groundedness detection: HTTP 404{said}. Fix: the endpoint is "
            "https://<resource>.cognitiveservices.azure.com and the api-version one that "
            "offers text:detectGroundedness",
            code="azure_not_found",
            status=404,
            retryable=False,
        )
    raise UpstreamError(
        f"Azure groundedness detection: HTTP {status}{said}",
        code="azure_bad_request" if status == 400 else "azure_error",
        status=status,
        retryable=False,
    )


class AzureGroundedness(PooledClient):
    """Azure AI Content Safety groundedness detection, as a client and an enricher.

    >>> azure = AzureGroundedness("https://my-res.cognitiveservices.azure.com", api_key="...")
    >>> # stream_chat(request, base_url=..., after=[azure]): a ``grounding`` event with
    >>> # provider "azure" and one ``claim`` event per ungrounded segment.

    As an enricher (``kind = "grounding"``) it checks the answer's text against the
    answer's citations (``facts_from="citations"``), the Wikit sources (``"sources"``),
    both, or explicit ``facts``; the question (``task="QnA"``) is the request's last
    user message. The key is sent as ``Ocp-Apim-Subscription-Key`` and never appears in
    a repr, a log line or an error.
    """

    kind = "grounding"

    def __init__(
        self,
        endpoint: str,
        api_key: str,
        *,
        api_version: str = API_VERSION,
        domain: str = "Generic",
        task: str = "QnA",
        reasoning: bool = False,
        llm_resource: Mapping[str, str] | None = None,
        facts: Sequence[Any] | None = None,
        facts_from: str = "citations",
        request_timeout: float = 10.0,
        retries: int = 3,
        deadline: float = 20.0,
        timeout: float | None = None,
        session: aiohttp.ClientSession | None = None,
    ) -> None:
        if facts_from not in ("citations", "sources", "both"):
            raise ValueError("facts_from must be 'citations', 'sources' or 'both'")
        if retries < 0:
            raise ValueError("retries must be >= 0")
        # fail early on a bad setting
        build_detect_request(
            "", [], domain=domain, task=task, reasoning=reasoning, llm_resource=llm_resource
        )
        self.endpoint = endpoint.rstrip("/")
        self.api_version = api_version
        self.domain = domain
        self.task = task
        self.reasoning = reasoning
        self.llm_resource = dict(llm_resource) if llm_resource else None
        self.facts = list(facts) if facts is not None else None
        self.facts_from = facts_from
        self._key = Secret(api_key)
        self.retry = RetryPolicy(
            deadline=deadline,
            request_timeout=request_timeout,
            max_attempts=retries + 1,
            backoff_base=0.2,
            backoff_max=4.0,
            retry_after_cap=10.0,
        )
        self.timeout = float(timeout) if timeout is not None else deadline + 1.0
        self.needs: tuple[str, ...] = (
            ("sources",) if facts is None and facts_from in ("sources", "both") else ()
        )
        self._sessions = SessionHolder(session)
        self._log = get_logger("streamcite.enrich.azure")

    def __repr__(self) -> str:
        return f"AzureGroundedness(endpoint={self.endpoint!r}, key=Secret('***'))"

    @property
    def url(self) -> str:
        return (
            f"{self.endpoint}/contentsafety/text:detectGroundedness?api-version={self.api_version}"
        )

    def build_request(
        self, answer: CitedAnswer | str, facts: Iterable[Any], *, query: str | None = None
    ) -> DetectRequest:
        """The request (body, text sent, sources, warnings) for ``answer``. No I/O."""
        text = answer.text if isinstance(answer, CitedAnswer) else answer
        return build_detect_request(
            text,
            facts,
            domain=self.domain,
            task=self.task,
            query=query,
            reasoning=self.reasoning,
            llm_resource=self.llm_resource,
        )

    async def check(
        self, answer: CitedAnswer | str, facts: Iterable[Any], *, query: str | None = None
    ) -> GroundingResult:
        """Check ``answer`` against ``facts``; claims are its ungrounded segments."""
        req = self.build_request(answer, facts, query=query)
        data = await self._post(orjson.dumps(req.body))
        result = parse_detect_response(data, req)
        self._log.debug(
            "azure groundedness checked",
            segments=len(result.claims),
            support=result.support_score,
            sources=len(req.facts),
        )
        return result

    async def _post(self, payload: bytes) -> Any:
        redact = Redactor([self._key.get()])

        async def attempt(_budget: float) -> Any:
            headers = {
                "Ocp-Apim-Subscription-Key": self._key.get(),
                "Content-Type": "application/json",
                "Accept": "application/json",
            }
            async with self._sessions.session() as session:
                resp = await send(session, "POST", self.url, headers=headers, body=payload)
            try:
                raise_for_status(resp)
            except UpstreamError as e:
                e.message = redact.text(e.message)
                e.args = (e.message,)
                raise
            try:
                return orjson.loads(resp.body)
            except orjson.JSONDecodeError as e:
                raise MalformedResponse(f"groundedness detection: body is not JSON ({e})") from None

        return await with_retries(
            attempt, self.retry, what="Azure groundedness detection", log=self._log
        )

    async def enrich(self, ctx: EnrichContext) -> GroundingEvent:
        """Check the answer that just streamed; returns a ``grounding`` event."""
        warnings: list[str] = []
        items: list[Any] = []
        if self.facts is not None:
            items = list(self.facts)
        else:
            items, sources = await answer_facts(ctx, self.facts_from)
            if sources is None:
                warnings.append("no Wikit sources available: the sources step failed")
            else:
                items.extend(f for i, s in enumerate(sources) if (f := fact_from(s, i)) is not None)
        if not items:
            warnings.append("no grounding sources: the check was not sent")
            return GroundingEvent.from_result(no_verdict("azure", warnings))
        result = await self.check(ctx.answer, items, query=_question(ctx.request))
        result.warnings[:0] = warnings
        return GroundingEvent.from_result(result)


def _question(request: Mapping[str, Any]) -> str:
    """The question of the request of any API (``messages``, ``input``, ``contents``)."""
    return question_of(request)
