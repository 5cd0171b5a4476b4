"""Azure AI Content Safety groundedness detection as a grounding enricher.

``POST {endpoint}/contentsafety/text:detectGroundedness?api-version=2024-09-15-preview``
with ``Ocp-Apim-Subscription-Key``. Limits (text 7,500 characters, grounding sources
55,000 in all, query 7,500), the request and the response mapping are in
:mod:`streamcite.enrich.azure.request`; the client, its retries (429/5xx, Retry-After)
and error mapping in :mod:`streamcite.enrich.azure.client`. Each ungrounded segment
becomes a claim (``checker="azure"``, ``supported`` False) at its offsets in the raw
answer.
"""

from streamcite.enrich.azure.client import AzureGroundedness, raise_for_status
from streamcite.enrich.azure.request import (
    API_VERSION,
    MAX_QUERY_CHARS,
    MAX_SOURCES_CHARS,
    MAX_TEXT_CHARS,
    DetectRequest,
    build_detect_request,
    parse_detect_response,
)

__all__ = [
    "API_VERSION",
    "MAX_QUERY_CHARS",
    "MAX_SOURCES_CHARS",
    "MAX_TEXT_CHARS",
    "AzureGroundedness",
    "DetectRequest",
    "build_detect_request",
    "parse_detect_response",
    "raise_for_status",
]
