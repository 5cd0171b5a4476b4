"""Azure AI Content Safety's groundedness detection, served by the offline checker.

``POST /contentsafety/text:detectGroundedness?api-version=…`` with the request and
response of :mod:`streamcite.enrich.azure.request` (the same documented limits: text
and query at most 7,500 characters, grounding sources at most 55,000 in all;
``reasoning: true`` is refused: it needs an Azure OpenAI deployment). The key header
``Ocp-Apim-Subscription-Key`` must be present (any value: a local backend has no
accounts). Each sentence the offline checker finds unsupported is one
``ungroundedDetails`` entry with its ``offset`` and ``length`` in UTF-8 bytes, UTF-16
units and code points; ``ungroundedPercentage`` is their share of the text's claims
(characters). Every error under ``/contentsafety/`` is Azure's JSON shape
``{"error": {"code", "message"}}``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson
from aiohttp import web

from streamcite.local.faults import FaultSpecError
from streamcite.local.replies import json_response, retry_headers
from streamcite.local.request_guards import fault_status, faults_of, read_body
from streamcite.local.state import STATE

__all__ = [
    "AZURE_PATH",
    "AZURE_VERSIONS",
    "add_azure_routes",
    "azure_error",
    "azure_error_middleware",
    "detect_groundedness",
]

AZURE_PATH = "/contentsafety/text:detectGroundedness"
AZURE_VERSIONS = frozenset({"2024-02-15-preview", "2024-09-15-preview"})
"""api-versions that offer ``text:detectGroundedness``."""
_MAX_TEXT = 7_500
_MAX_SOURCES = 55_000

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def azure_error(status: int, code: str, message: str, headers: Any = None) -> web.Response:
    """Azure's JSON error body ``{"error": {"code", "message"}}`` with ``status``."""
    body = {"error": {"code": code, "message": message}}
    return web.Response(
        body=orjson.dumps(body), status=status, content_type="application/json", headers=headers
    )


def add_azure_routes(app: web.Application) -> None:
    """Serve the groundedness detection endpoint (and Azure-shaped errors under it)."""
    app.router.add_post(AZURE_PATH, detect_groundedness)
    app.middlewares.append(azure_error_middleware)


@web.middleware
async def azure_error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    if not request.path.startswith("/contentsafety/"):
        return await handler(request)
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return azure_error(exc.status, str(exc.status), exc.reason or "error")


class _Invalid(ValueError):
    pass


def _parse(body: Any) -> tuple[str, list[str]]:
    if not isinstance(body, Mapping):
        raise _Invalid("The request body must be a JSON object.")
    keys = {k.lower(): v for k, v in body.items() if isinstance(k, str)}
    text = keys.get("text")
    if not isinstance(text, str) or not text:
        raise _Invalid("Text is required and must be a non-empty string.")
    if len(text) > _MAX_TEXT:
        raise _Invalid(f"Text length exceeds the limit of {_MAX_TEXT} characters.")
    sources = keys.get("groundingsources")
    if not isinstance(sources, list) or not sources or not all(isinstance(s, str) for s in sources):
        raise _Invalid("GroundingSources is required and must be an array of strings.")
    if sum(map(len, sources)) > _MAX_SOURCES:
        raise _Invalid(f"GroundingSources exceed the limit of {_MAX_SOURCES} characters.")
    # Blank sources ground nothing; dropped here, a million of them (0 characters, under
    # the limit) no longer become a million facts for the checker to sort out.
    sources = [s for s in sources if s.strip()]
    if not sources:
        raise _Invalid("GroundingSources must hold at least one non-blank string.")
    domain = keys.get("domain", "Generic")
    if not isinstance(domain, str) or domain.lower() not in ("generic", "medical"):
        raise _Invalid("Domain must be Generic or Medical.")
    task = keys.get("task", "Summarization")
    if not isinstance(task, str) or task.lower() not in ("qna", "summarization"):
        raise _Invalid("Task must be QnA or Summarization.")
    qna = keys.get("qna")
    if qna is not None:
        query = qna.get("query") if isinstance(qna, Mapping) else None
        if not isinstance(query, str) or len(query) > _MAX_TEXT:
            raise _Invalid(f"Qna.Query must be a string of at most {_MAX_TEXT} characters.")
    if keys.get("reasoning") is True:
        raise _Invalid(
            "Reasoning needs an Azure OpenAI resource (llmResource): not offered locally."
        )
    return text, sources


def _units(text: str, a: int, b: int) -> tuple[dict[str, int], dict[str, int]]:
    def at(i: int) -> dict[str, int]:
        head = text[:i]
        return {
            "utf8": len(head.encode("utf-8")),
            "utf16": len(head.encode("utf-16-le")) // 2,
            "codePoint": i,
        }

    start, end = at(a), at(b)
    return start, {k: end[k] - start[k] for k in start}


async def detect_groundedness(request: web.Request) -> web.Response:
    """``POST /contentsafety/text:detectGroundedness``: the offline checker's verdict."""
    try:
        spec = faults_of(request)
    except FaultSpecError as exc:
        return azure_error(fault_status(exc), "InvalidRequest", f"fault spec: {exc}")
    if spec.status is not None:
        return azure_error(
            spec.status,
            str(spec.status),
            f"injected fault: HTTP {spec.status}",
            retry_headers(spec),
        )
    if request.query.get("api-version") not in AZURE_VERSIONS:
        return azure_error(404, "404", "Resource not found (unknown or missing api-version).")
    if not request.headers.get("Ocp-Apim-Subscription-Key"):
        return azure_error(
            401,
            "401",
            "Access denied due to invalid subscription key or wrong API endpoint.",
        )
    raw = await read_body(request, request.app[STATE].config.max_check_body_bytes)
    if raw is None:
        return azure_error(413, "RequestEntityTooLarge", "The request body is too large.")
    try:
        text, sources = _parse(orjson.loads(raw))
    except orjson.JSONDecodeError:
        return azure_error(400, "InvalidRequestBody", "The request body is not valid JSON.")
    except _Invalid as exc:
        return azure_error(400, "InvalidRequestBody", str(exc))
    from streamcite.grounding.checker import LocalGrounding  # the checker loads on first use

    result = await LocalGrounding().check(text, sources)
    details: list[dict[str, Any]] = []
    checked = ungrounded = 0
    for c in result.claims:
        if not c.grounding_check_required or c.start is None or c.end is None:
            continue
        checked += c.end - c.start
        if c.citation_indices:
            continue
        ungrounded += c.end - c.start
        offset, length = _units(text, c.start, c.end)
        details.append({"text": c.claim_text, "offset": offset, "length": length})
    return json_response(
        {
            "ungroundedDetected": bool(details),
            "ungroundedPercentage": round(ungrounded / checked, 4) if checked else 0.0,
            "ungroundedDetails": details,
        }
    )
