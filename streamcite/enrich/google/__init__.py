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

Modules: ``request`` (building and limits), ``response`` (parsing, offsets),
``errors`` (the typed errors and the status mapping), ``client`` (the client and
enricher); the fact policy is :mod:`streamcite.enrich.facts`.
"""

from streamcite.core.markers import strip_markers
from streamcite.enrich.facts import PreparedFacts, prepare_facts
from streamcite.enrich.google.client import FactsFrom, GoogleGrounding
from streamcite.enrich.google.errors import (
    CHECK_PERMISSION,
    GoogleAuthError,
    GoogleRequestError,
    GroundingInputError,
    GroundingLimitError,
)
from streamcite.enrich.google.request import DEFAULT_ENDPOINT, DEFAULT_GROUNDING_CONFIG
from streamcite.enrich.google.response import TextOffsets, parse_check_response

__all__ = [
    "CHECK_PERMISSION",
    "DEFAULT_ENDPOINT",
    "DEFAULT_GROUNDING_CONFIG",
    "FactsFrom",
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
