"""Wikit Semantics quoted sources, fetched after the stream (v2, and the deprecated v1).

v2: ``GET {base}/semantics/apps/{app}/query-execution-sources/{query_id}/get-quoted-sources``
with ``X-Wikit-Organization-Id`` and, for private apps only, ``Wikit-Semantics-API-Key``.
The sources of an answer appear a moment after it: 404 means "not there yet" and is
retried with backoff until a deadline (10 s by default); 429/500/502/503/504 are
retried too (``Retry-After`` honoured); 401/403 stop at once with
:class:`WikitAuthError`, which says what to check.

v1 (deprecated): ``POST {base}/semantics/apps/{app}/query-executions/{id}/citations``
with a Bearer token, parsed into :class:`WikitCitationV1`.

Helpers for Wikit's documented best practices: :func:`by_document` (the API may
return one document several times), :func:`sources_without_url`, :func:`match_refs`
(``quoted_as`` ↔ the answer's ``[n]``), :func:`page_label` (pages are 0-based in
the API, 1-based for people).

Modules: ``client`` (:class:`WikitSources`), ``errors`` (typed errors, status
mapping), ``v1`` (:class:`WikitCitationV1`), ``practices`` (the helpers above).
"""

from streamcite.enrich.wikit.client import (
    DEFAULT_BASE_URL,
    LOCAL_APP_ID,
    LOCAL_ORGANIZATION_ID,
    WikitSources,
)
from streamcite.enrich.wikit.errors import SourcesNotReady, WikitAuthError
from streamcite.enrich.wikit.practices import (
    DocumentGroup,
    RefMatch,
    by_document,
    match_refs,
    page_label,
    sources_without_url,
)
from streamcite.enrich.wikit.v1 import WikitCitationV1

__all__ = [
    "DEFAULT_BASE_URL",
    "LOCAL_APP_ID",
    "LOCAL_ORGANIZATION_ID",
    "DocumentGroup",
    "RefMatch",
    "SourcesNotReady",
    "WikitAuthError",
    "WikitCitationV1",
    "WikitSources",
    "by_document",
    "match_refs",
    "page_label",
    "sources_without_url",
]
